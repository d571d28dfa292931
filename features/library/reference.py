"""The built-in steps as the reference page `docs/reference/scenario-steps.md` lists them.

The page holds this table between two markers; a test renders it from a real `StepLibrary` and
compares, so the page cannot drift from the steps there are.
"""
from __future__ import annotations

from features.library.library import StepLibrary

BEGIN = "<!-- steps: generated from features/library/library.py; do not edit by hand -->"
END = "<!-- end of steps -->"
_KEYWORDS = {"given": "Given", "when": "When", "then": "Then", "any": "any"}


def built_in_steps(library: StepLibrary) -> str:
    """The table of the library's own steps (not the operations' phrases nor the step sets')."""
    lines = ["| keyword | step | followed by |", "| --- | --- | --- |"]
    for rule in library.rules:
        if rule.group:
            continue  # an operation's phrase or a step set's step: the config's, not the library's
        lines.append(f"| {_KEYWORDS.get(rule.kind, rule.kind)} | `{rule.source}` | {rule.takes or ''} |")
    return "\n".join([BEGIN, *lines, END])
