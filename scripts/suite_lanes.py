"""The two lanes of one database's pytest in `./test`: each runs in a pytest process of its own, the
two side by side, so the tests that mostly wait (on the processes they start, a browser, a server)
overlap the tests that keep a core busy in-process.

- `waits`: a test marked `process` or `browser`, one that uses the session's Chromium, or one in a
  file of `WAIT_FILES` (they start `manage.py`, git, a server or a whole company in processes of
  their own without carrying the mark);
- `work`: every other test.

Every collected test is in exactly one lane (`lane_of` decides it from the test alone), so the two
lanes together run what one pytest would. Each lane has a test database and a var folder of its own
(`./test` sets `SANOMA_TEST_DB_SUFFIX` and `SANOMA_VAR_DIR`; the root conftest reads them).
`SANOMA_LANE` unset (pytest run by hand): nothing is deselected.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

WAITS = "waits"
WORK = "work"
LANES = (WAITS, WORK)
WAIT_MARKS = frozenset({"process", "browser"})
WAIT_FIXTURES = frozenset({"shared_chromium", "live_server"})
# Test files whose tests wait on processes, servers or many git commands, unmarked (their tests
# are not all `process`-marked: they start `manage.py` or a company's checks as a subprocess).
WAIT_FILES = frozenset({
    "changes/lifecycle/tests/test_change_in_flight.py",
    "changes/lifecycle/tests/test_change_surfaces.py",
    "changes/tests/test_desk_state.py",
    "changes/tests/test_no_worker.py",
    "features/tests/test_scenario_traps.py",
    "runs/tests/test_replay_command.py",
    "runs/tests/test_rejudge_command.py",
    "runs/tests/test_startcompany.py",
    "sanoma_site/tests/test_demo.py",
    "sanoma_site/tests/test_docs.py",
})


def lane_of(nodeid: str, marks: Iterable[str], fixtures: Iterable[str]) -> str:
    """The lane of one test, from its node id (`path::name`), its marks' names and its fixtures."""
    path = nodeid.split("::", 1)[0]
    if WAIT_MARKS.intersection(marks) or WAIT_FIXTURES.intersection(fixtures) or path in WAIT_FILES:
        return WAITS
    return WORK


def lane_of_item(item: Any) -> str:
    """The lane of a collected pytest item."""
    return lane_of(item.nodeid, (mark.name for mark in item.iter_markers()),
                   getattr(item, "fixturenames", ()))


def split(items: Sequence[Any], lane: str) -> tuple[list[Any], list[Any]]:
    """(the items in `lane`, the others); `lane` must be one of LANES."""
    if lane not in LANES:
        raise ValueError(f"SANOMA_LANE={lane!r}: a lane is one of {', '.join(LANES)}")
    kept: list[Any] = []
    other: list[Any] = []
    for item in items:
        (kept if lane_of_item(item) == lane else other).append(item)
    return kept, other
