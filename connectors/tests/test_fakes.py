"""Fakes behave like vendors: idempotency keys, faults, state, file sharing across processes."""
from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.fakes import CallLog, Fake, OpFn, define_fake
from connectors.operations import define_connector, op

REFUND = "shop.order.refund"
GET = "shop.order.get"


class RefundIn(BaseModel):
    order_id: str
    amount_cents: int = Field(gt=0)


class Refund(BaseModel):
    refund_id: str
    order_id: str
    amount_cents: int


class GetIn(BaseModel):
    order_id: str


class Order(BaseModel):
    order_id: str
    total_cents: int
    refunded_cents: int


SHOP = define_connector(
    "shop",
    {
        "order": {
            "refund": op(effect="money", input=RefundIn, output=Refund),
            "get": op(effect="read", input=GetIn, output=Order, idempotent=True),
        }
    },
)


def initial_state() -> dict[str, Any]:
    return {
        "orders": {
            "o1": {"total_cents": 5000, "refunded_cents": 0},
            "big": {"total_cents": 10**9, "refunded_cents": 0},
        },
        "refunds": [],
        "next_refund": 0,
    }


def refund(state: dict, inp: RefundIn, ctx: CallContext) -> Refund:
    state["next_refund"] += 1  # numbered before the checks, so a refused refund must roll it back
    order = state["orders"].get(inp.order_id)
    if order is None:
        raise DriverError(f"no order {inp.order_id}", retryable=False, status=404, vendor_code="not_found")
    if order["refunded_cents"] + inp.amount_cents > order["total_cents"]:
        raise DriverError("refund exceeds the order total", retryable=False, status=422, vendor_code="too_large")
    order["refunded_cents"] += inp.amount_cents
    refund_id = f"re_{state['next_refund']}"
    state["refunds"].append({"id": refund_id, "order_id": inp.order_id, "key": ctx.idempotency_key})
    return Refund(refund_id=refund_id, order_id=inp.order_id, amount_cents=inp.amount_cents)


def get(state: dict, inp: GetIn, ctx: CallContext) -> dict:
    order = state["orders"].get(inp.order_id)
    if order is None:
        raise DriverError(f"no order {inp.order_id}", retryable=False, status=404, vendor_code="not_found")
    return {"order_id": inp.order_id, **order}


OPS: dict[str, dict[str, OpFn[Any]]] = {"order": {"refund": refund, "get": get}}


def make_fake(**options: Any) -> Fake:
    return define_fake(SHOP, initial=initial_state, ops=OPS, **options)


def context(key: str, op_id: str = REFUND, attempt: int = 1) -> CallContext:
    return CallContext(idempotency_key=key, run_id=key.split(":")[0], op_id=op_id, attempt=attempt)


def refund_call(fake: Fake, key: str, amount: int = 1000, order: str = "o1", attempt: int = 1) -> dict:
    return fake.call(REFUND, RefundIn(order_id=order, amount_cents=amount), context(key, REFUND, attempt))


def get_call(fake: Fake, key: str, order: str = "o1", attempt: int = 1) -> dict:
    return fake.call(GET, GetIn(order_id=order), context(key, GET, attempt))


def refunded(fake: Fake, order: str = "o1") -> int:
    return fake.state["orders"][order]["refunded_cents"]


def outcomes(fake: Fake) -> list[tuple[str, str, str]]:
    return [(c["op"], c["idempotency_key"], c["outcome"]) for c in fake.calls]


# --- acceptance checks 96-98 -------------------------------------------------------------------


def test_same_key_twice_returns_the_first_reply_and_changes_state_once() -> None:
    fake = make_fake()
    first = refund_call(fake, "run-1:1")
    second = refund_call(fake, "run-1:1", attempt=2)

    assert first == {"refund_id": "re_1", "order_id": "o1", "amount_cents": 1000}
    assert second == first
    assert refunded(fake) == 1000
    assert len(fake.state["refunds"]) == 1
    assert outcomes(fake) == [(REFUND, "run-1:1", "ok"), (REFUND, "run-1:1", "repeat")]
    assert [c["attempt"] for c in fake.calls] == [1, 2]


def test_rate_limited_try_then_success_with_one_key() -> None:
    fake = make_fake()
    fake.rate_limit(GET)

    with pytest.raises(DriverError) as raised:
        get_call(fake, "run-1:1", attempt=1)
    assert raised.value.status == 429
    assert raised.value.vendor_code == "rate_limited"
    assert raised.value.retryable is True
    assert raised.value.code == "driver_failed"

    assert get_call(fake, "run-1:1", attempt=2) == {
        "order_id": "o1",
        "total_cents": 5000,
        "refunded_cents": 0,
    }
    assert [(c["idempotency_key"], c["attempt"], c["outcome"]) for c in fake.calls] == [
        ("run-1:1", 1, "error"),
        ("run-1:1", 2, "ok"),
    ]
    assert "rate limited" in fake.calls[0]["error"]


@pytest.mark.parametrize("inject", ["fail_next", "lose_reply", "rate_limit", "hold"])
def test_fault_on_an_unknown_operation_is_refused(inject: str) -> None:
    fake = make_fake()
    with pytest.raises(ValueError) as raised:
        getattr(fake, inject)("shop.nope.x")
    assert str(raised.value) == "fake shop: no operation shop.nope.x"


def test_calling_an_unknown_operation_is_refused() -> None:
    fake = make_fake()
    with pytest.raises(ValueError, match="^fake shop: no operation shop.nope.x$"):
        fake.call("shop.nope.x", GetIn(order_id="o1"), context("run-1:1", "shop.nope.x"))
    assert fake.calls == []


# --- faults ------------------------------------------------------------------------------------


def test_fail_next_throws_a_retryable_driver_error_without_effect_and_the_key_can_be_retried() -> None:
    fake = make_fake()
    fake.fail_next(REFUND)

    with pytest.raises(DriverError) as raised:
        refund_call(fake, "run-1:1")
    assert raised.value.retryable is True
    assert refunded(fake) == 0
    assert fake.state["next_refund"] == 0

    # A failure is not remembered: the retry with the same key takes effect.
    assert refund_call(fake, "run-1:1", attempt=2)["refund_id"] == "re_1"
    assert refunded(fake) == 1000
    assert outcomes(fake) == [(REFUND, "run-1:1", "error"), (REFUND, "run-1:1", "ok")]


def test_fail_next_throws_the_given_error() -> None:
    fake = make_fake()
    declined = DriverError("card declined", retryable=False, status=402, vendor_code="card_declined")
    fake.fail_next(REFUND, declined)

    with pytest.raises(DriverError) as raised:
        refund_call(fake, "run-1:1")
    assert raised.value is declined
    assert refunded(fake) == 0
    assert fake.calls[0]["outcome"] == "error"
    assert fake.calls[0]["error"] == "card declined"


def test_fail_next_runs_before_the_repeat_check() -> None:
    fake = make_fake()
    first = refund_call(fake, "run-1:1")
    fake.fail_next(REFUND)
    with pytest.raises(DriverError):
        refund_call(fake, "run-1:1", attempt=2)
    assert refund_call(fake, "run-1:1", attempt=3) == first
    assert outcomes(fake) == [(REFUND, "run-1:1", "ok"), (REFUND, "run-1:1", "error"), (REFUND, "run-1:1", "repeat")]
    assert refunded(fake) == 1000


def test_lose_reply_takes_effect_once_and_the_retry_gets_the_remembered_reply() -> None:
    fake = make_fake()
    fake.lose_reply(REFUND)

    with pytest.raises(DriverError) as raised:
        refund_call(fake, "run-1:1")
    assert raised.value.retryable is True
    assert refunded(fake) == 1000  # it happened, the caller just never heard

    retry = refund_call(fake, "run-1:1", attempt=2)
    assert retry == {"refund_id": "re_1", "order_id": "o1", "amount_cents": 1000}
    assert refunded(fake) == 1000
    assert [r["id"] for r in fake.state["refunds"]] == ["re_1"]
    assert outcomes(fake) == [(REFUND, "run-1:1", "error"), (REFUND, "run-1:1", "repeat")]


def test_faults_queue_per_operation() -> None:
    fake = make_fake()
    fake.fail_next(REFUND)
    fake.fail_next(REFUND, TimeoutError("vendor too slow"))
    fake.rate_limit(REFUND)

    with pytest.raises(DriverError):
        refund_call(fake, "run-1:1")
    assert get_call(fake, "run-1:2")["refunded_cents"] == 0  # other ops are not affected
    with pytest.raises(TimeoutError, match="vendor too slow"):
        refund_call(fake, "run-1:1", attempt=2)
    with pytest.raises(DriverError) as raised:
        refund_call(fake, "run-1:1", attempt=3)
    assert raised.value.status == 429
    assert refunded(fake) == 0

    refund_call(fake, "run-1:1", attempt=4)
    assert refunded(fake) == 1000
    assert [c["outcome"] for c in fake.calls] == ["error", "ok", "error", "error", "ok"]


def test_hold_blocks_the_next_call_until_released_while_other_calls_go_on() -> None:
    fake = make_fake()
    release = fake.hold(REFUND)
    replies: list[dict] = []
    held = threading.Thread(target=lambda: replies.append(refund_call(fake, "run-1:1")))
    held.start()
    held.join(0.2)

    assert held.is_alive()
    assert refunded(fake) == 0
    assert fake.calls == []
    # The held call does not block the fake: other calls, even of the same op, go through.
    assert get_call(fake, "run-2:1")["refunded_cents"] == 0
    assert refund_call(fake, "run-3:1", amount=500)["refund_id"] == "re_1"

    release()
    held.join(5)
    assert not held.is_alive()
    assert replies == [{"refund_id": "re_2", "order_id": "o1", "amount_cents": 1000}]
    assert refunded(fake) == 1500
    assert outcomes(fake) == [(GET, "run-2:1", "ok"), (REFUND, "run-3:1", "ok"), (REFUND, "run-1:1", "ok")]


def test_a_held_call_then_meets_the_next_queued_fault() -> None:
    fake = make_fake()
    release = fake.hold(REFUND)
    fake.fail_next(REFUND)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            refund_call(fake, "run-1:1")
        except DriverError as err:
            errors.append(err)

    held = threading.Thread(target=call)
    held.start()
    held.join(0.1)
    assert held.is_alive()
    release()
    held.join(5)
    assert len(errors) == 1
    assert refunded(fake) == 0


# --- op functions ------------------------------------------------------------------------------


def test_an_op_that_raises_changes_nothing_and_the_error_is_logged() -> None:
    fake = make_fake()
    with pytest.raises(DriverError) as raised:
        refund_call(fake, "run-1:1", amount=9999)
    assert raised.value.status == 422
    assert fake.state == initial_state()  # the refund number taken before the check is rolled back
    assert fake.calls[0]["outcome"] == "error"
    assert fake.calls[0]["error"] == "refund exceeds the order total"

    # Errors are not remembered: the same key with a valid amount later takes effect.
    assert refund_call(fake, "run-1:1", amount=100)["refund_id"] == "re_1"


def test_an_op_leaving_state_that_is_not_json_is_refused_and_rolled_back() -> None:
    def stamp(state: dict, inp: RefundIn, ctx: CallContext) -> dict:
        state["orders"][inp.order_id]["refunded_at"] = datetime.now(UTC)
        return {"ok": True}

    fake = define_fake(SHOP, initial=initial_state, ops={"order": {"refund": stamp, "get": get}})
    with pytest.raises(TypeError, match=r"state\.orders\.o1\.refunded_at is a datetime"):
        refund_call(fake, "run-1:1")
    assert fake.state == initial_state()
    assert fake.calls[0]["outcome"] == "error"


def test_a_model_reply_comes_back_as_a_json_dict_and_input_may_be_a_dict() -> None:
    fake = make_fake()
    reply = fake.call(REFUND, {"order_id": "o1", "amount_cents": 250}, context("run-1:1"))
    assert reply == {"refund_id": "re_1", "order_id": "o1", "amount_cents": 250}
    assert type(reply) is dict
    assert fake.calls[0]["input"] == {"order_id": "o1", "amount_cents": 250}


def test_replies_and_state_are_copies_callers_cannot_change() -> None:
    fake = make_fake()
    reply = refund_call(fake, "run-1:1")
    reply["amount_cents"] = 1
    state = fake.state
    state["orders"]["o1"]["refunded_cents"] = 4999
    calls = fake.calls
    calls[0]["outcome"] = "tampered"

    assert refund_call(fake, "run-1:1")["amount_cents"] == 1000
    assert refunded(fake) == 1000
    assert fake.calls[0]["outcome"] == "ok"


def test_the_call_log_records_op_input_time_key_and_attempt() -> None:
    fake = make_fake()
    before = datetime.now(UTC)
    get_call(fake, "run-7:3", attempt=2)
    (entry,) = fake.calls

    assert entry["op"] == GET
    assert entry["input"] == {"order_id": "o1"}
    assert entry["idempotency_key"] == "run-7:3"
    assert entry["attempt"] == 2
    assert entry["outcome"] == "ok"
    assert "error" not in entry
    assert entry["at"].endswith("Z")
    at = datetime.fromisoformat(entry["at"])
    assert before - timedelta(seconds=1) <= at <= datetime.now(UTC) + timedelta(seconds=1)


def test_the_driver_routes_calls_through_the_fake() -> None:
    fake = make_fake()
    assert fake.driver.vendor == "shop"
    assert set(fake.driver.functions) == {REFUND, GET}

    reply = fake.driver.call(REFUND, RefundIn(order_id="o1", amount_cents=300), context("run-1:1"))
    again = fake.driver.call(REFUND, RefundIn(order_id="o1", amount_cents=300), context("run-1:1"))
    assert reply == again == {"refund_id": "re_1", "order_id": "o1", "amount_cents": 300}
    assert refunded(fake) == 300
    assert outcomes(fake) == [(REFUND, "run-1:1", "ok"), (REFUND, "run-1:1", "repeat")]


# --- reset, update, fresh ----------------------------------------------------------------------


def test_reset_restores_state_and_forgets_replies_faults_and_calls() -> None:
    fake = make_fake()
    refund_call(fake, "run-1:1")
    fake.update(lambda s: s["orders"].pop("big"))
    fake.fail_next(GET)
    fake.reset()

    assert fake.state == initial_state()
    assert fake.calls == []
    assert get_call(fake, "run-2:1")["refunded_cents"] == 0  # the pending fault is gone
    # The remembered reply is gone too: the old key takes effect again.
    refund_call(fake, "run-1:1")
    assert refunded(fake) == 1000
    assert outcomes(fake) == [(GET, "run-2:1", "ok"), (REFUND, "run-1:1", "ok")]


def test_update_edits_state_like_someone_at_the_vendor() -> None:
    fake = make_fake()
    fake.update(lambda s: s["orders"]["o1"].update(total_cents=500))
    with pytest.raises(DriverError, match="exceeds"):
        refund_call(fake, "run-1:1", amount=1000)

    fake.update(lambda s: {**s, "orders": {"o9": {"total_cents": 10, "refunded_cents": 0}}})
    assert get_call(fake, "run-2:1", order="o9")["total_cents"] == 10
    assert [c["op"] for c in fake.calls] == [REFUND, GET]  # updates are not calls

    def broken(state: dict) -> None:
        state["orders"].clear()
        raise RuntimeError("typo")

    with pytest.raises(RuntimeError):
        fake.update(broken)
    assert set(fake.state["orders"]) == {"o9"}

    with pytest.raises(TypeError, match="not JSON-safe"):
        fake.update(lambda s: s.update(when={1, 2}))
    assert "when" not in fake.state


def test_fresh_is_a_new_copy_sharing_nothing(tmp_path: Path) -> None:
    fake = make_fake(file=tmp_path / "shop.json")
    refund_call(fake, "run-1:1")
    fake.fail_next(GET)

    copy = fake.fresh()
    assert copy is not fake
    assert copy.file is None
    assert copy.state == initial_state()
    assert copy.calls == []
    assert get_call(copy, "run-2:1")["refunded_cents"] == 0  # no inherited fault
    refund_call(copy, "run-1:1", amount=200)  # no inherited remembered reply
    assert refunded(copy) == 200

    assert refunded(fake) == 1000
    assert len(fake.calls) == 1
    with pytest.raises(DriverError):
        get_call(fake, "run-3:1")


def test_initial_may_be_a_dict_the_caller_can_no_longer_change() -> None:
    initial = initial_state()
    fake = define_fake(SHOP, initial=initial, ops=OPS)
    initial["orders"].clear()
    refund_call(fake, "run-1:1")
    fake.reset()
    assert fake.state == initial_state()


def test_a_fake_must_implement_every_operation_and_nothing_else() -> None:
    def cancel(state: dict, inp: BaseModel, ctx: CallContext) -> dict:
        return {}

    with pytest.raises(ValueError) as raised:
        define_fake(SHOP, initial={}, ops={"order": {"refund": refund, "cancel": cancel}})
    message = str(raised.value)
    assert message.startswith("A fake for shop must implement every declared operation")
    assert "missing shop.order.get" in message
    assert "not declared by the connector: shop.order.cancel" in message


# --- several fakes -----------------------------------------------------------------------------


class SendIn(BaseModel):
    to: str


class Sent(BaseModel):
    id: str


MAIL = define_connector("mail", {"message": {"send": op(effect="send", input=SendIn, output=Sent)}})


def send(state: dict, inp: SendIn, ctx: CallContext) -> Sent:
    state["sent"].append(inp.to)
    return Sent(id=f"m{len(state['sent'])}")


def test_a_shared_call_log_keeps_the_order_across_vendors() -> None:
    log = CallLog()
    shop = make_fake(calls=log)
    mail = define_fake(MAIL, initial={"sent": []}, ops={"message": {"send": send}}, calls=log)

    refund_call(shop, "run-1:1")
    mail.call("mail.message.send", SendIn(to="ann@example.com"), context("run-1:2", "mail.message.send"))
    get_call(shop, "run-1:3")

    assert [c["op"] for c in log.entries] == [REFUND, "mail.message.send", GET]
    assert [c["op"] for c in shop.calls] == [REFUND, GET]
    assert [c["op"] for c in mail.calls] == ["mail.message.send"]

    shop.reset()
    assert [c["op"] for c in log.entries] == ["mail.message.send"]
    assert shop.calls == []


def test_threads_calling_one_in_memory_fake_take_effect_once_per_key() -> None:
    fake = make_fake()

    def worker(index: int) -> None:
        for n in range(20):
            refund_call(fake, f"t{index}:{n}", amount=1, order="big")
        for n in range(10):
            refund_call(fake, f"shared:{n}", amount=1, order="big")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert refunded(fake, "big") == 8 * 20 + 10
    assert Counter(c["outcome"] for c in fake.calls) == {"ok": 170, "repeat": 70}


# --- file mode ---------------------------------------------------------------------------------


def test_a_missing_file_starts_from_initial(tmp_path: Path) -> None:
    path = tmp_path / "shop.json"
    fake = make_fake(file=path)
    assert fake.state == initial_state()
    assert fake.calls == []
    refund_call(fake, "run-1:1")
    assert path.exists()


def test_two_fakes_on_one_file_see_each_others_state_calls_replies_and_faults(tmp_path: Path) -> None:
    path = tmp_path / "shop.json"
    a = make_fake(file=path)
    b = make_fake(file=path)

    first = refund_call(a, "run-1:1")
    assert refunded(b) == 1000
    assert outcomes(b) == [(REFUND, "run-1:1", "ok")]

    assert refund_call(b, "run-1:1", attempt=2) == first  # the reply remembered by a
    assert refunded(a) == 1000

    a.rate_limit(GET)
    with pytest.raises(DriverError) as raised:
        get_call(b, "run-2:1")
    assert raised.value.status == 429

    b.update(lambda s: s["orders"]["o1"].update(total_cents=1500))
    assert a.state["orders"]["o1"]["total_cents"] == 1500
    assert outcomes(a) == [(REFUND, "run-1:1", "ok"), (REFUND, "run-1:1", "repeat"), (GET, "run-2:1", "error")]

    restarted = make_fake(file=path)
    assert restarted.state == a.state
    assert refund_call(restarted, "run-1:1", attempt=3) == first
    assert len(restarted.calls) == 4

    a.reset()
    assert b.state == initial_state()
    assert b.calls == []


def test_file_faults_carry_their_error_to_other_fakes(tmp_path: Path) -> None:
    path = tmp_path / "shop.json"
    a = make_fake(file=path)
    b = make_fake(file=path)
    a.fail_next(REFUND, DriverError("card declined", retryable=False, status=402, vendor_code="card_declined"))
    a.fail_next(REFUND, TimeoutError("vendor too slow"))
    a.lose_reply(REFUND)

    with pytest.raises(DriverError) as raised:
        refund_call(b, "run-1:1")
    assert (str(raised.value), raised.value.retryable, raised.value.status, raised.value.vendor_code) == (
        "card declined",
        False,
        402,
        "card_declined",
    )
    with pytest.raises(TimeoutError, match="vendor too slow"):
        refund_call(b, "run-1:1")
    with pytest.raises(DriverError, match="lost"):
        refund_call(b, "run-1:1")
    assert refund_call(a, "run-1:1")["refund_id"] == "re_1"
    assert refunded(a) == 1000
    assert [c["outcome"] for c in a.calls] == ["error", "error", "error", "repeat"]


def test_a_file_fake_also_writes_to_a_shared_call_log(tmp_path: Path) -> None:
    log = CallLog()
    fake = make_fake(file=tmp_path / "shop.json", calls=log)
    refund_call(fake, "run-1:1")
    assert [c["op"] for c in log.entries] == [REFUND]
    assert [c["op"] for c in fake.calls] == [REFUND]


def test_a_file_of_another_vendor_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vendor.json"
    mail = define_fake(MAIL, initial={"sent": []}, ops={"message": {"send": send}}, file=path)
    mail.call("mail.message.send", SendIn(to="ann@example.com"), context("run-1:1", "mail.message.send"))
    with pytest.raises(ValueError, match="not this fake's file"):
        _ = make_fake(file=path).state


def _process_worker(path: str, index: int) -> list[tuple[str, dict]]:
    fake = make_fake(file=path)
    replies = []
    for n in range(25):
        # Every fifth call uses one of five keys all processes share, each process in its own order.
        key = f"shared:{(n // 5 + index) % 5}" if n % 5 == 0 else f"p{index}:{n}"
        replies.append((key, refund_call(fake, key, amount=1, order="big")))
    return replies


def test_processes_sharing_a_file_take_effect_exactly_once_per_key(tmp_path: Path) -> None:
    path = tmp_path / "shop.json"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(_process_worker, [(str(path), i) for i in range(4)])

    keys = [key for replies in results for key, _ in replies]
    distinct = set(keys)
    assert len(keys) == 100
    assert len(distinct) == 4 * 20 + 5
    fake = make_fake(file=path)
    assert refunded(fake, "big") == len(distinct)
    assert sorted(r["key"] for r in fake.state["refunds"]) == sorted(distinct)
    assert len({r["id"] for r in fake.state["refunds"]}) == len(distinct)
    assert Counter(c["outcome"] for c in fake.calls) == {"ok": len(distinct), "repeat": 100 - len(distinct)}

    by_key: dict[str, list[dict]] = {}
    for replies in results:
        for key, reply in replies:
            by_key.setdefault(key, []).append(reply)
    assert all(len({r["refund_id"] for r in seen}) == 1 for seen in by_key.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shop.json", "shop.json.lock"]
