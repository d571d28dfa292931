"""A real PostgreSQL restart between a vendor's reply and the step's checkpoint. Prints figures; not a test.

Usage (PostgreSQL on this machine, restarted with pg_ctlcluster: every other client of the server
sees its connections dropped for those seconds; the database named is DROPPED and created afresh):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_restart .venv/bin/python bench/checkpoint_restart.py
    ... bench/checkpoint_restart.py --runs 2

Each run calls a non-idempotent refund on an in-memory fake. Right after the fake replied, the
script starts `pg_ctlcluster --skip-systemctl-redirect <version> main restart` and waits until the
server refuses connections; then the engine writes the checkpoint on its now dead connection. It
prints how long the write was retried, how many tries it took, the restart's own duration, how
many calls the vendor saw and how many `op.called` records the run has.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse, urlunparse

from engine_bench.common import bench_database_url, bench_parser

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_DB = "sanoma_restart"
RESTART_NOTE = ("It restarts the machine's PostgreSQL (pg_ctlcluster) once a run: every other client of the "
                "server sees its connections dropped for those seconds.")


def _fresh_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin_url = urlunparse(parsed._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _server_down(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=1) as probe:
            probe.execute("SELECT 1")
        return False
    except psycopg.Error:
        return True


def main() -> int:
    parser = bench_parser("checkpoint_restart.py", __doc__, EXAMPLE_DB, note=RESTART_NOTE)
    parser.add_argument("--runs", type=int, default=1, help="runs, each with its own restart (default 1)")
    args = parser.parse_args()
    url = bench_database_url("checkpoint_restart.py", EXAMPLE_DB, note=RESTART_NOTE)
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    _fresh_database(url)

    sys.path.insert(0, str(REPO))
    os.environ["DJANGO_SETTINGS_MODULE"] = "sanoma_site.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from runs import services
    from runs.config.registry import set_config
    from runs.config.resolution import SanomaConfig
    from runs.config.workflows import define_workflow
    from runs.engine import clock
    from runs.engine.drain import drain
    from runs.models import LedgerRecord, Run
    from runs.testing import make_user, resolve_on_fakes
    from runs.tests.fixtures import REFUND, acme

    make_user("alice", perms=["runs.start_workflow"])
    workflow = define_workflow(name="restart", uses=[REFUND],
                               run=lambda ctx, i: ctx.acme.order.refund({"order_id": "1", "amount": 5}).refund_id)
    config = resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[workflow]))
    set_config(config)
    fake = config.fakes["acme"]
    op_id = REFUND.id
    driver = config.drivers[op_id]
    moments: dict[str, Any] = {}

    class Restarting:
        """The fake's driver; after its reply, PostgreSQL restarts before the engine goes on."""

        def call(self, op: str, payload: Any, context: Any) -> Any:
            reply = driver.call(op, payload, context)
            moments["replied"] = time.monotonic()
            moments["restart"] = subprocess.Popen(
                ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            while not _server_down(url):  # the engine's next statement meets a server that is gone
                time.sleep(0.02)
            moments["down"] = time.monotonic()
            return reply

        def __getattr__(self, name: str) -> Any:
            return getattr(driver, name)

    cast(dict[str, Any], config.drivers)[op_id] = Restarting()  # the fake driver, wrapped
    waits: list[float] = []

    def sleeping(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    failures = 0
    for n in range(1, args.runs + 1):
        waits.clear()
        calls_before = len(fake.calls)
        run = services.start(workflow="restart", input={}, started_by="alice", config=config)
        with clock.sleeping_with(sleeping):
            drain(config)
        done = time.monotonic()
        restart = moments["restart"]
        restart.wait()
        restart_s = time.monotonic() - moments["replied"]  # an upper bound when the run ended first
        run = Run.objects.get(pk=run.pk)
        recorded = LedgerRecord.objects.filter(run_id=run.pk, kind="op.called").count()
        vendor_calls = len(fake.calls) - calls_before
        ok = run.status == "finished" and vendor_calls == 1 and recorded == 1
        failures += not ok
        print(f"run {n}: {run.status} {run.error or ''}".rstrip())
        print(f"  vendor reply -> server refusing connections: {moments['down'] - moments['replied']:.2f} s")
        print(f"  vendor reply -> run ended:                   {done - moments['replied']:.2f} s")
        print(f"  checkpoint retried for {sum(waits):.2f} s in waits, {len(waits) + 1} tries "
              f"(waits {', '.join(f'{w:.2f}' for w in waits)})")
        print(f"  pg_ctlcluster restart (exit {restart.returncode}): finished {restart_s:.2f} s after the reply")
        print(f"  vendor calls seen: {vendor_calls}; op.called records: {recorded}; "
              f"refunds at the vendor: {len(fake.state['refunds'])}")
    print(f"{failures} run(s) not as expected" if failures else "every run: finished, one vendor call, one op.called")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
