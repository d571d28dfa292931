"""The spend table: one row per money call the policy let through, counted toward the sums a
policy reads (`context.spent`), and the lock row that serialises the deciders of one currency.

A row is written in the transaction that decides its call (`reserved`); it follows its call's
`op.called` record (`spent`, or `released` when the vendor refused it). No foreign key to the run:
retention removing a run leaves the month's sums as they were.
"""
from __future__ import annotations

from django.db import models


class SpendState(models.TextChoices):
    RESERVED = "reserved", "reserved"  # decided and allowed; the call is under way (or in doubt)
    SPENT = "spent", "spent"  # the call's op.called record says the vendor acted (or may have)
    RELEASED = "released", "released"  # refused by the vendor, or the call was not carried out


COUNTED = (SpendState.RESERVED, SpendState.SPENT)


class SpendEntry(models.Model):
    """One money call: who, through what, how much, when, and where it stands."""

    run_id = models.CharField(max_length=200)
    seq = models.IntegerField()
    op = models.CharField(max_length=200)
    vendor = models.CharField(max_length=100)
    workflow = models.CharField(max_length=200)
    starter = models.CharField(max_length=150)
    currency = models.CharField(max_length=3, help_text="ISO 4217, or empty when the call names none")
    cents = models.BigIntegerField(help_text="in minor units")
    day = models.DateField(help_text="the UTC day the call was decided")
    month = models.DateField(help_text="the first day of that UTC month")
    state = models.CharField(max_length=10, choices=SpendState.choices, default=SpendState.RESERVED)
    decided_at = models.DateTimeField()
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "runs"
        ordering = ["decided_at", "id"]
        verbose_name = "spend entry"
        verbose_name_plural = "spend entries"
        constraints = [models.UniqueConstraint(fields=["run_id", "seq"], name="spend_run_seq")]
        indexes = [
            models.Index(fields=["currency", "month", "state"], name="spend_currency_month"),
            models.Index(fields=["state", "currency"], name="spend_state"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.seq} {self.op} {self.cents} {self.currency} ({self.state})"


class SpendLock(models.Model):
    """One row per currency. A decider of a money call updates its row first: on PostgreSQL the row
    lock makes the next decider of that currency wait until this one commits; on SQLite the write
    takes the database's write lock. `decisions` counts the decisions made under it."""

    currency = models.CharField(max_length=3, primary_key=True)
    decisions = models.BigIntegerField(default=0)

    class Meta:
        app_label = "runs"
        verbose_name = "spend lock"

    def __str__(self) -> str:
        return f"{self.currency or '(none)'}: {self.decisions} decisions"
