"""Is sanoma healthy: the probes (`/healthz`, `/readyz`, `manage.py health`), the conditions the
alert rules watch (`deploy/prometheus/alerts.yml`) as the desk's health page shows them, the
gauges only this package knows (`metrics.HealthCollector`), the last `ledger verify` recorded, and
the PostgreSQL timeouts lifted for long admin work (`timeouts`)."""
