"""Where the test suite's time goes, read from the JUnit reports `./test` leaves in var/test-reports/.

    .venv/bin/python bench/suite_time.py                    # var/test-reports, the 25 slowest tests
    .venv/bin/python bench/suite_time.py --top 60 some/folder
    .venv/bin/python bench/suite_time.py --compare var/before var/test-reports

For each report (pytest-sqlite.xml, pytest-postgresql.xml, behave-<database>/...) it prints the
suite's total test time (the sum of the tests' times: setup, call and teardown for pytest; on a
busy machine the wall time is what the two suites side by side add up to), the slowest tests, and
the totals per app and per test file (slowest first). `--compare A B` prints, per suite and per test
file, A's total, B's total and the difference. The figures are the reports' own: nothing is run.
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    suite: str  # the report: "pytest-postgresql", "behave-sqlite", ...
    file: str  # the test file (pytest) or feature (behave)
    name: str
    seconds: float
    outcome: str  # passed | failed | skipped

    @property
    def app(self) -> str:
        head = self.file.split("/", 1)[0].split(".", 1)[0]
        return head or "?"


def _outcome(case: ET.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    if case.find("skipped") is not None:
        return "skipped"
    return "passed"


def _file_of(classname: str, suite: str) -> str:
    """pytest writes `runs.tests.test_api.TestX` as the class: the module's path without the class."""
    if suite.startswith("behave"):
        return classname.split(".", 1)[-1] if "." in classname else classname
    parts = classname.split(".")
    while parts and parts[-1][:1].isupper():  # a test class
        parts.pop()
    return "/".join(parts) + ".py" if parts else classname


def read(folder: Path) -> list[Case]:
    cases: list[Case] = []
    for report in sorted(folder.rglob("*.xml")):
        if report.name.startswith("lint-"):
            continue
        rel = report.relative_to(folder)
        suite = rel.parts[0] if len(rel.parts) > 1 else report.stem
        root = ET.parse(report).getroot()
        for case in root.iter("testcase"):
            classname = case.get("classname") or ""
            cases.append(Case(suite=suite, file=_file_of(classname, suite), name=case.get("name") or "",
                              seconds=float(case.get("time") or 0.0), outcome=_outcome(case)))
    return cases


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def _totals(cases: list[Case], key: str) -> dict[tuple[str, str], float]:
    sums: dict[tuple[str, str], float] = defaultdict(float)
    for case in cases:
        sums[(case.suite, getattr(case, key))] += case.seconds
    return sums


def show(folder: Path, top: int, files: int) -> None:
    cases = read(folder)
    if not cases:
        raise SystemExit(f"no JUnit reports with test cases under {folder}")
    by_suite: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_suite[case.suite].append(case)
    for suite, its in sorted(by_suite.items()):
        total = sum(c.seconds for c in its)
        counts = {o: sum(1 for c in its if c.outcome == o) for o in ("passed", "failed", "skipped")}
        print(f"== {suite}: {len(its)} tests, {_minutes(total)} summed "
              f"({counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped)")
        print(f"   slowest {min(top, len(its))}:")
        for case in sorted(its, key=lambda c: -c.seconds)[:top]:
            mark = "" if case.outcome == "passed" else f" [{case.outcome}]"
            print(f"   {case.seconds:8.2f}s  {case.file}::{case.name}{mark}")
        print("   per app:")
        for (_, app), seconds in sorted(_totals(its, "app").items(), key=lambda kv: -kv[1]):
            print(f"   {seconds:8.1f}s  {app}")
        print(f"   per file (slowest {files}):")
        for (_, file), seconds in sorted(_totals(its, "file").items(), key=lambda kv: -kv[1])[:files]:
            print(f"   {seconds:8.1f}s  {file}")
        print()


def compare(before: Path, after: Path, files: int) -> None:
    old, new = read(before), read(after)
    old_suites, new_suites = _totals(old, "suite"), _totals(new, "suite")
    print(f"{'before':>9} {'after':>9} {'change':>9}  suite")
    for key in sorted(set(old_suites) | set(new_suites)):
        a, b = old_suites.get(key, 0.0), new_suites.get(key, 0.0)
        print(f"{a:9.1f} {b:9.1f} {b - a:+9.1f}  {key[0]}")
    old_files, new_files = _totals(old, "file"), _totals(new, "file")
    keys = sorted(set(old_files) | set(new_files), key=lambda k: -(old_files.get(k, 0.0) - new_files.get(k, 0.0)))
    print(f"\n{'before':>9} {'after':>9} {'change':>9}  file (the {files} biggest changes)")
    for key in keys[:files]:
        a, b = old_files.get(key, 0.0), new_files.get(key, 0.0)
        print(f"{a:9.1f} {b:9.1f} {b - a:+9.1f}  {key[0]}  {key[1]}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="report folders (default var/test-reports)")
    parser.add_argument("--top", type=int, default=25, help="how many of the slowest tests to list")
    parser.add_argument("--files", type=int, default=25, help="how many test files to list")
    parser.add_argument("--compare", action="store_true", help="two folders: before and after")
    args = parser.parse_args(argv)
    folders = args.folders or [Path(__file__).resolve().parents[1] / "var" / "test-reports"]
    if args.compare:
        if len(folders) != 2:
            parser.error("--compare takes two folders: before and after")
        compare(folders[0], folders[1], args.files)
        return 0
    for folder in folders:
        show(folder, args.top, args.files)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
