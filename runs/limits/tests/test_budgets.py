"""The budgets in the database: a rate's cursor, a concurrency's slots with their leases, kept start
times, and a vendor's Retry-After; on whichever database the suite runs (SQLite and PostgreSQL)."""
from __future__ import annotations

import threading

import pytest
from django.db import connections

from runs.limits import services
from runs.limits.models import LimitCursor, LimitHold, LimitSlot

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_rate_gives_each_call_its_own_start_one_interval_apart():
    starts = [services.reserve(scope="pay", key="", interval_ms=200, now_ms=1_000) for _ in range(4)]
    assert starts == [1_000, 1_200, 1_400, 1_600]
    # Later, with the budget unspent, a call starts at once.
    assert services.reserve(scope="pay", key="", interval_ms=200, now_ms=5_000) == 5_000
    assert LimitCursor.objects.get(scope="pay", key="").next_at == 5_200


def test_each_key_value_has_its_own_budget():
    assert [services.reserve(scope="pay", key="a", interval_ms=200, now_ms=0) for _ in range(3)] == [0, 200, 400]
    assert services.reserve(scope="pay", key="b", interval_ms=200, now_ms=0) == 0


def test_a_vendors_retry_after_pushes_the_budget_never_back():
    services.reserve(scope="pay", key="", interval_ms=200, now_ms=1_000)
    services.push(scope="pay", key="", until_ms=30_000)
    assert services.reserve(scope="pay", key="", interval_ms=200, now_ms=2_000) == 30_000
    services.push(scope="pay", key="", until_ms=10_000)  # an earlier time leaves it
    assert services.reserve(scope="pay", key="", interval_ms=200, now_ms=2_000) == 30_200
    services.push(scope="new", key="k", until_ms=9_000)  # a budget never drawn from yet
    assert services.reserve(scope="new", key="k", interval_ms=0, now_ms=1_000) == 9_000


def test_threads_on_their_own_connections_never_share_a_start():
    got: list[int] = []
    lock = threading.Lock()

    def draw() -> None:
        try:
            for _ in range(10):
                at = services.reserve(scope="race", key="", interval_ms=10, now_ms=0)
                with lock:
                    got.append(at)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(0, 400, 10))


def test_a_concurrency_gives_out_its_slots_then_none_until_one_is_given_back():
    taken = [services.acquire(scope="pay", key="", slots=2, holder=f"r{i}:1", until_ms=10_000, now_ms=0)
             for i in range(3)]
    assert sorted(t for t in taken[:2] if t is not None) == [0, 1] and taken[2] is None
    assert taken[0] is not None
    services.release(scope="pay", key="", slot=taken[0], holder="r0:1")
    assert services.acquire(scope="pay", key="", slots=2, holder="r2:1", until_ms=10_000, now_ms=0) == taken[0]
    assert LimitSlot.objects.filter(scope="pay", holder="r2:1").count() == 1


def test_a_slot_whose_lease_ended_is_free_and_its_old_holder_cannot_give_it_back():
    slot = services.acquire(scope="pay", key="", slots=1, holder="dead:1", until_ms=5_000, now_ms=0)
    assert slot == 0
    assert services.acquire(scope="pay", key="", slots=1, holder="r:1", until_ms=9_000, now_ms=4_999) is None
    assert services.acquire(scope="pay", key="", slots=1, holder="r:1", until_ms=9_000, now_ms=5_001) == slot
    services.release(scope="pay", key="", slot=slot, holder="dead:1")  # the dead worker's late release
    assert LimitSlot.objects.get(scope="pay", slot=slot).holder == "r:1"


def test_threads_never_hold_more_slots_than_there_are():
    held: list[int] = []
    lock = threading.Lock()

    def take(i: int) -> None:
        try:
            slot = services.acquire(scope="race", key="", slots=3, holder=f"t{i}:1", until_ms=10_000, now_ms=0)
            if slot is not None:
                with lock:
                    held.append(slot)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(held) == [0, 1, 2]


def test_kept_start_times_are_the_callers_own():
    services.keep_holds("r:3", {("pay", ""): 1_000, ("pay.refund.create", "a"): 1_200})
    services.keep_holds("s:1", {("pay", ""): 1_400})
    assert services.holds_of("r:3") == {("pay", ""): 1_000, ("pay.refund.create", "a"): 1_200}
    services.drop_holds("r:3")
    assert services.holds_of("r:3") == {} and LimitHold.objects.count() == 1
