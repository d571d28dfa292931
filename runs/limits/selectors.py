"""The limits in force and their current use: what `manage.py limits` and the desk list."""
from __future__ import annotations

from dataclasses import dataclass, field

from connectors.limits import Limit, Rate
from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.limits import gate
from runs.limits.models import LimitCursor, LimitOverride, LimitSlot


@dataclass(frozen=True)
class Use:
    """One budget's use now: its key value, calls under way, and how long until the next may start."""

    key: str
    under_way: int
    next_in: float  # seconds (0: a call may start now)


@dataclass(frozen=True)
class LimitRow:
    target: str  # the vendor, or the operation's id
    declared: Limit | None
    override: LimitOverride | None
    rate: Rate | None
    concurrency: int | None
    key: str | None
    use: list[Use] = field(default_factory=list)

    @property
    def in_force(self) -> str:
        said = [str(self.rate)] if self.rate else []
        if self.concurrency:
            said.append(f"{self.concurrency} at once")
        if said and self.key:
            said.append(f"per {self.key}")
        return ", ".join(said) or "none"

    @property
    def declared_text(self) -> str:
        return self.declared.describe() if self.declared else "none"

    @property
    def declared_cell(self) -> str:
        """The desk's "declared" column: said once, not again beside the same words "in force"."""
        return "as in force" if self.override is None else self.declared_text

    @property
    def use_text(self) -> str:
        """`1 under way, next start in 0.4 s`; keyed: per key, the busiest first."""
        if not self.use:
            return "idle"
        said = []
        for use in self.use[:5]:
            parts = []
            if self.concurrency:
                parts.append(f"{use.under_way} of {self.concurrency} under way")
            if use.next_in > 0:
                parts.append(f"next start in {use.next_in:.1f} s")
            text = ", ".join(parts) or "free"
            said.append(f"{self.key} {use.key}: {text}" if self.key else text)
        more = f" (and {len(self.use) - 5} more)" if len(self.use) > 5 else ""
        return "; ".join(said) + more


def declared_limits(config: ResolvedConfig) -> dict[str, Limit]:
    """Every declared limit by target: connectors' by vendor, operations' by id."""
    found: dict[str, Limit] = {}
    for connector in config.connectors:
        limit = getattr(connector, "limit", None)
        if limit is not None:
            found[connector.vendor] = limit
    for op_id, operation in config.ops.items():
        if operation.limit is not None:
            found[op_id] = operation.limit
    return found


def limits_in_force(config: ResolvedConfig) -> list[LimitRow]:
    """Each declared or overridden limit: declared, in force, and its use now (from the budgets' tables)."""
    declared = declared_limits(config)
    overrides = {o.target: o for o in LimitOverride.objects.all()}
    now = clock.now_ms()
    rows = []
    for target in sorted(set(declared) | set(overrides)):
        rate, concurrency, key = gate.effective(declared.get(target), overrides.get(target))
        rows.append(LimitRow(target, declared.get(target), overrides.get(target), rate, concurrency, key,
                             _use(target, now, rate is not None or concurrency is not None)))
    return rows


def _use(target: str, now: int, limited: bool) -> list[Use]:
    if not limited:
        return []
    held: dict[str, int] = {}
    for key in LimitSlot.objects.filter(scope=target, until__gte=now).exclude(holder="").values_list("key", flat=True):
        held[key] = held.get(key, 0) + 1
    waits = {key: max(0.0, (next_at - now) / 1000) for key, next_at in
             LimitCursor.objects.filter(scope=target, next_at__gt=now).values_list("key", "next_at")}
    keys = set(held) | set(waits)
    uses = [Use(key, held.get(key, 0), waits.get(key, 0.0)) for key in keys]
    return sorted(uses, key=lambda u: (-u.under_way, -u.next_in, u.key))


__all__ = ["LimitRow", "Use", "declared_limits", "limits_in_force"]
