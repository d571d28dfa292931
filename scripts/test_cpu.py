"""Where a pytest run's CPU goes, test by test: a pytest plugin and a summary of what it wrote.

As a plugin (`-p scripts.test_cpu`, with SANOMA_TEST_CPU=<file>; `./test` writes one per lane,
var/test-reports/cpu-<database>-<lane>.tsv), it writes one line per test: its node id, its wall
seconds, the CPU seconds of the pytest process (user + system) and those of the processes it
started and waited for (a `manage.py` process, a worker once stopped, git; Chromium only when it
quits, at the end of the session: a line of its own, SESSION_END). A process a test leaves running
is counted in the test that waits for it. The file's last line, `# session`, holds the whole
process's totals (collection and the test database's making included).

    .venv/bin/python scripts/test_cpu.py var/test-reports            # per file, the 25 costliest
    .venv/bin/python scripts/test_cpu.py --top 60 var/test-reports/cpu-sqlite-waits.tsv

Figures of a loaded machine are still CPU seconds: unlike wall time they do not grow with the load
(much), so they compare across runs.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

VARIABLE = "SANOMA_TEST_CPU"
_out: TextIO | None = None


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _file() -> TextIO | None:
    global _out
    target = os.environ.get(VARIABLE, "")
    if _out is None and target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        _out = open(target, "w", encoding="utf-8")  # open for the whole session
    return _out


# The last test's teardown also ends the session's fixtures (the shared Chromium quits then, and its
# CPU of the whole session is counted when it does: 40 to 60 s on a lane of ./test). It gets a line
# of its own, SESSION_END, instead of being added to that test.
SESSION_END = "(the session's fixtures ended: Chromium, servers)"
_session_end: tuple[float, float, float] | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: Any, nextitem: Any) -> Iterator[None]:
    global _session_end
    if nextitem is not None:
        yield
        return
    own, children, started = *_cpu(), time.monotonic()
    yield
    own2, children2 = _cpu()
    _session_end = (time.monotonic() - started, own2 - own, children2 - children)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
    global _session_end
    own, children, started = *_cpu(), time.monotonic()
    yield
    out = _file()
    if out is not None:
        own2, children2 = _cpu()
        wall, own_cpu, children_cpu = time.monotonic() - started, own2 - own, children2 - children
        if _session_end is not None:
            end_wall, end_own, end_children = _session_end
            wall, own_cpu, children_cpu = wall - end_wall, own_cpu - end_own, children_cpu - end_children
        out.write(f"{item.nodeid}\t{wall:.3f}\t{own_cpu:.3f}\t{children_cpu:.3f}\n")
        if _session_end is not None:
            out.write(f"{SESSION_END}\t{_session_end[0]:.3f}\t{_session_end[1]:.3f}\t{_session_end[2]:.3f}\n")
            _session_end = None
        out.flush()


def pytest_unconfigure(config: Any) -> None:
    out = _file()
    if out is not None:
        own, children = _cpu()
        out.write(f"# session\t0\t{own:.3f}\t{children:.3f}\n")
        out.close()


# ---- the summary ---------------------------------------------------------------------------------

def read(path: Path) -> tuple[list[tuple[str, float, float, float]], tuple[float, float]]:
    """(the tests' lines, the session's (own, children) CPU) of one file."""
    tests: list[tuple[str, float, float, float]] = []
    session = (0.0, 0.0)
    for line in path.read_text(encoding="utf-8").splitlines():
        name, wall, own, children = line.split("\t")
        if name == "# session":
            session = (float(own), float(children))
        else:
            tests.append((name, float(wall), float(own), float(children)))
    return tests, session


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders of cpu-*.tsv (default var/test-reports)")
    parser.add_argument("--top", type=int, default=25, help="how many files to list")
    args = parser.parse_args(argv)
    paths = args.paths or [Path(__file__).resolve().parents[1] / "var" / "test-reports"]
    files = [f for p in paths for f in (sorted(p.glob("cpu-*.tsv")) if p.is_dir() else [p])]
    if not files:
        parser.error(f"no cpu-*.tsv under {', '.join(map(str, paths))}: run ./test (or pytest with "
                     f"-p scripts.test_cpu and {VARIABLE}=FILE) first")
    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for path in files:
        tests, (own, children) = read(path)
        summed = sum(t[2] + t[3] for t in tests)
        print(f"{path.name}: {len(tests)} tests, {own + children:.1f} s CPU in all "
              f"({own:.1f} pytest, {children:.1f} processes it started; {summed:.1f} in the tests)")
        for name, wall, test_own, test_children in tests:
            sums = per_file[name.split("::", 1)[0]]
            sums[0] += 1
            sums[1] += wall
            sums[2] += test_own
            sums[3] += test_children
    print(f"\n{'CPU s':>8} {'pytest':>8} {'started':>8} {'wall s':>8} {'tests':>6}  file (the {args.top} costliest)")
    ranked = sorted(per_file.items(), key=lambda kv: -(kv[1][2] + kv[1][3]))
    for name, (count, wall, own, children) in ranked[:args.top]:
        print(f"{own + children:8.1f} {own:8.1f} {children:8.1f} {wall:8.1f} {int(count):6d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
