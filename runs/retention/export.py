"""The export's format, its writer and its offline check.

An export is a folder of JSON Lines files, `runs-YYYY-MM-DD.jsonl`, one per day runs ended on (UTC).
Each line is one JSON object with a `type`; a run is written as, in order:

- `run`: the run's row (`run`),
- `step`, `approval`, `decision_message`, `message`, `tag`: its other rows (`row`),
- `ledger`: each of its ledger records in chain order (`record`: the content the hash covers, and
  `chain_index`, `prev_hash`, `hash`),
- `head`: `records` (the chain's length) and `hash` (its last record's hash; "" for none).

Every line carries `run_id`. A run may appear twice in one file (retention stopped after writing
it and before removing it, then ran again): every copy's head must fall on the same chain.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from runs.ledger import Break, check_chain

LINE_TYPES = ("run", "step", "approval", "decision_message", "message", "tag", "ledger", "head")
CHAIN_FIELDS = ("chain_index", "prev_hash", "hash")


def file_name(day: date) -> str:
    return f"runs-{day.isoformat()}.jsonl"


def line(kind: str, run_id: str, **fields: Any) -> bytes:
    return (json.dumps({"type": kind, "run_id": run_id, **fields}, cls=DjangoJSONEncoder, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=True) + "\n").encode("ascii")


@dataclass(frozen=True)
class Head:
    run_id: str
    records: int
    hash: str


@dataclass
class Checked:
    """What an export (or part of one) holds, and what does not hold in it."""

    runs: int = 0
    records: int = 0
    heads: dict[str, Head] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check_lines(lines: Iterable[bytes], *, where: str) -> Checked:
    """Check export lines: each run's ledger records form its chain, and its head names the chain's
    length and last hash. `where` names the file in the problems."""
    records: dict[str, dict[int, dict[str, Any]]] = {}
    heads: dict[str, list[Head]] = {}
    problems: list[str] = []
    runs: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except ValueError as err:
            problems.append(f"{where}, line {number}: not JSON ({err}); the file was cut or changed")
            continue
        kind = item.get("type") if isinstance(item, dict) else None
        run_id = item.get("run_id") if isinstance(item, dict) else None
        if kind not in LINE_TYPES or not isinstance(run_id, str):
            problems.append(f"{where}, line {number}: not an export line (it needs a type, one of "
                            f"{', '.join(LINE_TYPES)}, and a run_id)")
            continue
        if kind == "run":
            runs.add(run_id)
        elif kind == "ledger":
            record = item.get("record")
            if not isinstance(record, dict) or not isinstance(record.get("chain_index"), int):
                problems.append(f"{where}, line {number}: a ledger line without its record and chain_index")
                continue
            indexed = records.setdefault(run_id, {})
            seen = indexed.get(record["chain_index"])
            if seen is not None and seen != record:
                problems.append(f"{where}, line {number}: run {run_id}'s record #{record['chain_index']} appears "
                                "twice with different content")
                continue
            indexed[record["chain_index"]] = record
        elif kind == "head":
            if not isinstance(item.get("records"), int) or not isinstance(item.get("hash"), str):
                problems.append(f"{where}, line {number}: a head line needs records (a number) and hash")
                continue
            heads.setdefault(run_id, []).append(Head(run_id, item["records"], item["hash"]))
    checked = Checked(runs=len(runs), problems=problems)
    for run_id in sorted(runs | set(records) | set(heads)):
        by_index = records.get(run_id, {})
        chain = [by_index[index] for index in sorted(by_index)]
        checked.records += len(chain)
        run_heads = heads.get(run_id)
        if not run_heads:
            problems.append(f"{where}: run {run_id} has no head line (the export was cut short)")
            continue
        if run_id not in runs:
            problems.append(f"{where}: run {run_id} has no run line")
        broken: Break | None = check_chain(chain)
        if broken is not None:
            problems.append(f"{where}: {broken}")
            continue
        for head in run_heads:
            if head.records > len(chain):
                problems.append(f"{where}: run {run_id}'s head names {head.records} records; the export holds "
                                f"{len(chain)}: records at the end were removed")
            elif (chain[head.records - 1]["hash"] if head.records else "") != head.hash:
                problems.append(f"{where}: run {run_id}'s head hash differs from its record "
                                f"#{head.records - 1}'s hash: the head or the record was changed")
        last = max(run_heads, key=lambda h: h.records)
        if last.records < len(chain):
            problems.append(f"{where}: run {run_id} holds {len(chain)} records after its head's {last.records}")
        checked.heads[run_id] = last
    return checked


def _lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        yield from handle


def verify_file(path: Path) -> Checked:
    """Check one export file offline (no database needed)."""
    if not path.is_file():
        return Checked(problems=[f"{path}: no such file"])
    return check_lines(_lines(path), where=path.name)


def verify_paths(paths: Sequence[Path]) -> Checked:
    """Check export files, or every `runs-*.jsonl` of a folder."""
    total = Checked()
    for given in paths:
        files = sorted(given.glob("runs-*.jsonl")) if given.is_dir() else [given]
        if given.is_dir() and not files:
            total.problems.append(f"{given}: the folder holds no export files (runs-YYYY-MM-DD.jsonl)")
        for path in files:
            checked = verify_file(path)
            total.runs += checked.runs
            total.records += checked.records
            total.heads.update(checked.heads)
            total.problems.extend(checked.problems)
    return total


class DayFiles:
    """Append a batch's lines to its days' files; `verify` reads back what this batch appended,
    `discard` cuts it off again (the batch was not removed), `close` keeps it (fsynced)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._handles: dict[str, Any] = {}
        self._starts: dict[str, int] = {}

    def write(self, day: date, chunk: bytes) -> str:
        name = file_name(day)
        handle = self._handles.get(name)
        if handle is None:
            handle = (self.folder / name).open("ab")
            self._handles[name] = handle
            self._starts[name] = handle.tell()
        handle.write(chunk)
        return name

    def flush(self) -> None:
        for handle in self._handles.values():
            handle.flush()
            os.fsync(handle.fileno())

    def verify(self) -> Checked:
        """Read back this batch's part of each file and check it."""
        self.flush()
        total = Checked()
        for name, start in self._starts.items():
            with (self.folder / name).open("rb") as handle:
                handle.seek(start)
                checked = check_lines(handle, where=name)
            total.runs += checked.runs
            total.records += checked.records
            total.heads.update(checked.heads)
            total.problems.extend(checked.problems)
        return total

    def discard(self) -> None:
        for name, handle in self._handles.items():
            handle.truncate(self._starts[name])
        self.close()

    def close(self) -> None:
        self.flush()
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
