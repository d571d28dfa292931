"""Comparing two runs from the desk: the run page's "Compare with…" and the runs list's action lead
to one page, which reads the comparison (`runs.comparison`) and only lays it out."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode

from connectors.errors import InvalidInput, SanomaError
from runs.admin.base import me, refusal
from runs.admin.common import as_json
from runs.comparison import Comparison, StepPair, compare_runs
from runs.display import duration, moment
from runs.models import Run
from runs.selectors import comparable_runs
from runs.timing import StepTime

CHOICES = 20  # recent runs of the same workflow offered to compare with


def compare_url(a: str, b: str) -> str:
    return reverse("admin:runs_run_compare", args=[quote(a)]) + "?" + urlencode({"with": b})


def _shown(value: Any) -> str:
    return "" if value is None or value == [] or value == "" else as_json(value)


def _fact(value: Any) -> str:
    """A run's fact as a person reads it: a word as itself (refund, not "refund"), the rest as JSON."""
    return value if isinstance(value, str) and value else (_shown(value) or "-")


def _until(step: StepTime) -> Any:
    """A sleep's end (its input keeps epoch milliseconds) as a moment, beside the input."""
    until = (step.input or {}).get("until") if step.kind == "sleep" else None
    return moment(until, ago=False) if isinstance(until, int | float) else ""


def _cell(step: StepTime | None, differs: tuple[str, ...]) -> dict[str, Any] | None:
    if step is None:
        return None
    error = f"{step.error.get('code') or 'error'}: {step.error.get('message', '')}" if step.error else ""
    fields = [
        ("outcome", step.outcome, False), ("verdict", step.verdict, False),
        ("approvers", "; ".join(step.approvers), False),
        ("attempts", step.attempts if step.attempts > 1 else "", False),
        ("input", _shown(step.input), True), ("until", _until(step), False), ("output", _shown(step.output), True),
        ("error", error, False),
    ]
    return {
        "kind": step.kind, "name": step.name, "effect": step.effect,
        "took": duration(step.duration_ms) if step.duration_ms is not None else "not over",
        "fields": [{"name": name, "value": value, "json": is_json, "differs": name in differs}
                   for name, value, is_json in fields if value != "" or name in differs],
    }


def _row(pair: StepPair) -> dict[str, Any]:
    return {"number": pair.number, "differs": ", ".join(pair.differs), "a": _cell(pair.a, pair.differs),
            "b": _cell(pair.b, pair.differs)}


def layout(comparison: Comparison) -> dict[str, Any]:
    took_a, took_b = comparison.took
    return {
        "a": comparison.a, "b": comparison.b, "differences": comparison.differences,
        "facts": [{"name": f.name, "a": _fact(f.a), "b": _fact(f.b), "differs": f.differs}
                  for f in comparison.facts],
        "took": (duration(took_a) if took_a is not None else "not over",
                 duration(took_b) if took_b is not None else "not over"),
        "rows": [_row(pair) for pair in comparison.steps],
    }


if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

    from runs.admin.base import HiddenOrMissingMixin

    class _Base(HiddenOrMissingMixin, ModelAdmin[Run]): ...
else:
    _Base = object


class CompareRunsMixin(_Base):
    """The comparison page (`<run>/compare/?with=<other>`) and the runs list's action to reach it."""

    def compare_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        other = request.GET.get("with", "").strip()
        context: dict[str, Any] = {"other": other, "problem": "", "comparison": None}
        status = 200
        if other:
            try:
                context["comparison"] = layout(compare_runs(a_id=run.id, b_id=other, viewer=me(request)))
            except InvalidInput as err:
                context["problem"], status = refusal(err), 400
            except SanomaError as err:
                context["problem"], status = refusal(err), 404
        choices = comparable_runs(run, viewer=me(request), limit=CHOICES)
        title = f"Compare {run.id} with {other}" if context["comparison"] else f"Compare {run.id} with another run"
        return TemplateResponse(request, "admin/runs/run/compare.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "original": run, "title": title,
            "choices": list(choices), **context,
        }, status=status)

    def compare_selected(self, request: HttpRequest, queryset: Any) -> HttpResponse | None:
        """Two runs ticked in the list: their comparison, the older on the left."""
        runs = list(queryset.order_by("created_at", "id")[:3])
        if len(runs) != 2:
            self.message_user(request, f"Tick two runs to compare (you ticked {queryset.count()})", messages.ERROR)
            return None
        return redirect(compare_url(runs[0].id, runs[1].id))
