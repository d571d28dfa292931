"""./test's two pytest lanes (scripts/suite_lanes.py): every test in exactly one, none dropped."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scripts.suite_lanes import LANES, WAIT_FILES, WAITS, WORK, lane_of, split

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Mark:
    name: str


@dataclass
class Item:
    nodeid: str
    marks: tuple[str, ...] = ()
    fixturenames: tuple[str, ...] = ()
    _marks: list[Mark] = field(init=False)

    def __post_init__(self) -> None:
        self._marks = [Mark(name) for name in self.marks]

    def iter_markers(self) -> list[Mark]:
        return self._marks


ITEMS = [
    Item("runs/tests/test_calls.py::test_a_call", ("django_db",)),
    Item("wakeups/tests/test_worker.py::test_the_worker", ("process", "django_db")),
    Item("runs/tests/test_desk_browser.py::test_page[1200]", ("browser", "skipif")),
    Item("runs/tests/test_other.py::test_uses_chromium", (), ("browser", "shared_chromium")),
    Item("sanoma_site/tests/test_docs.py::test_page[index.md]"),
    Item("runs/tests/test_replay_command.py::TestReplay::test_it", ("django_db",)),
    Item("runs/tests/test_models.py::test_a_model", ("parametrize",)),
]


def test_a_test_waits_when_marked_process_or_browser_uses_chromium_or_is_in_a_waiting_file():
    assert [lane_of(i.nodeid, i.marks, i.fixturenames) for i in ITEMS] == [
        WORK, WAITS, WAITS, WAITS, WAITS, WAITS, WORK]


def test_the_two_lanes_split_the_tests_without_dropping_or_repeating_one():
    waits, not_waits = split(ITEMS, WAITS)
    work, not_work = split(ITEMS, WORK)
    assert [i.nodeid for i in waits] == [i.nodeid for i in not_work]
    assert [i.nodeid for i in work] == [i.nodeid for i in not_waits]
    assert sorted(i.nodeid for i in waits + work) == sorted(i.nodeid for i in ITEMS)
    assert not {i.nodeid for i in waits} & {i.nodeid for i in work}


def test_an_unknown_lane_is_refused_by_name():
    with pytest.raises(ValueError, match="SANOMA_LANE='fast'"):
        split(ITEMS, "fast")
    assert LANES == (WAITS, WORK)


def test_every_waiting_file_named_is_a_test_file_here():
    missing = sorted(path for path in WAIT_FILES if not (REPO / path).is_file())
    assert not missing, f"scripts/suite_lanes.py names test files that are gone: {missing}"
