"""The approval titles a workflow can ask for, known before it runs.

`ctx.approval("Final check", ...)` with a literal title, the `@title` of each policy that holds
calls for approval, and the default title of a hold (`<op> needs <approver>`) for each operation
the workflow uses. Driving a run never spends a decision naming one of these on another approval.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from runs.approvals.approver import Approver


def _workflow_titles(definition: Any) -> list[str]:
    try:
        source = textwrap.dedent(inspect.getsource(definition.run))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return []
    titles: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "approval"):
            continue
        title = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "title"), None)
        if isinstance(title, ast.Constant) and isinstance(title.value, str):
            titles.append(title.value)
    return titles


def _policy_titles(definition: Any, policy: Any) -> list[str]:
    titles: list[str] = []
    for rule in getattr(policy, "rules", ()) or ():
        approver = getattr(rule, "approver", None)
        if not approver:
            continue
        if getattr(rule, "title", None):
            titles.append(rule.title)
            continue
        shown = Approver.parse(approver).shown
        titles.extend(f"{op} needs {shown}" for op in definition.ops)
    return titles


def literal_titles(definition: Any, policy: Any = None) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*_workflow_titles(definition), *_policy_titles(definition, policy)]))
