"""Reading `policies/*.cedar`: the set split into policies with stable ids, checked, parsed once."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import cedarpy

from connectors.errors import ConfigError, Problem, ProblemKind
from runs.policies.cedar.policy import CedarPolicy
from runs.policies.cedar.rules import CedarRule, _check_annotations

# Reading the files


def _split_policies(text: str) -> list[tuple[int, str]]:
    """The file's policies as (start line, text), split at each `;` outside strings and comments.

    Cedar reports parse errors without a position, so each policy is parsed on its own: the first
    that fails names the line where it starts. Text after the last `;` is returned as a final piece
    (a policy missing its `;`).
    """
    pieces: list[tuple[int, str]] = []
    i, n = 0, len(text)
    first: int | None = None  # index of the piece's first significant character
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c.isspace():
            i += 1
            continue
        if first is None:
            first = i
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == ";":
            pieces.append((text.count("\n", 0, first) + 1, text[first : i + 1]))
            first = None
        i += 1
    if first is not None:
        pieces.append((text.count("\n", 0, first) + 1, text[first:]))
    return pieces


def _policy_version(files: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, text in files:
        digest.update(name.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
    return "cedar:" + digest.hexdigest()[:16]


def _policy_problem(text: str) -> Problem:
    """`<folder>/<file>:<line>: <what>` as a policy problem that knows its file and line."""
    where, _, _ = text.partition(": ")
    file, _, line = where.rpartition(":")
    return Problem(text, kind=ProblemKind.POLICY, file=file or None, line=int(line) if line.isdigit() else None)


def load_cedar_policy(directory: Path | str) -> CedarPolicy | None:
    """The Cedar policy of `directory` (the project's `policies/`), or None when the directory is
    missing or holds no `*.cedar` file.

    Raises `ConfigError` listing every problem as `policies/<file>:<line>: <message>`: a policy
    Cedar cannot parse, a misused annotation, an id used twice.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return None
    paths = sorted((p for p in directory.glob("*.cedar") if p.is_file()), key=lambda p: p.name)
    if not paths:
        return None

    shown = directory.name or str(directory)
    problems: list[str] = []
    files: list[tuple[str, str]] = []
    for path in paths:
        try:
            files.append((path.name, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as err:
            problems.append(f"{shown}/{path.name}:1: cannot be read: {err}")

    rules: list[CedarRule] = []
    first_seen: dict[str, str] = {}
    for name, text in files:
        for line, piece in _split_policies(text):
            where = f"{shown}/{name}:{line}"
            try:
                parsed = json.loads(cedarpy.policies_to_json_str(piece))
            except ValueError as err:
                problems.append(f"{where}: {err}")
                continue
            statics = list(parsed.get("staticPolicies", {}).values())
            if parsed.get("templates") or len(statics) != 1:
                problems.append(f"{where}: expected one policy without ?principal/?resource slots")
                continue
            est = statics[0]
            notes = {str(k): "" if v is None else str(v) for k, v in (est.get("annotations") or {}).items()}
            problems += _check_annotations(f"{shown}/{name}", line, est["effect"], notes)
            rule_id = notes["id"].strip() if notes.get("id", "").strip() else f"{name}:{line}"
            if rule_id in first_seen:
                problems.append(f"{where}: policy id {rule_id!r} is already used at {first_seen[rule_id]}")
                continue
            first_seen[rule_id] = where
            rules.append(
                CedarRule(
                    id=rule_id,
                    file=name,
                    line=line,
                    effect=est["effect"],
                    annotations=notes,
                    source=piece,
                    order=len(rules),
                    est=est,
                )
            )
    if problems:
        raise ConfigError([_policy_problem(problem) for problem in problems])
    return CedarPolicy(rules, version=_policy_version(files), directory=directory)
