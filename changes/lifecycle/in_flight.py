"""What a change would do to the work in flight: the `in_flight` check of a change's head.

The other checks run in a process with a database of their own; this one asks about the LIVE
database, so it runs from the worker, on the exported head while it is still on disk:

- `manage.py replay --tree <head> --json` proves every parked run against the head's code: each
  migrates (the head reaches the same parked point by the same steps) or stays pinned, naming the
  first step that differs (exit 0: all migrate; 1: some are pinned; 2: bad input);
- `manage.py rejudge --tree <head> --json` judges every call held for a policy's approval again
  with the head's policies (a dry run): released, reassigned or refused.

Both are child processes on the live database (the one this process is connected to), with the live
root as their root: they import the head's code, never this process. A child that fails (exit 2,
anything it cannot say as JSON, a timeout) fails the check with its own words; pinned runs do not
fail it: they are what the reviewer reads, in the report's `in_flight` section, in one sentence
(`said`: "migrates 41 parked runs, pins 3: refund-... at step 4 (...); releases 3 held calls,
reassigns 2") on the change's page, `manage.py change show`, the API and the merge's approval, and
as counts in the merge call's input, where a policy can hold a merge that pins runs.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from runs.config.trees import process_env

NAME = "in_flight"
COUNTS = ("migrates", "pins", "releases", "reassigns", "refuses")
LISTED = 200  # rows of each kind the report keeps (the counts are always whole)
NAMED = 3  # pinned runs the sentence names; the rest are "and N more"
SAID_TAIL = 20  # last lines of a failed child's stderr the check keeps


# ---- words --------------------------------------------------------------------------------------


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _pin_words(row: Mapping[str, Any]) -> str:
    where = f" at step {row['step']}" if row.get("step") is not None else ""
    why = f" ({row['reason']})" if row.get("reason") else ""
    return f"{row.get('run')}{where}{why}"


def said(section: Mapping[str, Any]) -> str:
    """The section in one sentence: what the merge does to parked runs and held calls."""
    migrates, pins, unchanged = (int(section.get(k) or 0) for k in ("migrates", "pins", "unchanged"))
    if migrates or pins:
        runs = f"migrates {_plural(migrates, 'parked run')}"
        if pins:
            pinned = list(section.get("pinned") or [])[:NAMED]
            named = ", ".join(_pin_words(row) for row in pinned)
            more = pins - len(pinned)
            runs += f", pins {pins}" + (f": {named}" if named else "") + (f", and {more} more" if more > 0 else "")
    elif unchanged:
        runs = f"leaves {_plural(unchanged, 'parked run')} as {'it is' if unchanged == 1 else 'they are'} " \
               "(the head does not change their version)"
    else:
        runs = "no parked runs"
    # "releases 3 held calls, reassigns 2": the first that happens says what is counted.
    held: list[str] = []
    for verb, key in (("releases", "releases"), ("reassigns", "reassigns"), ("refuses", "refuses")):
        n = int(section.get(key) or 0)
        if n:
            held.append(f"{verb} {_plural(n, 'held call') if not held else n}")
    return runs + ("; " + ", ".join(held) if held else "")


UNPROVEN = "work in flight not proven"
WORDS_MAX = 2000  # the merge input's `work_in_flight`


def words(section: Mapping[str, Any] | None) -> str:
    """The sentence the merge's approval shows (cut to fit the merge's input)."""
    text = str((section or {}).get("said") or UNPROVEN)
    return text if len(text) <= WORDS_MAX else text[:WORDS_MAX - 1] + "\u2026"


def counts(section: Mapping[str, Any] | None) -> dict[str, int]:
    """The section as the merge call's policy input: `{migrates, pins, releases, reassigns, refuses}`."""
    section = section or {}
    return {k: int(section.get(k) or 0) for k in COUNTS}


def table(section: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The section as the rows of the *Work in flight* table: pinned runs first (what a reviewer
    must read), then the held calls the head's policies decide otherwise, then the runs it migrates."""
    section = section or {}
    rows: list[dict[str, str]] = []
    for row in section.get("pinned") or []:
        where = f"at step {row['step']}: " if row.get("step") is not None else ""
        rows.append({"outcome": "pinned", "run": str(row.get("run")), "workflow": str(row.get("workflow") or ""),
                     "what": f"stays on {row.get('from')}: {where}{row.get('reason') or 'cannot be proven'}"})
    for kind, outcome in (("released", "released"), ("reassigned", "reassigned"), ("refused", "refused"),
                          ("failed", "unjudged")):
        for held in section.get(kind) or []:
            what = f"{held.get('operation')} held for {held.get('from')}: " + {
                "released": "now allowed, the call goes ahead", "reassigned": f"now for {held.get('to')}",
                "refused": "now denied", "failed": "the head's policy cannot judge it; it stays held"}[kind]
            if held.get("reason"):
                what += f" ({held['reason']})"
            rows.append({"outcome": outcome, "run": str(held.get("run")), "workflow": "", "what": what})
    for row in section.get("migrated") or []:
        rows.append({"outcome": "migrates", "run": str(row.get("run")), "workflow": str(row.get("workflow") or ""),
                     "what": f"{row.get('from')} \u2192 {row.get('to')}, "
                             f"{_plural(int(row.get('steps') or 0), 'step')} replayed"})
    return rows


# ---- the section, from the children's JSON ------------------------------------------------------


def section_of(replay: Mapping[str, Any], rejudge: Mapping[str, Any], *, leave_out: Collection[str] = ()
               ) -> dict[str, Any]:
    """The report's `in_flight` section from `replay --json` and `rejudge --json` (their contracted
    shapes). Runs in `leave_out` (the change's own run: it moves by its own stamp) are not counted.
    A run the proof finds already on the head's version is `unchanged`: the deploy leaves it be."""
    skip = set(leave_out)
    migrated: list[dict[str, Any]] = []
    pinned: list[dict[str, Any]] = []
    unchanged = 0
    for row in replay.get("runs") or []:
        if row.get("run") in skip:
            continue
        if row.get("outcome") == "migrates":
            if row.get("from") == row.get("to"):
                unchanged += 1
                continue
            migrated.append({"run": row.get("run"), "workflow": row.get("workflow"), "from": row.get("from"),
                             "to": row.get("to"), "steps": row.get("steps")})
        else:
            pinned.append({"run": row.get("run"), "workflow": row.get("workflow"), "from": row.get("from"),
                           "to": row.get("to"), "step": row.get("step"), "reason": row.get("reason") or ""})
    # `failed`: held calls the head's policy could not judge (they stay held): shown, never counted.
    held = {kind: [dict(h) for h in rejudge.get(kind) or [] if h.get("run") not in skip]
            for kind in ("released", "reassigned", "refused", "failed")}
    section: dict[str, Any] = {
        "tree_version": str(replay.get("version") or ""), "policy_version": str(rejudge.get("policy_version") or ""),
        "migrates": len(migrated), "pins": len(pinned), "unchanged": unchanged,
        "releases": len(held["released"]), "reassigns": len(held["reassigned"]), "refuses": len(held["refused"]),
        "pinned": pinned[:LISTED], "migrated": migrated[:LISTED],
        **{kind: rows[:LISTED] for kind, rows in held.items()},
    }
    section["truncated"] = any(len(rows) > LISTED for rows in (migrated, pinned, *held.values()))
    section["said"] = said(section)
    return section


# ---- the check, in child processes ---------------------------------------------------------------


def _child(command: str, tree: Path, *, live_root: Path, timeout: float) -> tuple[int, str, str]:
    """`manage.py <command> --tree <tree> --json` on the live database: (exit status, stdout, stderr);
    a child that does not finish in time is (-1, "", why)."""
    env = process_env(live_root)
    env.pop("SANOMA_APP_VERSION", None)  # the head's versions are its code's
    env["SANOMA_METRICS"] = "false"  # replaying the head's code is a check, not the company's work
    argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), command, "--tree", str(tree), "--json"]
    # A session of its own: `replay --tree` starts a process of the tree's, and a child that takes
    # too long is ended with every process it started.
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                             env=env, cwd=settings.BASE_DIR, start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.communicate()
        return -1, "", f"manage.py {command} --tree did not finish within {timeout:g} s"
    return child.returncode, out, err


def _problem(message: str) -> dict[str, Any]:
    return {"file": "", "line": 0, "column": 0, "message": message}


def _answer(command: str, status: int, out: str, err: str, ok: Collection[int]) -> tuple[dict[str, Any] | None, str]:
    """The child's JSON, or None and why not (its exit status and the end of its stderr)."""
    tail = " / ".join(err.strip().splitlines()[-SAID_TAIL:])
    if status not in ok:
        return None, (err if status == -1 else f"manage.py {command} --tree exited {status}" + (f": {tail}" if tail
                                                                                                 else ""))
    try:
        answer = json.loads(out)
    except ValueError:
        return None, f"manage.py {command} --tree exited {status} without its JSON" + (f": {tail}" if tail else "")
    if not isinstance(answer, dict):
        return None, f"manage.py {command} --tree answered {type(answer).__name__}, not a JSON object"
    return answer, ""


def check(tree: Path, *, live_root: Path, timeout: float, leave_out: Collection[str] = ()
          ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The `in_flight` check of the head at `tree` and its section (None when a child failed)."""
    began = time.monotonic()
    made: dict[str, Any] = {"name": NAME, "ok": True, "skipped": "", "problems": [], "summary": "", "took_ms": 0}
    replay, why = _answer("replay", *_child("replay", tree, live_root=live_root, timeout=timeout), ok=(0, 1))
    rejudged: dict[str, Any] | None = None
    if replay is not None:
        rejudged, why = _answer("rejudge", *_child("rejudge", tree, live_root=live_root, timeout=timeout), ok=(0,))
    made["took_ms"] = int((time.monotonic() - began) * 1000)
    if replay is None or rejudged is None:
        made.update(ok=False, problems=[_problem(why)], summary="the work in flight could not be proven")
        return made, None
    section = section_of(replay, rejudged, leave_out=leave_out)
    made["summary"] = section["said"]
    return made, section


def skipped(why: str) -> dict[str, Any]:
    return {"name": NAME, "ok": False, "skipped": why, "problems": [], "summary": "", "took_ms": 0}


def add_to(report: dict[str, Any], tree: Path, *, live_root: Path, timeout: float, leave_out: Collection[str] = ()
           ) -> dict[str, Any]:
    """`report` (the other checks' report on the head at `tree`) with the `in_flight` check and
    section added: skipped when the head's config does not resolve (nothing could replay on it)."""
    config = next((c for c in report.get("checks", []) if c.get("name") == "config"), None)
    if config is None or not config.get("ok"):
        made, section = skipped("the config does not resolve"), None
    else:
        made, section = check(tree, live_root=live_root, timeout=timeout, leave_out=leave_out)
    report.setdefault("checks", []).append(made)
    if section is not None:
        report["in_flight"] = section
    if not made["ok"]:
        report["ok"] = False
        report["failed"] = [*report.get("failed", []), NAME]
    return report


__all__ = ["COUNTS", "NAME", "UNPROVEN", "add_to", "check", "counts", "said", "section_of",
           "table", "words"]
