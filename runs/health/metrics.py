"""The health package's gauges, read from the database at scrape time: a Prometheus collector the
site's `/metrics` includes (`settings.SANOMA_METRICS_COLLECTORS` names it).

    sanoma_approvals_over_sla{workflow}        pending approvals older than their workflow's approval_sla
    sanoma_approval_sla_seconds{workflow}      that SLA, for each workflow that declares one
    sanoma_ledger_verify_ok                    1 when the last `ledger verify` of every chain passed, else 0
    sanoma_ledger_verify_last_timestamp_seconds  when it ran (Unix time)

The ledger's two are absent until a verify has been kept. No label carries a run id, a person or a
secret: a workflow's name is the company's code. The wakeup's gauge is `wakeups.health`'s.
"""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from connectors.errors import ConfigError
from runs.health import conditions


class HealthCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            slas = conditions.approval_slas()
        except ConfigError:  # a config that does not resolve: its SLAs are not known (/readyz says why)
            slas = {}
        over = GaugeMetricFamily("sanoma_approvals_over_sla",
                                 "Pending approvals older than their workflow's approval_sla", labels=["workflow"])
        sla_seconds = GaugeMetricFamily("sanoma_approval_sla_seconds", "A workflow's declared approval_sla",
                                        labels=["workflow"])
        for overdue in conditions.overdue_approvals(slas):
            over.add_metric([overdue.workflow], overdue.count)
            sla_seconds.add_metric([overdue.workflow], overdue.sla.total_seconds())
        yield over
        yield sla_seconds

        verified = conditions.last_verification()
        if verified is not None:
            yield GaugeMetricFamily("sanoma_ledger_verify_ok", "1 when the last ledger verify of every chain passed",
                                    value=1 if verified.ok else 0)
            yield GaugeMetricFamily("sanoma_ledger_verify_last_timestamp_seconds",
                                    "When the last ledger verify of every chain ran (Unix time)",
                                    value=verified.checked_at.timestamp())

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())  # read at scrape time only: registering it must not touch the database
