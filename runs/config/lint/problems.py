"""One thing the lint found: where it is (`file:line:column`, from 1) and what to write instead."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What each rule is about; a problem's `rule` is one of these.
RULES: dict[str, str] = {
    "clock": "reads the clock, which differs on every replay: ctx.now()",
    "sleep": "holds the worker: ctx.sleep(...)",
    "randomness": "differs on every replay: take it as input, or record it with a ctx call",
    "network": "reaches a vendor outside the policy and the ledger: an operation on a connector, called through ctx",
    "concurrency": "threads, processes, async: ctx.all([...]), ctx.start_run(...) or an operation on a connector",
    "environment": "the worker's environment and machine: a connector's environment (credentials) or the input",
    "files": "files on the worker: an operation on a connector, or the workflow's input",
    "dynamic-code": "code the lint cannot read: write it out",
    "process-bound": "a value that differs between worker processes (hash, id)",
    "terminal": "input() waits for a terminal: the workflow's input, or ctx.approval(...)",
    "error-class": "a check on an error's class, which a replay does not keep: error_code(err)",
    "import": "an import beyond what a workflow may use",
    "outline": "a workflow body its outline cannot draw (the worker refuses it too): call ctx directly in run",
    "uses": "a ctx call the workflow's `uses` does not list: add it, or leave `uses` out to derive it",
    "patch": "a ctx.patched(...) name that is not one literal, used once: ctx.patched(\"<name>\")",
    "syntax": "a file that is not valid Python",
    "policy": "a policy file the policy loader refuses",
    "data-file": "a data file problem (see manage.py resources)",
    "config": "the config root cannot be read far enough to lint it",
}


@dataclass(frozen=True, order=True)
class LintProblem:
    """`file` is relative to the config root (`workflows/refund.py`); `line` and `column` count from 1."""

    file: str
    line: int
    column: int
    message: str
    rule: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def plain(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message,
                "rule": self.rule}
