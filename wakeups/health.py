"""The wakeup's part of sanoma's health: whether the worker's last registration of its next
deadline failed (the wakeup row's `last_error`), as a condition for the desk's health page and as
the gauge `sanoma_wakeup_registered` (1, or 0 while registering fails) for the alert
`SanomaWakeupNotRegistered`. `WakeupCollector` is listed in `settings.SANOMA_METRICS_COLLECTORS`."""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from runs.health.conditions import Condition
from wakeups.models import WAKEUP_ROW_ID, WakeupRow


def registration_error() -> str | None:
    """Why registering the next deadline with the wakeup last failed; None when it did not fail."""
    error = WakeupRow.objects.filter(pk=WAKEUP_ROW_ID).values_list("last_error", flat=True).first()
    return error or None


def condition() -> Condition:
    error = registration_error()
    return Condition(key="wakeup", alert="SanomaWakeupNotRegistered", title="The wakeup registered",
                     ok=error is None,
                     summary=(f"registering the next deadline failed: {error}" if error
                              else "no registration has failed"))


class WakeupCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("sanoma_wakeup_registered",
                                "0 while registering the next deadline with the wakeup fails, else 1",
                                value=0 if registration_error() else 1)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())  # read at scrape time only: registering it must not touch the database
