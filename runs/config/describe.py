"""`describe_config`: the whole config as plain JSON, for the API (`GET /api/config`), the desk and
any tool that wants to know what a company's repo declares.

Workflows (title, trigger, input JSON Schema, the operations and built-ins they use, source),
connectors (info with the logo as a data URL, operations with their contracts, effects,
idempotency, timeouts, summaries and phrases, resource types with their field options, the
environment variables their driver needs, by name and description), collections, the declared
resources and their problems, and the policy's kind and version. Never a credential, a stored
value or a secret's value: a write-only field shows the secret's name only.
"""
from __future__ import annotations

import base64
import inspect
from pathlib import Path
from typing import Any

from connectors.errors import ConfigError
from connectors.operations import Connector, Operation
from runs.config.datafiles import read_datafiles
from runs.config.outline import outline_as_json, outline_of
from runs.config.resolution import ResolvedConfig
from runs.config.workflows import Schedule, WorkflowDefinition


def _operation(op: Operation) -> dict[str, Any]:
    return {
        "id": op.id, "effect": op.effect, "idempotent": op.idempotent, "description": op.description,
        "timeout": op.timeout, "idempotency_key": op.idempotency_key, "reconcile": op.reconcile,
        "summary": op.summary, "phrases": {"given": op.phrases.given, "expect": op.phrases.expect},
        # A money operation's amount field, its currency (a code, or the field holding one) and ceiling.
        "money": None if op.money is None else {"amount": op.money.amount, "currency": op.money.currency,
                                                "ceiling": op.money.ceiling},
        "retry": None if op.retry is None else {"attempts": op.retry.attempts, "initial": op.retry.initial,
                                                 "factor": op.retry.factor, "max_delay": op.retry.max_delay,
                                                 "jitter": op.retry.jitter},
        "input": op.input.model_json_schema(mode="validation"),
        "output": op.output.model_json_schema(mode="serialization"),
    }


def logo_data_url(connector: Connector) -> str | None:
    """The connector's SVG logo as a data URL (None without one): what the desk and the API show."""
    svg = connector.info.logo
    return f"data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}" if svg else None


def _connector(connector: Connector) -> dict[str, Any]:
    info = connector.info
    logo = logo_data_url(connector)
    environment = []
    if connector.environment is not None:
        for name, field in connector.environment.model_fields.items():
            environment.append({"name": name, "description": field.description or "",
                                "required": field.is_required()})
    types = []
    for type_ in connector.types.values():
        types.append({"type": type_.key, "title": type_.title, "identity": list(type_.identity), "host": type_.host,
                      "fields": {name: {k: v for k, v in vars(options).items() if v not in (False, None, ())}
                                 for name, options in type_.fields.items()},
                      "schema": type_.schema.model_json_schema(mode="validation")})
    return {"vendor": connector.vendor, "title": info.title or connector.vendor, "homepage": info.homepage,
            "logo": logo, "operations": [_operation(op) for op in connector.operations.values()],
            "types": types, "environment": environment}


def _workflow(wf: WorkflowDefinition, root: Path | None) -> dict[str, Any]:
    try:
        source = inspect.getsource(wf.run)
    except (OSError, TypeError):
        source = None
    trigger: Any = wf.trigger
    if isinstance(wf.trigger, Schedule):
        trigger = {"schedule": wf.trigger.cron, "every": wf.trigger.every, "timezone": wf.trigger.timezone,
                   "overlap": wf.trigger.overlap}
    return {"name": wf.name, "title": wf.title, "app": wf.app, "builtin": wf.builtin, "trigger": trigger,
            "input": wf.input.model_json_schema(mode="validation"), "uses": list(wf.ops),
            "builtins": list(wf.builtins), "source": source, "outline": outline_as_json(outline_of(wf), root),
            "approval_sla_seconds": None if wf.approval_sla is None else int(wf.approval_sla.total_seconds()),
            "keep_seconds": None if wf.keep is None else int(wf.keep.total_seconds())}


def describe_config(config: ResolvedConfig) -> dict[str, Any]:
    declared: dict[str, Any] = {"files": [], "resources": [], "problems": []}
    if config.root is not None:
        try:
            declared = read_datafiles(config.root, config.connectors).plain()
        except ConfigError as err:
            declared["problems"] = [{"message": str(p)} for p in err.problems]
    policy = config.policy
    return {
        "app": config.app_name,
        "version": config.version,
        "workflows": [_workflow(wf, config.root) for wf in sorted(config.workflows.values(), key=lambda w: w.name)],
        "connectors": [_connector(c) for c in config.connectors if isinstance(c, Connector)],
        "collections": sorted(getattr(config, "collections", {}) or {}),
        "resources": declared,
        "policy": {"kind": type(policy).__name__, "version": getattr(policy, "version", None)},
    }
