"""./test's two pytest lanes (scripts/suite_lanes.py): every test in exactly one, none dropped."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scripts.suite_lanes import (
    BOTH,
    DATABASE_NEEDLES,
    LANES,
    ONE_SUITE_FILES,
    SUITES,
    WAIT_FILES,
    WAITS,
    WORK,
    lane_of,
    split,
    suite_of,
)

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
    Item("sanoma_site/tests/test_docs.py::test_page[tutorial/first-company.md]"),
    Item("sanoma_site/tests/test_docs.py::test_links"),
    Item("runs/tests/test_startcompany.py::TestIt::test_it", ("django_db",)),
    Item("runs/tests/test_models.py::test_a_model", ("parametrize",)),
    Item("runs/tests/test_replay_command.py::test_a_short_command", ("django_db",)),
]


def test_a_test_waits_when_marked_process_or_browser_uses_chromium_or_is_in_a_waiting_file():
    assert [lane_of(i.nodeid, i.marks, i.fixturenames) for i in ITEMS] == [
        WORK, WAITS, WAITS, WAITS, WORK, WAITS, WAITS, WAITS, WORK, WORK]


def test_the_docs_pages_are_spread_over_both_lanes_by_a_hash_of_the_page():
    pages = [f"sanoma_site/tests/test_docs.py::test_the_page_runs_as_written[guides/{n}.md]" for n in range(40)]
    lanes = [lane_of(page, (), ()) for page in pages]
    assert lanes == [lane_of(page, (), ()) for page in pages]  # the same page, the same lane, every run
    assert 10 <= lanes.count(WAITS) <= 30


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


# ---- which suite runs a test --------------------------------------------------------------------

PLAIN = "def test_it():\n    assert 1 + 1 == 2\n"


def test_a_test_with_a_database_mark_or_fixture_runs_on_both_suites():
    assert suite_of("runs/tests/test_calls.py::test_a_call", ["django_db"], [], PLAIN) == BOTH
    assert suite_of("runs/tests/test_calls.py::test_b", [], ["request", "_django_db_helper"], PLAIN) == BOTH
    assert suite_of("runs/tests/test_calls.py::test_c", [], ["live_server"], PLAIN) == BOTH


def test_a_test_without_the_database_runs_on_one_suite_fixed_by_its_file():
    homes = {suite_of(f"runs/tests/test_{name}.py::test_it", ["parametrize"], ["request", "django_db_blocker"], PLAIN)
             for name in ("a", "b", "c", "d", "e", "f")}
    assert homes == set(SUITES)  # the files share the suites out
    one = {suite_of(f"runs/tests/test_a.py::test_{n}", [], [], PLAIN) for n in range(10)}
    assert len(one) == 1  # a module's tests (and its fixtures) stay together


@pytest.mark.parametrize("needle", DATABASE_NEEDLES)
def test_a_file_that_may_reach_the_suites_database_otherwise_runs_on_both(needle):
    source = f"import os\n\n\ndef test_it():\n    print({needle!r})\n".replace(repr(needle), needle)
    assert suite_of("runs/tests/test_a.py::test_it", [], [], source) == BOTH


def test_a_skip_mark_keeps_a_test_on_both_unless_its_file_was_read():
    assert suite_of("runs/tests/test_a.py::test_it", ["skipif"], [], PLAIN) == BOTH
    read = "sanoma_site/tests/test_demo.py"
    assert suite_of(f"{read}::test_it", ["skipif"], [], "os.environ  DATABASE_URL") in SUITES


def test_every_file_read_for_one_suite_is_a_test_file_here_and_holds_a_needle_or_a_mark():
    missing = sorted(path for path in ONE_SUITE_FILES if not (REPO / path).is_file())
    assert not missing, f"scripts/suite_lanes.py names test files that are gone: {missing}"
    for path in ONE_SUITE_FILES:
        text = (REPO / path).read_text(encoding="utf-8")
        assert any(needle in text for needle in DATABASE_NEEDLES) or "skip" in text, path


def test_the_docs_pages_run_once_each_spread_over_both_suites_and_within_each_over_both_lanes():
    """Each page on one suite (the pages' commands use a SQLite file of their own), about half on each,
    and each lane's pages on both suites; the file's other tests stay on both (they name DATABASE_URL)."""
    text = (REPO / "sanoma_site/tests/test_docs.py").read_text(encoding="utf-8")
    assert "sanoma_site/tests/test_docs.py" not in ONE_SUITE_FILES
    pages = [f"sanoma_site/tests/test_docs.py::test_the_page_runs_as_written[guides/{n}.md]" for n in range(40)]
    homes = [suite_of(page, ["parametrize"], ["tmp_path"], text) for page in pages]
    assert homes == [suite_of(page, ["parametrize"], ["tmp_path"], text) for page in pages]  # fixed per page
    assert set(homes) <= set(SUITES) and 10 <= homes.count("sqlite") <= 30
    for lane in LANES:
        assert {home for page, home in zip(pages, homes, strict=True) if lane_of(page, (), ()) == lane} == set(SUITES)
    assert suite_of("sanoma_site/tests/test_docs.py::test_the_pages_with_tested_blocks_are_found", [], [],
                    text) == BOTH
