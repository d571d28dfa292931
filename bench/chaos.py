"""Chaos: runs under random worker crashes, freezes and PostgreSQL restarts. Prints figures; exits
non-zero on a lost run or a duplicate effect.

Usage (needs PostgreSQL's initdb and pg_ctl, e.g. Debian's /usr/lib/postgresql/15/bin; never
touches another server: it starts its own in a temporary folder, on a free port, and removes it):

    .venv/bin/python bench/chaos.py --short            # about a minute: 60 runs
    nice -n 10 .venv/bin/python bench/chaos.py --long  # 600 runs, at least 20 PostgreSQL restarts
    .venv/bin/python bench/chaos.py --runs 200 --workers 3 --fault-every 2 --pg-every 10 --json report.json

What it does:

- a private PostgreSQL cluster (`bench/chaos_postgres.py`), the schema migrated into it;
- a vendor server in this process (`bench/chaos_vendor.py`), reached by a real HTTP driver
  (`bench/chaos_company/`): one kind honours idempotency keys, one ignores them, one ignores them
  and has a reconcile read;
- `--workers` real `manage.py worker` processes (each a django-q2 cluster and the sweep, its own
  process group) with a short lease (`--lease`);
- `--runs` runs of `chaos-mixed`, at most `--concurrency` at once, each at one vendor kind, with a
  random mix of calls, a sleep, a child run, an approval (this harness decides it as
  `chaos-approver`), a message (this harness sends it) and more calls;
- while runs are started and until `--duration` has passed: every `--fault-every` seconds on
  average, one serving worker is SIGKILLed (its whole group, then a new one started) or SIGTERMed
  (a new one started once it has stopped), while another one serves, or SIGSTOPped for longer than
  the lease, then SIGCONTed; every `--pg-every` seconds on average, the cluster restarts (`pg_ctl
  restart -m fast`, or `-m immediate`, a crash and its recovery, for `--immediate-share` of them);
- and, for `--freeze-mid-call` of the vendor's slow answers at a key-ignoring kind, the worker
  that sent the call is frozen past the lease while the call is still in flight;
- an operator (this harness as `chaos-operator`) settles each run left waiting in doubt from the
  vendor's own records, once the doubtful call's timeout has passed since it was seen in doubt;
- then no more faults: the drain, until every run has ended or `--drain-timeout` passed.

It reports: runs lost (not ended after the drain), failed (with their errors), per vendor kind the
requests, effects, re-sends (requests whose key the vendor had already received) and duplicate
effects (one key, more than one effect), the calls in doubt and how they were settled, calls
recorded with an output the vendor never gave, django-q2 task failures, `manage.py ledger verify`
and the drain time. Exit status: 0, or 1 on a lost run or a duplicate effect at any vendor kind,
2 when it could not run.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from chaos_findings import findings, report
from chaos_harness import APPROVER, HERE, OPERATOR, REPO, ROOT, STARTER, VERSION, Harness

PRESETS = {
    "short": {"runs": 50, "workers": 3, "concurrency": 50, "fault_every": 2.0, "pg_every": 6.0, "duration": 30.0},
    "long": {"runs": 600, "workers": 3, "concurrency": 24, "fault_every": 3.0, "pg_every": 12.0, "duration": 900.0,
             "min_pg_restarts": 20},
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--short", action="store_true", help="about a minute: " + json.dumps(PRESETS["short"]))
    size.add_argument("--long", action="store_true", help="the long run: " + json.dumps(PRESETS["long"]))
    parser.add_argument("--runs", type=int, help="runs to start (default 50)")
    parser.add_argument("--workers", type=int, help="worker processes (default 3)")
    parser.add_argument("--concurrency", type=int, help="runs in flight at most (default 50)")
    parser.add_argument("--fault-every", type=float, help="mean seconds between worker faults (default 2; 0: none)")
    parser.add_argument("--pg-every", type=float,
                        help="mean seconds between PostgreSQL restarts, each 0.5-1.5 times it (default 6; 0: none)")
    parser.add_argument("--duration", type=float, help="faults stop after this many seconds (default 30), or "
                        "once every run has ended")
    parser.add_argument("--min-pg-restarts", type=int, help="faults go on, runs permitting, until this many "
                        "PostgreSQL restarts (default 0)")
    parser.add_argument("--immediate-share", type=float, default=0.4,
                        help="the share of PostgreSQL restarts that are immediate (a crash), 0-1 (default 0.4)")
    parser.add_argument("--freeze-mid-call", type=float, default=0.5,
                        help="the share of slow calls at a key-ignoring vendor whose worker is frozen past the "
                        "lease while the call is in flight, 0-1 (default 0.5)")
    parser.add_argument("--slow-share", type=float, default=0.05,
                        help="the share of the vendor's answers taking 4-7 s before the effect, 0-1 (default 0.05)")
    parser.add_argument("--lease", type=float, default=3.0, help="the workers' lease in seconds (default 3)")
    parser.add_argument("--drain-timeout", type=float, default=240.0,
                        help="seconds the drain may take before the runs not ended count as lost (default 240)")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: from the clock)")
    parser.add_argument("--json", type=Path, help="also write the report as JSON to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (server, logs)")
    args = parser.parse_args(argv)
    preset = PRESETS["long" if args.long else "short"]
    defaults = {"min_pg_restarts": 0, **preset}
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    problems = []
    if args.runs < 1:
        problems.append("--runs must be at least 1")
    if args.workers < 1:
        problems.append("--workers must be at least 1")
    if args.concurrency < 1:
        problems.append("--concurrency must be at least 1")
    for name in ("fault_every", "pg_every", "duration", "lease", "drain_timeout"):
        if getattr(args, name) < 0:
            problems.append(f"--{name.replace('_', '-')} must not be negative")
    if not 0 <= args.immediate_share <= 1:
        problems.append("--immediate-share must be between 0 and 1")
    if not 0 <= args.slow_share <= 1:
        problems.append("--slow-share must be between 0 and 1")
    if not 0 <= args.freeze_mid_call <= 1:
        problems.append("--freeze-mid-call must be between 0 and 1")
    if problems:
        parser.error("; ".join(problems))
    if args.seed is None:
        args.seed = int(time.time())
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    sys.path.insert(0, str(HERE))
    from chaos_postgres import PrivatePostgres, find_bin
    from chaos_vendor import VendorServer

    # `timeout` or a supervisor stopping the harness: clean up (workers, server, folder) as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_dir = find_bin()
    if bin_dir is None:
        print("chaos: PostgreSQL's initdb and pg_ctl were not found (set PG_BIN to their folder)", file=sys.stderr)
        return 2
    pg = PrivatePostgres(bin_dir, keep=args.keep)
    vendor = VendorServer(seed=args.seed, slow_share=args.slow_share).start()
    harness: Harness | None = None
    began = time.monotonic()
    try:
        pg.init().start()
        db_url = pg.create_database("sanoma_chaos")
        (pg.folder / "var").mkdir()
        os.environ.update(DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="sanoma_site.settings", SANOMA_ROOT=str(ROOT),
                          SANOMA_FAKES="", SANOMA_APP_VERSION=VERSION, SANOMA_VAR_DIR=str(pg.folder / "var"),
                          SANOMA_LOG_LEVEL="WARNING")
        sys.path.insert(0, str(REPO))
        import django

        django.setup()
        from django.core.management import call_command

        from runs.config.registry import get_config
        from runs.testing import make_user

        call_command("migrate", verbosity=0)
        make_user(STARTER, perms=["runs.start_workflow"])
        make_user(APPROVER)
        make_user(OPERATOR, perms=["runs.view_any_run", "runs.operate_runs"])
        config = get_config()
        harness = Harness(args, pg, vendor, db_url)
        print(f"chaos: PostgreSQL on port {pg.port} in {pg.folder}; vendor at {vendor.url}; seed {args.seed}; "
              f"{args.runs} runs, {args.workers} workers, a fault every {args.fault_every} s, a restart every "
              f"{args.pg_every} s (means)", flush=True)
        harness.start_workers()
        setup = time.monotonic() - began
        timing = {"setup_seconds": round(setup, 1), **harness.run(config)}
        harness.stop_workers()
        found = findings(harness, timing)
    finally:
        if harness is not None:
            harness.stop_workers()
        vendor.stop()
        pg.cleanup()
    print(report(found))
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, default=str))
    failed = found["runs"]["lost"] or any(found["duplicate_effects"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
