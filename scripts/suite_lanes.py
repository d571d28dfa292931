"""The two lanes of one database's pytest in `./test`: each runs in a pytest process of its own, the
two side by side, so the tests that mostly wait (on the processes they start, a browser, a server)
overlap the tests that keep a core busy in-process.

- `waits`: a test marked `process` or `browser`, one that uses the session's Chromium, or one in a
  file of `WAIT_FILES` (they start `manage.py`, a server or a whole company in processes of their own
  and wait on them without carrying the mark);
- `work`: every other test, among them the files of short commands (`manage.py replay`, `rejudge`,
  `behave`, git) run one after another: their processes keep a core busy while the test waits, so
  they are work, and in the `waits` lane they made it the long pole of `./test`.

Every collected test is in exactly one lane (`lane_of` decides it from the test alone), so the two
lanes together run what one pytest would. Each lane has a test database and a var folder of its own
(`./test` sets `SANOMA_TEST_DB_SUFFIX` and `SANOMA_VAR_DIR`; the root conftest reads them).
`SANOMA_LANE` unset (pytest run by hand): nothing is deselected.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

WAITS = "waits"
WORK = "work"
LANES = (WAITS, WORK)
WAIT_MARKS = frozenset({"process", "browser"})
WAIT_FIXTURES = frozenset({"shared_chromium", "live_server"})
# Test files whose tests wait on processes or servers, unmarked (their tests are not all
# `process`-marked: they start `manage.py`, a demo or a company's checks as a subprocess). A file whose
# processes are short commands run one after another (each as much CPU as wall time) is `work`:
# `manage.py replay`'s and `rejudge`'s tests, the scenario traps' behave runs, the changes' git and
# desk state took 60 to 80 s of CPU per database out of the `waits` lane (docs/architecture/testing.md).
WAIT_FILES = frozenset({
    "changes/lifecycle/tests/test_change_in_flight.py",
    "changes/tests/test_no_worker.py",
    "runs/tests/test_startcompany.py",
    "sanoma_site/tests/test_demo.py",
    "sanoma_site/tests/test_docs.py",
})


# Files of one parametrized test whose cases are many and long (the docs' pages: each a shell session
# of `manage.py` processes, a third of the SQLite suite's `waits` lane): their cases are spread over
# both lanes by a hash of the case, so neither lane waits on all of them.
SPLIT_FILES = frozenset({"sanoma_site/tests/test_docs.py"})


def lane_of(nodeid: str, marks: Iterable[str], fixtures: Iterable[str]) -> str:
    """The lane of one test, from its node id (`path::name`), its marks' names and its fixtures."""
    path, _, name = nodeid.partition("::")
    if WAIT_MARKS.intersection(marks) or WAIT_FIXTURES.intersection(fixtures):
        return WAITS
    if path in SPLIT_FILES and "[" in name:
        return (WAITS, WORK)[zlib.crc32(name.encode()) % 2]
    if path in WAIT_FILES:
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


# ---- which suite runs a test ---------------------------------------------------------------------
#
# `./test` runs pytest twice, once per database (SANOMA_SUITE: sqlite, postgresql). A test that uses
# no database of the suite (no `django_db` mark, no database fixture) does the same thing on either:
# it runs on one of them (its home, fixed by a hash of its file, so a module's fixtures are set up
# once), and the other suite skips it saying where it ran. A test stays on both when its file reaches
# for the suite's database another way: it reads which database it is (`django.db.connection`), hands
# the environment's DATABASE_URL to what it starts, or starts a worker or behave on it (needles below),
# or when it carries a skip mark (whose condition may name the database). Files whose needles and
# marks were read and found not to depend on the suite are named in `ONE_SUITE_FILES` (each with why).
SUITES = ("sqlite", "postgresql")
BOTH = "both"
DATABASE_MARKS = frozenset({"django_db"})
DATABASE_FIXTURES = frozenset({
    "_django_db_helper", "db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
    "live_server",
})
KEEP_MARKS = frozenset({"skip", "skipif", "xfail"})
# Text in a test file that can reach the suite's database without a database fixture.
DATABASE_NEEDLES = (
    "connection",  # django.db's connection(s): which database, its settings, its URL
    "DATABASE_URL", "DATABASES",  # read from the environment or the settings
    "os.environ",  # the environment handed to a process it starts
    "features.tests.support",  # behave run on the suite's database
    "runs.tests.processes",  # a worker on the test database
    "django_db_blocker",  # database access unblocked by hand (pytest-django asks for it in every test)
)
# Files that hold a needle or a skip mark and were read: their tests without a database fixture give
# every process they start an environment without the suite's database, or read the needle for
# something else, and skip on what the machine lacks (/proc, Linux), never on the database.
ONE_SUITE_FILES = {
    "sanoma_site/tests/test_demo.py": "the demo runs on a SQLite file of its own (DATABASE_URL removed)",
    "runs/tests/test_startcompany.py": "its commands run with SANOMA_*, DJANGO_*, DATABASE_* removed",
    "sanoma_site/tests/test_settings.py": "settings read in a clean environment (the clean_environ fixture); "
                                          "its connections are to databases it names itself",
    "changes/lifecycle/remotes/tests/test_git.py": "os.environ only for git's author and committer",
    "bench/engine_bench/tests/test_scale_others.py": "a made-up DATABASE_URL handed to a probe script",
    "runs/tests/test_lint.py": "os.environ is text in the workflows it lints",
    "runs/tests/test_lint_checks.py": "os.environ is text in the workflows it lints",
    "changes/tests/test_datafiles.py": "os.environ is text in the data files it reads",
    # Their commands (`metrics reset`, `shell -c`, `version`, `check`) never connect to a database:
    # each file passes run with DATABASE_URL naming a PostgreSQL that does not answer.
    "runs/tests/test_metrics_reset_command.py": "`manage.py metrics reset` empties a folder, no database",
    "sanoma_site/tests/test_manage_pipe.py": "`manage.py shell -c` printing or raising, no database",
    "sanoma_site/tests/test_manage_entry.py": "`./manage.py version`, no database",
    "sanoma_site/tests/test_logging.py": "its commands run in an environment of PATH, HOME and LANG only; "
                                         "`connection` is an attribute of a log record",
    "runs/limits/tests/test_limit_check.py": "`manage.py check` runs with PATH, HOME and LANG only",
    "connectors/vendors/slack/tests/test_announcements.py": "its `manage.py check` runs with PATH, HOME and LANG "
                                                            "only (its other tests use the database: on both)",
    "runs/tests/test_health_probes.py": "its processes without the database are given a DATABASE_URL of their "
                                        "own (none, a URL that does not parse, one that does not answer); "
                                        "its in-process probes touch no database (a query raises there)",
}


# Parametrized tests whose cases use no database of the suite and are long (the docs' pages: each a
# shell session of `manage.py` processes on a SQLite database of the page's own, about 300 s of CPU
# in all), each with why: their cases are spread over both suites, each case on one. The suite is the
# next bit of the hash that picks the case's lane (`lane_of`), so each lane's cases are split over
# both suites too. (They ran on the SQLite suite only, which then had 250 s of CPU more than
# PostgreSQL's and ended last.)
SPLIT_SUITE_TESTS = {
    "sanoma_site/tests/test_docs.py::test_the_page_runs_as_written": "the pages' commands run with DATABASE_* "
                                                                     "and SANOMA_* removed (docs_pages.py), on a "
                                                                     "SQLite file in the page's folder",
}


def uses_suite_database(marks: Iterable[str], fixtures: Iterable[str]) -> bool:
    """Whether a test uses the suite's database through pytest-django (a mark or a fixture)."""
    return bool(DATABASE_MARKS.intersection(marks) or DATABASE_FIXTURES.intersection(fixtures))


def suite_of(nodeid: str, marks: Iterable[str], fixtures: Iterable[str], source: str) -> str:
    """The suite a test runs on (one of SUITES), or BOTH; `source` is its file's text."""
    marks = set(marks)
    if uses_suite_database(marks, fixtures):
        return BOTH
    path, _, name = nodeid.partition("::")
    if nodeid.split("[", 1)[0] in SPLIT_SUITE_TESTS and "[" in name:
        return SUITES[(zlib.crc32(name.encode()) >> 1) % len(SUITES)]
    if path not in ONE_SUITE_FILES and (KEEP_MARKS.intersection(marks)
                                        or any(needle in source for needle in DATABASE_NEEDLES)):
        return BOTH
    return SUITES[zlib.crc32(path.encode()) % len(SUITES)]


def suite_of_item(item: Any, sources: dict[str, str]) -> str:
    """The suite of a collected pytest item; `sources` caches its file's text by path."""
    path = str(item.path)
    if path not in sources:
        sources[path] = Path(path).read_text(encoding="utf-8")
    return suite_of(item.nodeid, (mark.name for mark in item.iter_markers()), getattr(item, "fixturenames", ()),
                    sources[path])
