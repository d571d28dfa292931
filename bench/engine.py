"""What a checkpointed step costs, beside a bare insert and DBOS Transact. Prints figures; not a test.

Usage (PostgreSQL only; the database named is DROPPED and created afresh, so give it its own name;
(d) also drops and makes `<name>_dbos_direct` and `<name>_dbos_queue`, one for each DBOS mode):

    .venv/bin/pip install -r bench/requirements.txt        # dbos (d) and py-spy, for the bench only
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench .venv/bin/python bench/engine.py
    ... bench/engine.py --quick          # smaller batches: about 2-3 minutes on 2 cores
    ... bench/engine.py --profile FILE   # also cProfile the in-process steps (b) into FILE (pstats)
    ... bench/engine.py --skip-dbos      # without (d) (then no dbos package needed, no _dbos_* databases)
    ... bench/engine.py --chain-variants # only (k): the link trigger's cost, and an alternative

It measures, in one run, side by side:
  (a) a bare ORM insert-and-commit: one ~100-byte JSON row per `transaction.atomic()`, measured in
      rounds alternating with (b)'s (before the steps in even rounds, after them in odd ones), as
      many rows a round as (b) has steps; a step's ratio to it is taken per round, then the median
      (the bare insert moves by 2x between quiet runs an hour apart: a ratio to a figure taken
      once is noise)
  (b) the engine's cost per checkpointed step: `steps` workflows of 10 calls on an in-memory fake,
      advanced in this process with `runs.engine.advance.advance`; also the marginal step (10-call runs
      minus 0-call runs, so the per-run claim/load/finish is not counted)
  (c) steps/s of 500 runs x 10 steps through a real `manage.py worker` with SANOMA_WORKERS=2, from
      the first run's start to the last run's end (database timestamps); (c2) the same with the runs
      started before the worker, from its first checkpoint to the last end (the workers alone)
  (d) the same 10-step workflow on DBOS Transact (dbos 3.4.0), each mode in its own process on its
      own fresh database `<name>_dbos_<mode>`: 500 direct calls in one thread, and 500 through a
      queue polled every 10 ms with worker_concurrency=10
  (e) database transactions per step: COMMITs Django issues (a wrapper on the connection's commit)
      plus statements run in autocommit (each commits itself), counted during (b); and `xact_commit` of
      pg_stat_database around (b) and (c) (less, in (c), the bench's own polls for the runs' end)
      (on PostgreSQL every autocommit statement is a transaction too)
  (f) the delay between a sleep's deadline and the run's resumption (`nap`: ctx.sleep(until) then
      ctx.now(), whose recorded time is the resumption), p50/p95 over 20 runs with a worker up
  (g) where a step's time goes: the step's transaction alone, on the general path (ORM: BEGIN,
      lease UPDATE, Step INSERT, LedgerRecord INSERT, COMMIT; what SQLite uses), without the lease
      UPDATE, as hand-written SQL, and as one statement of data-modifying CTEs (1 round trip: what
      the engine does on PostgreSQL, runs/fastpath.py), wall and CPU
  (h) the engine's step (as (b)) with the ledger's hash chain and without it (its trigger disabled,
      no digest or link computed, no lock of the run row in the lease check), rounds alternating
      (10; --quick 6), the figure the median of the rounds' with/without pairs (as (b) over (a));
      the runs written without it are removed after; aim: the chain adds under 5 %; with the CPU per step
      of this process and of its PostgreSQL backend (read from /proc when the server is local), the
      steadier figures when the machine is loaded
  (i) collection puts through ctx (`ctx.data.bench_notes.put`, the database driver: the record and
      its idempotency row in one transaction, then the step's checkpoint), in-process as (b), rounds
      alternating with the same number of `bench.step.do` steps; per put, marginal, and put/step;
      aim: a put costs at most 1.5x a step
  (j) messages delivered: runs waiting in `ctx.wait_message`, each sent one with
      `runs.services.send_message` (which wakes it) and then advanced in this process until it has
      read the message and finished; messages per second, send to finished, one after another
  (k) only with --chain-variants: records inserted one per transaction under the link trigger, under
      a trigger that keeps the chain's head on the run row (one UPDATE instead of a lock and a read;
      measured, not adopted) and with none, rounds alternating: PostgreSQL's CPU and wall per record
The config root is bench/bench_company/ (its fake stays in memory even under SANOMA_FAKES=instance).
Each measure is a module of bench/engine_bench/; this script runs them in order and prints the table.
Their helpers are tested in bench/engine_bench/tests/ (collected by ./test).

It ends with its aims, each MET or MISSED with its figure: the step at most 1.5x the
bare insert (marginal 1.2x), Python CPU per step at most 0.5 ms, 2 workers' steps/s at least 4x
DBOS-py's best mode (same run), the hash chain at most +5 % a step, at most 1.3 database
transactions per step (whole system, (e) with the worker), a sleep resumed within 100 ms of its
deadline (p95); and the earlier ones: one commit per marginal step, a collection put at most 1.5x a
step. Worker scaling (1-8 workers) and a claim under a long read transaction: bench/scale.py.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
from urllib.parse import urlparse

from engine_bench.anatomy import step_anatomy
from engine_bench.chain import hash_chain_cost
from engine_bench.chain_variants import chain_variants
from engine_bench.common import NOTES, bench_database_url, bench_parser, ms
from engine_bench.database import bare_insert
from engine_bench.dbos import dbos, dbos_child
from engine_bench.figures import Aim, aim_lines
from engine_bench.in_process import in_process, start_runs
from engine_bench.puts import collection_puts, collections_config, messages_delivered
from engine_bench.setup import prepare
from engine_bench.worker import drained_by_worker, queue_before_worker, sleep_resumption, start_worker, with_worker

# The example database of --help and of the refusal without DATABASE_URL, and the others the bench makes.
EXAMPLE_DB = "sanoma_bench"
ALSO_MADE = ("so are <name>_dbos_direct and <name>_dbos_queue (DBOS Transact's, one for each mode of (d); "
             "not with --skip-dbos, --only-collections or --chain-variants)")
PACKAGES = ("The bench's own packages (dbos for (d); py-spy): `.venv/bin/pip install -r bench/requirements.txt`. "
            "What each measure (a)-(k) is: this script's docstring and docs/architecture/measured.md.")


def put_aim(puts: dict[str, float]) -> Aim:
    """The collection put's aim, printed the same in the full run and with --only-collections."""
    ratio = puts["put"] / puts["step"]
    return Aim("a collection put / a step (earlier aim)", ratio, 1.5, True,
               f"{ratio:.2f}x (marginal {puts['put_marginal'] / puts['step_marginal']:.2f}x)", "x")


def print_chain_variants(config: object, records: int, rounds: int) -> None:
    template = start_runs(config, "k-template", 1, 0)[0]
    found = chain_variants(template, records, rounds)
    for mode, figures in found.items():
        print(f"(k) link {mode.ljust(12)} PostgreSQL CPU {figures['pg_cpu'] * 1e6:6.1f} us a record, wall "
              f"{figures['wall'] * 1e6:6.1f} us (insert and commit; medians of {rounds} rounds alternating)"
              + ("" if mode == "off" or figures["verified"] else "  CHAINS BROKEN"))
    off = found["off"]["pg_cpu"]
    for mode in ("current", "head_on_run"):
        print(f"(k) {mode}: the link costs {(found[mode]['pg_cpu'] - off) * 1e6:+.1f} us of PostgreSQL CPU a record")


def main() -> None:
    parser = bench_parser("engine.py", __doc__, EXAMPLE_DB, ALSO_MADE, PACKAGES)
    parser.add_argument("--quick", action="store_true",
                        help="smaller batches: about 2-3 minutes on 2 cores")
    parser.add_argument("--skip-dbos", action="store_true",
                        help="without (d), DBOS Transact's two modes: no dbos package needed, no _dbos_* "
                             "databases made; the aim against DBOS is then n/a")
    parser.add_argument("--only-collections", action="store_true",
                        help="only (i) collection puts and (j) messages (after a warm-up)")
    parser.add_argument("--chain-variants", action="store_true",
                        help="only (k): the link trigger's cost, and the chain's head kept on the run row")
    parser.add_argument("--profile", metavar="FILE", help="cProfile one in-process batch of (b) into FILE")
    parser.add_argument("--workers", type=int, default=2, help="SANOMA_WORKERS for (c) and (f)")
    parser.add_argument("--rounds", type=int, help="rounds of (b) alternating with (a) (default 5; --quick 3)")
    parser.add_argument("--dbos-child", choices=("direct", "queue"), help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=500, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    # A SIGTERM (timeout, kill) unwinds like an error, so no worker process started here is left behind.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    url = bench_database_url("engine.py", EXAMPLE_DB, ALSO_MADE, PACKAGES)
    if args.dbos_child:
        return dbos_child(args.dbos_child, args.runs, args.steps)

    b_runs, rounds, c_runs, f_runs, d_runs = (50, 3, 200, 10, 200) if args.quick else (100, 5, 500, 20, 500)
    rounds = args.rounds or rounds
    config, env, var = prepare(url)

    print(f"bench database {urlparse(url).path.lstrip('/')}; python {sys.version.split()[0]}; {os.cpu_count()} cores")
    if args.chain_variants:
        return print_chain_variants(config, 1000 if args.quick else 3000, rounds * 2)
    collections = collections_config(config, var)
    puts = collection_puts(collections, b_runs, 10, 2 * rounds)
    put_ratio = puts["put"] / puts["step"]
    print(f"(i) collection put: {ms(puts['put'])} (marginal {ms(puts['put_marginal'])}); step beside it "
          f"{ms(puts['step'])} (marginal {ms(puts['step_marginal'])}); put/step {put_ratio:.2f}x "
          f"(marginal {puts['put_marginal'] / puts['step_marginal']:.2f}x)")
    messages = messages_delivered(collections, c_runs)
    print(f"(j) messages delivered: {messages['per_s']:.0f}/s ({ms(messages['each'])} from send to the run "
          f"finished having read it; {messages['statements']:.0f} statements, {messages['commits']:.0f} "
          "transactions each)")
    if args.only_collections:
        print("\n" + "\n".join(aim_lines([put_aim(puts)])))
        return None
    engine = in_process(config, b_runs, 10, rounds, args.profile, reference=lambda: bare_insert(b_runs * 10))
    bare = statistics.median(engine["reference"])
    print(f"(a) bare insert: {ms(bare)} (rounds: {', '.join(ms(b) for b in engine['reference'])})")
    print(f"(b) engine step: {ms(engine['per_step'])} (marginal {ms(engine['marginal'])}); "
          f"{engine['ratio']:.2f}x the bare insert (marginal {engine['ratio_marginal']:.2f}x), pairs' median")
    anatomy = step_anatomy(config, 500 if args.quick else 2000)
    print("(g) step transaction: " + ", ".join(f"{k} {ms(v)}" for k, v in anatomy.items() if not k.endswith("_cpu")))
    chain = hash_chain_cost(config, b_runs, 10, 6 if args.quick else 10)
    chain_extra = chain["ratio"] - 1  # the median of the rounds' pairs, as (b) over (a)
    print(f"(h) step with the hash chain {ms(chain['with'])}, without {ms(chain['without'])} ({chain_extra:+.1%}, "
          f"pairs' median; medians' ratio {chain['with'] / chain['without'] - 1:+.1%}); "
          f"CPU here {ms(chain['with_cpu'])} against {ms(chain['without_cpu'])}, PostgreSQL's "
          f"{ms(chain['with_pg_cpu'])} against {ms(chain['without_pg_cpu'])}")
    log = var / "worker.log"
    queue_before_worker(config, c_runs, 10)
    worker = start_worker(env, log, args.workers)
    try:
        c2 = drained_by_worker(c_runs, 10)
        print(f"(c2) worker, runs queued before it started: {c2['steps_per_s']:.0f} steps/s")
        c = with_worker(config, c_runs, 10)
        print(f"(c) worker: {c['steps_per_s']:.0f} steps/s (starting {c['enqueue_per_s']:.0f} runs/s meanwhile)")
        f = sleep_resumption(config, f_runs)
        print(f"(f) resumption: p50 {f['p50']:.0f} ms, p95 {f['p95']:.0f} ms")
        code = worker.terminate(within=60)
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()
    d = {}
    if not args.skip_dbos:
        d = {mode: dbos(mode, d_runs, 10) for mode in ("direct", "queue")}
        print("(d) DBOS: " + ", ".join(f"{m} {r['steps_per_s']:.0f} steps/s" for m, r in d.items()))

    dbos_best = max((r["steps_per_s"] for r in d.values()), default=None)
    rows = [
        ("(a) bare ORM insert+commit (median of rounds)", f"{ms(bare)} = {1 / bare:,.0f}/s",
         f"rounds {ms(min(engine['reference']))}-{ms(max(engine['reference']))}, alternating with (b)"),
        ("(b) engine, per step (10-call runs, in-process)",
         f"{ms(engine['per_step'])} = {1 / engine['per_step']:,.0f} steps/s",
         f"{engine['ratio']:.2f}x bare insert (median of {rounds} alternating pairs)"),
        ("(b) engine, marginal step (minus per-run cost)", ms(engine["marginal"]),
         f"{engine['ratio_marginal']:.2f}x bare insert (median of pairs)"),
        ("(b) ... of which Python CPU in this process", f"{ms(engine['cpu'])} (marginal {ms(engine['cpu_marginal'])})",
         "the rest is waiting on PostgreSQL"),
        ("(c) 2 worker processes, 500x10 steps" if not args.quick else f"(c) worker, {c_runs}x10 steps",
         f"{c['steps_per_s']:,.0f} steps/s ({c['runs_per_s']:.0f} runs/s, {c['seconds']:.2f} s)",
         f"earlier prototype: {NOTES['prototype_steps_per_s']:,} steps/s"),
        ("(c2) the same, runs queued before the workers started",
         f"{c2['steps_per_s']:,.0f} steps/s ({c2['seconds']:.2f} s)",
         "the workers alone: no starts competing for the 2 cores"),
    ]
    for mode, r in d.items():
        label = "direct calls, 1 thread" if mode == "direct" else "queue, poll 10 ms, concurrency 10"
        rows.append(
            (f"(d) DBOS-py, {label}", f"{r['steps_per_s']:,.0f} steps/s",
             f"earlier on this machine: {NOTES['dbos_steps_per_s']} steps/s")
        )
    rows += [
        ("(e) transactions per step (COMMITs + autocommit statements; all / marginal)",
         f"{engine['commits']:.2f} / {engine['commits_marginal']:.2f}",
         f"statements {engine['statements']:.1f} / {engine['statements_marginal']:.1f}"),
        ("(e) pg xact_commit per step (in-process)", f"{engine['xacts']:.2f}", "incl. autocommit reads of claim/load"),
        ("(e) pg xact_commit per step (with worker, whole system)", f"{c['xacts']:.2f}",
         f"incl. broker, start, sweep; not the bench's polls ({c['xacts_with_polls']:.2f} with them)"),
        ("(g) step txn, the general path (ORM, 5 round trips: SQLite's way)",
         f"{ms(anatomy['engine'])} (CPU {ms(anatomy['engine_cpu'])})",
         f"{anatomy['engine'] / engine['marginal']:.0%} of the marginal step"),
        ("(g) ... without the lease UPDATE", f"{ms(anatomy['no_lease'])} (CPU {ms(anatomy['no_lease_cpu'])})",
         "Step + LedgerRecord saves in atomic"),
        ("(g) ... same 3 statements, hand-written SQL", f"{ms(anatomy['raw'])} (CPU {ms(anatomy['raw_cpu'])})",
         "ORM cost = engine - raw"),
        ("(g) ... one CTE statement: the engine on PostgreSQL", f"{ms(anatomy['cte'])} (CPU {ms(anatomy['cte_cpu'])})",
         f"{anatomy['cte'] / bare:.2f}x bare insert"),
        ("(g) ... one CTE, lease checked not renewed",
         f"{ms(anatomy['cte_guard'])} (CPU {ms(anatomy['cte_guard_cpu'])})",
         f"{anatomy['cte_guard'] / bare:.2f}x bare insert"),
        ("(h) engine step WITH the ledger's hash chain (10-call runs)", ms(chain["with"]),
         f"marginal {ms(chain['with_marginal'])}"),
        ("(h) ... the same WITHOUT it (no trigger, no digest)", ms(chain["without"]),
         f"marginal {ms(chain['without_marginal'])}; the chain costs {chain_extra:+.1%} "
         f"(marginal {chain['ratio_marginal'] - 1:+.1%}; pairs' medians)"),
        ("(h) ... CPU per step with / without it: this process",
         f"{ms(chain['with_cpu'])} / {ms(chain['without_cpu'])}", "the content digest is computed here"),
        ("(h) ... CPU per step with / without it: its PostgreSQL backend",
         f"{ms(chain['with_pg_cpu'])} / {ms(chain['without_pg_cpu'])}",
         "the link trigger runs there; from /proc (nan: server elsewhere)"),
        ("(f) sleep deadline -> resumed", f"p50 {f['p50']:.0f} ms, p95 {f['p95']:.0f} ms (max {f['max']:.0f})",
         f"{f_runs} runs, worker up"),
        ("(i) collection put through ctx (database driver, 10-put runs)",
         f"{ms(puts['put'])} = {1 / puts['put']:,.0f} puts/s",
         f"{put_ratio:.2f}x a step measured beside it ({ms(puts['step'])})"),
        ("(i) ... marginal put (minus per-run cost)", ms(puts["put_marginal"]),
         f"{puts['put_marginal'] / puts['step_marginal']:.2f}x the marginal step ({ms(puts['step_marginal'])})"),
        ("(j) messages delivered (send -> run read it and finished)", f"{messages['per_s']:,.0f}/s",
         f"{ms(messages['each'])} each, {messages['statements']:.0f} statements; in-process, {c_runs} runs"),
    ]
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    print("\n" + "measure".ljust(width) + " | " + "value".ljust(vwidth) + " | reference")
    print("-" * width + "-+-" + "-" * vwidth + "-+-" + "-" * 30)
    for name, value, ref in rows:
        print(f"{name.ljust(width)} | {value.ljust(vwidth)} | {ref}")

    workers = f"{args.workers} workers'" if args.workers != 1 else "1 worker's"
    chain_shown = (f"{chain_extra:+.1%} (median of {6 if args.quick else 10} pairs; marginal "
                   f"{chain['ratio_marginal'] - 1:+.1%}; the sides' medians {ms(chain['with'])} against "
                   f"{ms(chain['without'])})")
    aims = [
        Aim("engine step / bare insert", engine["ratio"], 1.5, True,
            f"{engine['ratio']:.2f}x ({ms(engine['per_step'])} a step, bare {ms(bare)})", "x"),
        Aim("marginal step / bare insert", engine["ratio_marginal"], 1.2, True,
            f"{engine['ratio_marginal']:.2f}x ({ms(engine['marginal'])})", "x"),
        Aim("Python CPU per step (in-process)", engine["cpu"] * 1000, 0.5, True,
            f"{ms(engine['cpu'])} (marginal {ms(engine['cpu_marginal'])})", " ms"),
        Aim(f"{workers} steps/s / DBOS-py's best mode", None if dbos_best is None else c["steps_per_s"] / dbos_best,
            4, False, "not measured (--skip-dbos)" if dbos_best is None else (
                f"{c['steps_per_s'] / dbos_best:.2f}x ({c['steps_per_s']:,.0f} against {dbos_best:,.0f} steps/s; "
                f"queued first {c2['steps_per_s'] / dbos_best:.2f}x)"), "x"),
        Aim("the hash chain's cost per step", chain_extra * 100, 5, True, chain_shown, " %"),
        Aim("database transactions per step, whole system", c["xacts"], 1.3, True,
            f"{c['xacts']:.2f} (in-process {engine['xacts']:.2f}; marginal {engine['commits_marginal']:.2f})"),
        Aim("sleep deadline -> resumed, p95", f["p95"], 100, True, f"{f['p95']:.0f} ms (p50 {f['p50']:.0f})", " ms"),
        Aim("one commit per marginal step (earlier aim)", engine["commits_marginal"], 1.0 + 1e-9, True,
            f"{engine['commits_marginal']:.2f} ({engine['commits']:.2f} with per-run cost)"),
        put_aim(puts),
    ]
    print("\nDBOS-py's best mode here: " + (
        "not measured" if dbos_best is None else
        f"{dbos_best:,.0f} steps/s ({max(d, key=lambda m: d[m]['steps_per_s'])})"))
    print("\n".join(aim_lines(aims)))
    print(f"\nworker exit code {code}; worker log {log}")


if __name__ == "__main__":
    main()
