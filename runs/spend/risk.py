"""The money at risk in a held call, kept in its approval's details (`details.money`) and shown
by the inbox, the approval's page and the run's page:

    {"cents": 150000, "currency": "EUR", "shown": "1,500.00 EUR",
     "spent": {"cents": 90000, "shown": "900.00 EUR", "figure": "today.operation",
               "said": "spent today through shop.order.refund"},
     "budget": {"cents": 100000, "shown": "1,000.00 EUR"}}

`spent` is the figure of `context.spent` the rule that held the call reads (its first
`context.spent.<period>.<scope>`; `today.operation` when it has a budget but reads none; the sum of
the operations it reads when that first figure is `context.spent.<period>.operations["<op>"]`,
`figure` then `today.operations` and `operations` their ids), left out
when the rule reads none and names no budget (a hold about something else, such as "every refund
needs finance"); `budget` is the rule's `@budget("<minor units>")` annotation, when it has one.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.money import format_money
from runs.spend.sums import PERIODS, SCOPES

DEFAULT_FIGURE = ("today", "operation")
_PERIOD_SAID = {"today": "today", "month": "this month"}


def spent_reads(node: Any) -> list[tuple[str, ...]]:
    """Every `context.spent.<...>` path a Cedar policy's JSON form reads, outermost first."""
    found: list[tuple[str, ...]] = []
    if isinstance(node, Mapping):
        path = _path(node)
        if path is not None and len(path) >= 2 and path[0] == "spent":
            return [path[1:]]
        for value in node.values():
            found += spent_reads(value)
    elif isinstance(node, list):
        for item in node:
            found += spent_reads(item)
    return found


def _path(node: Mapping[str, Any]) -> tuple[str, ...] | None:
    """`context.a.b.c` as ("a", "b", "c"); None for anything else."""
    access = node.get(".")
    if not isinstance(access, Mapping) or not isinstance(access.get("attr"), str):
        return None
    left = access.get("left")
    if left == {"Var": "context"}:
        return (access["attr"],)
    inner = _path(left) if isinstance(left, Mapping) else None
    return None if inner is None else (*inner, access["attr"])


def figure_of(path: tuple[str, ...]) -> tuple[str, ...] | None:
    """A complete figure (`today.operation`, `month.by_starter.total`, `today.operations.<op id>`)
    from a read path, else None."""
    if len(path) >= 3 and path[0] in PERIODS and path[1] == "operations":
        return path[:3]
    if len(path) >= 2 and path[0] in PERIODS and path[1] in SCOPES:
        return path[:2]
    if len(path) >= 3 and path[0] in PERIODS and path[1] == "by_starter" and path[2] in SCOPES:
        return path[:3]
    return None


def said(figure: tuple[str, ...], *, op: str, vendor: str, workflow: str, starter: str) -> str:
    """`spent today through shop.order.refund`, `spent this month by alice in refund runs`."""
    period = _PERIOD_SAID[figure[0]]
    scope = figure[-1]
    where = {"operation": f" through {op}", "vendor": f" at {vendor}", "workflow": f" in {workflow} runs",
             "total": ""}[scope]
    who = f" by {starter}" if "by_starter" in figure else ""
    return f"spent {period}{who}{where}"


def _budget(rule: Any) -> int | None:
    text = str((getattr(rule, "annotations", None) or {}).get("budget", "")).strip().replace("_", "")
    return int(text) if text.isdigit() else None


def at_risk(call: Any, sums: Mapping[str, Any], *, policy: Any, decision: Any) -> dict[str, Any]:
    """The money at risk in `call` (a `MoneyCall`), what was spent before it and the budget of the
    rule that decided it, as `details.money` keeps them."""
    currency = call.currency or None
    rule = None
    for rule_id in getattr(decision, "policies", ()) or ():
        found = policy.rule(rule_id) if hasattr(policy, "rule") else None
        if found is not None:
            rule = found
            break
    out: dict[str, Any] = {"cents": call.cents, "currency": call.currency, "shown": format_money(call.cents, currency)}
    reads = [f for f in map(figure_of, spent_reads(rule.est.get("conditions") or [])) if f] \
        if rule is not None and hasattr(rule, "est") else []
    read = reads[0] if reads else None
    budget = _budget(rule) if rule is not None else None
    if read is None and budget is None:
        return out  # held by a rule about something else than what was spent: the amount alone
    if read is not None and read[1] == "operations":
        # A budget over several operations: what they moved together, as the rule adds them up.
        names = list(dict.fromkeys(f[2] for f in reads if f[:2] == read[:2]))
        moved = sums[read[0]].get("operations") or {}
        cents = sum(int(moved.get(name, 0)) for name in names)
        out["spent"] = {"cents": cents, "shown": format_money(cents, currency), "figure": ".".join(read[:2]),
                        "operations": names, "said": f"spent {_PERIOD_SAID[read[0]]} through {_listed(names)}"}
    else:
        figure: tuple[str, ...] = read or DEFAULT_FIGURE
        value: Any = sums
        for part in figure:
            value = value[part]
        out["spent"] = {"cents": int(value), "shown": format_money(int(value), currency),
                        "figure": ".".join(figure),
                        "said": said(figure, op=call.op, vendor=call.vendor, workflow=call.workflow,
                                     starter=call.starter)}
    if budget is not None:
        out["budget"] = {"cents": budget, "shown": format_money(budget, currency)}
    return out


def _listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def sentence(money: Mapping[str, Any] | None) -> str:
    """`1,500.00 EUR at risk; 900.00 EUR spent today through shop.order.refund, of a 1,000.00 EUR
    budget`, or "" when the details keep no money."""
    if not isinstance(money, Mapping) or "shown" not in money:
        return ""
    spent = spent_said(money)
    return f"{money['shown']} at risk; {spent}" if spent else f"{money['shown']} at risk"


def spent_said(money: Mapping[str, Any] | None) -> str:
    """`900.00 EUR spent today through shop.order.refund, of a 1,000.00 EUR budget`, or ""."""
    spent = money.get("spent") if isinstance(money, Mapping) else None
    if not isinstance(spent, Mapping):
        return ""
    text = f"{spent.get('shown')} {spent.get('said')}"
    budget = money.get("budget") if isinstance(money, Mapping) else None
    return f"{text}, of a {budget.get('shown')} budget" if isinstance(budget, Mapping) else text


def of_approval(approval: Any) -> dict[str, Any] | None:
    """The money kept in an approval's details, when it holds a money call."""
    details = getattr(approval, "details", None)
    money = details.get("money") if isinstance(details, Mapping) else None
    return dict(money) if isinstance(money, Mapping) else None
