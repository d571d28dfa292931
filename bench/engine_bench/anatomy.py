"""(g) where a step's time goes: its transaction on the general path, without the lease update, as
hand-written SQL and as one statement."""
from __future__ import annotations

import time
from typing import Any


def _insert_select(model: Any, obj: Any, source: str) -> tuple[str, list[Any]]:
    """`INSERT INTO <table> (<columns>) SELECT <values> FROM <source>`, columns from the model."""
    from django.db import connection

    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    values = ", ".join("%s" for _ in fields)
    return f"INSERT INTO {model._meta.db_table} ({columns}) SELECT {values} FROM {source}", params


def step_anatomy(config: Any, steps: int) -> dict[str, float]:
    """The step's transaction alone, four ways, on one leased run (seconds per step):
    engine  = what Segment.commit does: atomic { lease UPDATE; Step save; LedgerRecord save }
    no_lease= the same without the lease UPDATE
    raw     = the engine's three statements as hand-written SQL inside atomic (no ORM compiling)
    cte     = one statement in autocommit: the lease UPDATE and both INSERTs as data-modifying CTEs
              (PostgreSQL), inserting nothing when the lease is not ours: 1 round trip, 1 commit
    cte_guard = cte with the lease checked by a SELECT instead of renewed (renewal only when less
              than 2/3 of the lease remains): the run row, with its 14 indexes, is not rewritten."""
    from datetime import timedelta

    from django.conf import settings
    from django.db import connection, transaction
    from django_q.models import OrmQ

    from runs import ledger, services
    from runs.engine import clock
    from runs.engine.advance import claim
    from runs.models import LedgerRecord, Run, RunStatus, Step, StepKind

    run_id = services.start(workflow="steps", input={"n": 0}, started_by="bench", run_id="g-anatomy", config=config).id
    OrmQ.objects.all().delete()
    if not claim(run_id, worker_id="g", versions=config.owned_versions):
        raise SystemExit("(g) could not claim its run")
    run = Run.objects.get(pk=run_id)
    lease = timedelta(seconds=settings.SANOMA_LEASE_SECONDS)
    seqs = iter(range(1, 10**9))

    def objects() -> tuple[Any, Any]:
        seq = next(seqs)
        step = Step(run=run, seq=seq, kind=StepKind.CALL, name="bench.step.do", output={"n": seq, "done": seq},
                    error=None, decision={"kind": "allow", "reasons": []}, attempt=1, next_seq=seq + 1,
                    created_at=clock.now())
        body = {"op": "bench.step.do", "effect": "write", "input": {"n": seq}, "decision": {"kind": "allow"},
                "duration_ms": 0, "output": {"n": seq, "done": seq}, "attempt": 1}
        record = ledger.build(run, kind="op.called", seq=seq, body=body, app=config.app_name)
        ledger.prepare(record, "default")  # the digest, for the link trigger (raw inserts ask it to link)
        return step, record

    def engine() -> None:
        step, record = objects()
        with transaction.atomic():
            now = clock.now()
            if not Run.objects.filter(pk=run.pk, lease_owner="g", status=RunStatus.RUNNING).update(
                    lease_until=now + lease, updated_at=now):
                raise SystemExit("(g) lost the lease")
            step.save(force_insert=True)
            record.save(force_insert=True)

    def no_lease() -> None:
        step, record = objects()
        with transaction.atomic():
            step.save(force_insert=True)
            record.save(force_insert=True)

    update_sql = ("UPDATE runs_run SET lease_until = %s, updated_at = %s "
                  "WHERE id = %s AND lease_owner = %s AND status = 'running'")

    def raw() -> None:
        step, record = objects()
        now = clock.now()
        step_sql, step_params = _insert_select(Step, step, "(SELECT 1) AS one")
        record_sql, record_params = _insert_select(LedgerRecord, record, "(SELECT 1) AS one")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(update_sql, [now + lease, now, run.pk, "g"])
            if cursor.rowcount != 1:
                raise SystemExit("(g) lost the lease")
            cursor.execute(step_sql, step_params)
            cursor.execute(record_sql, record_params)

    def cte() -> None:
        step, record = objects()
        now = clock.now()
        step_sql, step_params = _insert_select(Step, step, "lease")
        record_sql, record_params = _insert_select(LedgerRecord, record, "lease")
        sql = (f"WITH lease AS ({update_sql} RETURNING id), "
               f"step AS ({step_sql} RETURNING 1), record AS ({record_sql} RETURNING 1) "
               "SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM step), (SELECT count(*) FROM record)")
        with connection.cursor() as cursor:
            cursor.execute(sql, [now + lease, now, run.pk, "g", *step_params, *record_params])
            if cursor.fetchone() != (1, 1, 1):
                raise SystemExit("(g) lost the lease")

    def cte_guard() -> None:
        # Like cte, but the lease is only checked (still ours, running, not near expiry), not renewed:
        # what a step would do while more than 2/3 of its lease remains.
        step, record = objects()
        now = clock.now()
        step_sql, step_params = _insert_select(Step, step, "lease")
        record_sql, record_params = _insert_select(LedgerRecord, record, "lease")
        sql = ("WITH lease AS (SELECT id FROM runs_run WHERE id = %s AND lease_owner = %s AND status = 'running' "
               f"AND lease_until > %s), step AS ({step_sql} RETURNING 1), record AS ({record_sql} RETURNING 1) "
               "SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM step), (SELECT count(*) FROM record)")
        with connection.cursor() as cursor:
            cursor.execute(sql, [run.pk, "g", now + timedelta(seconds=1), *step_params, *record_params])
            if cursor.fetchone() != (1, 1, 1):
                raise SystemExit("(g) lost the lease")

    timings = {}
    for name, fn in (("engine", engine), ("no_lease", no_lease), ("raw", raw), ("cte", cte), ("cte_guard", cte_guard)):
        for _ in range(100):
            fn()
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            fn()
        timings[name] = (time.perf_counter() - started) / steps
        timings[name + "_cpu"] = (time.process_time() - cpu) / steps
    return timings
