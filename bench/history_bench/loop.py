"""`loop`: a workflow that waits for a message each round (two recorded steps a round), and
`relay`: the same loop that starts afresh with `ctx.continue_as_new` every `every` rounds.

`grow` gives a waiting `loop` run the history of `rounds` rounds at once (its steps, its messages
read, their ledger records), written as the engine writes them, so a long history takes seconds."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from runs.authoring import define_workflow


class LoopInput(BaseModel):
    rounds: int = Field(default=1_000_000, ge=0)
    total: int = 0
    every: int = Field(default=0, ge=0)  # relay: continue as new after this many rounds (0: never)


def loop_run(ctx: Any, input: LoopInput) -> dict[str, int]:
    total = input.total
    for _ in range(input.rounds):
        message = ctx.wait_message("tick")
        total += message["n"]
    return {"total": total}


def relay_run(ctx: Any, input: LoopInput) -> dict[str, int]:
    total = input.total
    for done in range(input.rounds):
        if input.every and done == input.every:
            ctx.continue_as_new({"rounds": input.rounds - done, "total": total, "every": input.every})
        message = ctx.wait_message("tick")
        total += message["n"]
    return {"total": total}


loop = define_workflow(name="loop", title="A message a round", input=LoopInput, uses=["wait_message"], run=loop_run)


def grow(run_id: str, rounds: int, *, app: str, every: int = 0) -> None:
    """Record `rounds` rounds for a `loop` run (or a `relay` run continuing as new `every` rounds)
    that has recorded none: the steps, messages read and ledger records the engine would write."""
    from django.db import transaction

    from runs import ledger
    from runs.engine import clock
    from runs.models import LedgerKind, LedgerRecord, Run, RunMessage, Step, StepKind

    run = Run.objects.get(pk=run_id)
    now = clock.now()
    steps: list[Step] = []
    messages: list[RunMessage] = []
    records: list[LedgerRecord] = []
    seq, total, left, generation = 0, 0, LoopInput.model_validate(run.input).rounds, 1
    for r in range(rounds):
        if every and r and r % every == 0:  # the relay continues as new before its next wait
            seq += 1
            generation += 1
            left -= every
            body = {"input": {"rounds": left, "total": total, "every": every}, "generation": generation}
            steps.append(Step(run=run, seq=seq, kind=StepKind.CONTINUE, name="", output=body, next_seq=seq + 1,
                              created_at=now))
            records.append(ledger.build(run, kind=LedgerKind.RUN_CONTINUED, seq=seq, app=app, body=body))
        wait, read = seq + 1, seq + 2
        seq = read
        message_id = f"{run_id}-m{r}"
        payload = {"n": 1}
        total += 1
        steps.append(Step(run=run, seq=wait, kind=StepKind.WAIT, name="tick", output={"topic": "tick", "until": None},
                          next_seq=wait + 1, created_at=now))
        steps.append(Step(run=run, seq=read, kind=StepKind.MESSAGE, name="tick",
                          output={"payload": payload, "message": message_id, "by": "bench"}, next_seq=read + 1,
                          created_at=now))
        messages.append(RunMessage(run=run, topic="tick", payload=payload, message_id=message_id, sent_by="bench",
                                   sent_at=now, read_seq=read, read_at=now))
        records.append(ledger.build(run, kind=LedgerKind.MESSAGE_RECEIVED, seq=read, app=app, actor="bench",
                                    body={"topic": "tick", "payload": payload, "by": "bench", "message": message_id}))
    with transaction.atomic():
        Step.objects.bulk_create(steps, batch_size=2000)
        RunMessage.objects.bulk_create(messages, batch_size=2000)
        for record in records:  # one at a time: each links to the one before it in the run's chain
            record.save(force_insert=True)


relay = define_workflow(name="relay", title="A message a round, afresh every few rounds", input=LoopInput,
                        uses=["wait_message"], run=relay_run)
WORKFLOWS = [loop, relay]
