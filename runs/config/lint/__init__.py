"""The lint: what a config root's workflows, policies and data files must not do, found by reading
them (workflow files with `ast`, never run), each problem at `file:line:column` with what to write
instead. `manage.py lint [paths...]` is its command."""
from runs.config.lint.problems import RULES, LintProblem
from runs.config.lint.runner import LintError, LintReport, lint, lint_paths, policy_files, workflow_files
from runs.config.lint.workflows import Allowed, lint_workflow

__all__ = ["RULES", "Allowed", "LintError", "LintProblem", "LintReport", "lint", "lint_paths", "lint_workflow",
           "policy_files", "workflow_files"]
