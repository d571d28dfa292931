"""The limits' tables (app `runs`): rate cursors, concurrency slots, reserved slots, overrides.

Times are milliseconds since the epoch (`runs.engine.clock.now_ms`), as the engine's waits keep them.
"""
from __future__ import annotations

from django.db import models


class LimitCursor(models.Model):
    """A rate budget (one limit, one key value): the earliest time the next call may start.

    Each call takes the time `max(next_at, now)` and moves `next_at` one interval past it, in one
    statement, so every worker on every host draws from the same budget."""

    scope = models.CharField(max_length=200)  # the vendor ("stripe") or the operation's id
    key = models.CharField(max_length=200, blank=True, default="")  # the key field's value
    next_at = models.BigIntegerField(default=0)

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["scope", "key"], name="limit_cursor_one")]

    def __str__(self) -> str:
        return f"{self.scope}[{self.key}] next at {self.next_at}"


class LimitSlot(models.Model):
    """One of a concurrency limit's slots: free, or held by a call until its lease ends (a crashed
    worker's slot frees itself then)."""

    scope = models.CharField(max_length=200)
    key = models.CharField(max_length=200, blank=True, default="")
    slot = models.PositiveIntegerField()
    holder = models.CharField(max_length=250, blank=True, default="")  # "<run id>:<step>"
    until = models.BigIntegerField(default=0)

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["scope", "key", "slot"], name="limit_slot_one")]

    def __str__(self) -> str:
        return f"{self.scope}[{self.key}] slot {self.slot}: {self.holder or 'free'}"


class LimitHold(models.Model):
    """A start time a call has taken from a rate budget, kept while its run waits for it."""

    holder = models.CharField(max_length=250)  # "<run id>:<step>"
    # The holder's run: a queued run that holds a start time goes to wait for it, so it is no other
    # run's reason to give a worker up (`runs.limits.gate`).
    run_id = models.CharField(max_length=200, default="", db_index=True)
    scope = models.CharField(max_length=200)
    key = models.CharField(max_length=200, blank=True, default="")
    at = models.BigIntegerField()

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["holder", "scope", "key"], name="limit_hold_one")]

    def __str__(self) -> str:
        return f"{self.holder} holds {self.scope}[{self.key}] at {self.at}"


class LimitOverride(models.Model):
    """An operator's change of a connector's or an operation's limit, in force from the next call.

    An empty `rate` keeps the declared rate, `off` lifts it; a null `concurrency` keeps the declared
    one, 0 lifts it. The key is the declaration's."""

    target = models.CharField(max_length=200, unique=True, help_text="A connector's vendor (stripe) or an "
                              "operation's id (stripe.refund.create).")
    rate = models.CharField(max_length=40, blank=True, default="", help_text="Calls per unit: 5/s, 600/min; "
                            "off lifts the rate; empty keeps the declared one.")
    concurrency = models.PositiveIntegerField(null=True, blank=True, help_text="Calls at once; 0 lifts it; "
                                              "empty keeps the declared one.")
    set_by = models.CharField(max_length=150)
    set_at = models.DateTimeField()

    class Meta:
        app_label = "runs"
        ordering = ["target"]
        verbose_name = "limit override"
        verbose_name_plural = "limits"

    def __str__(self) -> str:
        return self.target  # the desk says: the limit override “stripe” (the model names itself)
