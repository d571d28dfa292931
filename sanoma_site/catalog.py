"""The desk's catalog: a page for every connector and every workflow of the config.

A connector's page: its logo, title and homepage, every operation (effect, idempotency, timeout,
description, input and output fields as tables, scenario phrases, summary), its resource types,
the status of the credentials its driver needs, and the workflows and scenarios using each
operation. A workflow's page: its title, trigger and next fires, its input fields, the
operations it uses with their effects, its source, its recent runs, the scenarios that run it,
and who may start it. Both read the resolved config only; nothing here writes.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from pydantic import BaseModel

from changes.credentials.selectors import credential_statuses
from connectors.money import format_money
from connectors.operations import Connector, Operation
from runs.approvals.selectors import starters
from runs.config.describe import logo_data_url
from runs.config.outline import outline_as_json, outline_of
from runs.config.paths import root_path
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.config.workflows import Schedule, WorkflowDefinition
from runs.display import moment
from runs.models import Run
from runs.selectors import RunFilter, matching_runs
from wakeups.schedules import next_fires, schedule_of

RECENT_RUNS = 20


def fields_of(model: type[BaseModel]) -> list[dict[str, Any]]:
    """A pydantic model's fields as rows a person reads: name, type, required or its default, description."""
    schema = model.model_json_schema(mode="validation")
    required = set(schema.get("required", ()))
    rows = []
    for name, spec in schema.get("properties", {}).items():
        kind = spec.get("type") or " | ".join(
            str(o.get("type") or o.get("$ref", "").rsplit("/", 1)[-1]) for o in spec.get("anyOf", [])) or "object"
        if spec.get("format"):
            kind = f"{kind} ({spec['format']})"
        limits = [f"{k} {spec[k]}" for k in ("minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength")
                  if k in spec]
        rows.append({"name": name, "type": kind, "required": name in required,
                     "default": "" if name in required or "default" not in spec else repr(spec["default"]),
                     "limits": ", ".join(limits), "description": spec.get("description", "")})
    return rows


def _scenario_uses(config: ResolvedConfig) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Which scenarios mention each operation, and which run each workflow: `file:line name`."""
    # Here, not at the top: the desk's admin site (imported by every process Django starts) imports
    # this module, and the scenarios' reader brings behave and its parsers.
    from features.library.loader import load_scenarios

    by_op: dict[str, list[str]] = {}
    by_workflow: dict[str, list[str]] = {}
    root = Path(config.root) if config.root else None
    for scenario in load_scenarios(config).scenarios:
        # From the config root (scenarios/refund.feature:12), as the sandbox page and the API say it.
        where = f"{root_path(scenario.location, root)}:{scenario.line} {scenario.name}"
        by_workflow.setdefault(scenario.workflow, []).append(where)
        for op_id in {step.op for step in scenario.steps if step.op}:
            by_op.setdefault(op_id, []).append(where)
    return by_op, by_workflow


def _operation(op: Operation, used_by: Mapping[str, list[str]], scenarios: Mapping[str, list[str]]) -> dict[str, Any]:
    return {
        "id": op.id, "effect": op.effect, "idempotent": op.idempotent, "description": op.description,
        "timeout": op.timeout, "retry": op.retry, "summary": op.summary or "", "in_doubt": op.idempotency_key,
        "given": op.phrases.given or "", "expect": op.phrases.expect or "", "money": _money(op),
        "input": fields_of(op.input), "output": fields_of(op.output),
        "workflows": used_by.get(op.id, []), "scenarios": scenarios.get(op.id, []),
    }


# Built-in vendors, named for what they are: sanoma's own operations (resources and people, its
# hosts, changes, wake-ups) are declared by several connectors under one vendor, shown as one.
BUILT_IN_TITLES = {"sanoma": "sanoma's own operations (built in)"}


def by_vendor(config: ResolvedConfig) -> dict[str, list[Connector]]:
    """The connectors of the config by vendor: one entry per vendor, in the config's order."""
    vendors: dict[str, list[Connector]] = {}
    for connector in config.connectors:
        if isinstance(connector, Connector):
            vendors.setdefault(connector.vendor, []).append(connector)
    return vendors


def vendor_title(connectors: list[Connector]) -> str:
    vendor = connectors[0].vendor
    return next((c.info.title for c in connectors if c.info.title), None) or BUILT_IN_TITLES.get(vendor, vendor)


def _money(op: Operation) -> str:
    """A money operation's declaration as read: `amount_cents (minor units of EUR), at most 10,000.00 EUR`."""
    if op.money is None:
        return ""
    rule = op.money
    fixed = rule.fixed_currency
    currency = f" of {fixed}" if fixed else (f" of the currency in {rule.currency}" if rule.currency else "")
    said = f"{rule.amount} (minor units{currency})"
    return said + (f", at most {format_money(rule.ceiling, fixed)} a call" if rule.ceiling is not None else "")


def connector_page(request: HttpRequest, vendor: str, *, context: dict[str, Any]) -> HttpResponse:
    config = get_config()
    connectors = by_vendor(config).get(vendor)
    if not connectors:
        raise Http404(f"No connector {vendor}")
    connector = connectors[0]
    used_by: dict[str, list[str]] = {}
    for wf in config.workflows.values():
        for op_id in wf.ops:
            used_by.setdefault(op_id, []).append(wf.name)
    by_op, _ = _scenario_uses(config)
    return TemplateResponse(request, "admin/catalog/connector.html", {
        **context, "title": vendor_title(connectors), "connector": connector,
        "logo": logo_data_url(connector) or "",
        "operations": [_operation(op, used_by, by_op) for c in connectors for op in c.operations.values()],
        "types": [{"key": t.key, "title": t.title, "identity": ", ".join(t.identity), "host": t.host}
                  for c in connectors for t in c.types.values()],
        "credentials": credential_statuses(among=connectors),
    })


def connectors_page(request: HttpRequest, *, context: dict[str, Any]) -> HttpResponse:
    config = get_config()
    rows = [{"vendor": vendor, "title": vendor_title(group), "logo": logo_data_url(group[0]) or "",
             "operations": sum(len(c.operations) for c in group), "homepage": group[0].info.homepage or ""}
            for vendor, group in by_vendor(config).items()]
    return TemplateResponse(request, "admin/catalog/connectors.html", {**context, "title": "Connectors",
                                                                      "connectors": rows})


def _trigger(wf: WorkflowDefinition) -> tuple[str, list[Any]]:
    if isinstance(wf.trigger, Schedule):
        schedule = schedule_of(wf)
        said = (f"every {schedule.every:g} s" if schedule.every else f"cron {schedule.cron} ({schedule.timezone})")
        return said, [moment(f) for f in next_fires(schedule, timezone.now(), 3)]
    return "started by hand (the admin, the API, manage.py start)", []


def _node_text(node: dict[str, Any]) -> str:
    kind = node["kind"]
    if kind == "op":
        return node.get("op", "")
    if kind == "approval":
        return f"approval “{node['title']}”" if node.get("title") else "approval"
    if kind == "message":
        return f"wait for a message on “{node['topic']}”" if node.get("topic") else "wait for a message"
    if kind == "child":
        action = "start" if node.get("action") == "start" else "wait for"
        return f"{action} a child run" + (f" of {node['workflow']}" if node.get("workflow") else "")
    if kind == "helper":
        return f"{node['label']}, defined at line {node['defined_line']}"
    return node.get("label") or kind


# How a section of the outline may end, said the way a reader of the page says it.
_ENDS = {"return": "returns", "raise": "raises", "break": "breaks out of the loop",
         "continue": "goes on with the loop's next turn"}


def outline_lines(nodes: list[dict[str, Any]], depth: int = 0) -> list[dict[str, Any]]:
    """The outline as indented lines: each node, then its sections' nodes one level in (a helper's
    calls under the line that calls it), and how a section ends when it ends early."""
    lines: list[dict[str, Any]] = []
    for node in nodes:
        lines.append({"depth": depth, "kind": node["kind"], "text": _node_text(node), "line": node["span"]["line"]})
        sections = ([node["body"]] if node.get("body") else []) + node.get("branches", []) + node.get("cases", []) \
            + node.get("handlers", []) + ([node["orelse"]] if node.get("orelse") else [])
        for section in sections:
            label = section.get("label") or ("the way past" if section.get("past") else "")
            if label:
                lines.append({"depth": depth + 1, "kind": "section", "text": label, "line": None})
            inner = depth + 2 if label else depth + 1
            lines += outline_lines(section.get("nodes", []), inner)
            if section.get("ends"):
                lines.append({"depth": inner, "kind": "end", "text": _ENDS.get(section["ends"], section["ends"]),
                              "line": None})
    return lines


def _source(wf: WorkflowDefinition, file: str | None, helpers: tuple[tuple[str, int, int], ...]) -> str:
    """run's source, then the helpers it calls (the outline draws their calls, at their lines)."""
    try:
        source = inspect.getsource(wf.run)
    except (OSError, TypeError):
        return ""
    if helpers and file:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return source
        for _, first, last in helpers:
            source += "\n\n" + "\n".join(lines[first - 1:last]) + "\n"
    return source


def workflow_page(request: HttpRequest, name: str, *, context: dict[str, Any]) -> HttpResponse:
    config = get_config()
    wf = config.workflows.get(name)
    if wf is None:
        raise Http404(f"No workflow {name}")
    outline = outline_of(wf)
    source = _source(wf, outline.file, outline.sites.helpers)
    trigger, fires = _trigger(wf)
    _, by_workflow = _scenario_uses(config)
    runs: list[Run] = list(matching_runs(viewer=request.user.get_username(),
                                         where=RunFilter(workflow=name))[:RECENT_RUNS])
    return TemplateResponse(request, "admin/catalog/workflow.html", {
        **context, "title": wf.title or wf.name, "workflow": wf, "trigger": trigger, "fires": fires,
        "input": fields_of(wf.input), "source": source, "file": wf.file or "",
        "outline": outline_lines(outline_as_json(outline)["nodes"]), "outline_problems": [
            str(problem) for problem in outline.problems],
        "operations": [{"id": op_id, "effect": getattr(config.ops.get(op_id), "effect", "?"),
                        "vendor": op_id.split(".", 1)[0]} for op_id in wf.ops],
        "builtins": list(wf.builtins), "runs": [{"run": r, "started": moment(r.created_at)} for r in runs],
        "scenarios": by_workflow.get(name, []), "starters": starters(name),
        "approval_sla": duration_words(wf.approval_sla), "keep": duration_words(wf.keep),
    })


def duration_words(duration: timedelta | None) -> str:
    """A declared duration as people say it: `4 hours`, `2 days`, `90 minutes`; empty for none."""
    if duration is None:
        return ""
    seconds = int(duration.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def workflows_page(request: HttpRequest, *, context: dict[str, Any]) -> HttpResponse:
    config = get_config()
    rows = [{"name": wf.name, "title": wf.title, "trigger": _trigger(wf)[0], "app": wf.app or "",
             "operations": len(wf.ops)} for wf in sorted(config.workflows.values(), key=lambda w: w.name)]
    return TemplateResponse(request, "admin/catalog/workflows.html", {**context, "title": "Workflows",
                                                                     "workflows": rows})
