"""Linting a workflow file: read with `ast`, never imported or run.

A workflow is replayed from the top on every advance, so it must make the same `ctx` calls in the
same order every time. This refuses what would make a replay differ (the clock, randomness, the
network, threads and processes, the environment, files, code built at run time, error classes a
replay does not keep) and imports beyond what a workflow needs. Names are followed through
imports (`import time as t`, `from datetime import datetime as dt`), plain assignments
(`clock = time`) and attribute chains (`datetime.datetime.now`), in nested functions and lambdas
too. It guards against accidents; it is not a sandbox.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runs.config.lint.problems import LintProblem
from runs.config.outline import outlines_in_source
from runs.engine.requests import PATCH_NAME

# --- what a workflow may import -------------------------------------------------------------------

# The standard library a workflow may use: types and pure computation (a `datetime` object is fine,
# `datetime.now()` is not: the uses are checked on their own).
ALLOWED_STDLIB = frozenset({
    "__future__", "typing", "typing_extensions", "collections", "collections.abc", "dataclasses", "enum",
    "decimal", "fractions", "re", "json", "math", "datetime", "zoneinfo", "uuid", "itertools", "functools",
    "operator", "string",
})
ALLOWED_PACKAGES = frozenset({"pydantic"})  # with their submodules
AUTHORING = "runs.authoring"
CONNECTORS_PUBLIC = frozenset({"connectors", "connectors.errors"})
# Public names of `connectors` that belong to a vendor's other halves, never to a workflow.
# The same names from the front door (`runs.authoring`) are refused alike.
VENDOR_HALVES = frozenset({"define_fake", "Fake", "OpFn", "define_driver", "Driver", "DriverFn", "CallContext",
                           "with_setup"})
HALF = "belongs to a vendor's driver or fake, which the worker calls: a workflow calls the vendor through ctx"
ALLOWED_TEXT = ("runs.authoring, connectors (its public names), pydantic, the standard library's "
                + ", ".join(sorted(ALLOWED_STDLIB - {"__future__"}))
                + ", the config's connectors, and files inside the config root")
CONFIG_MODULE = "sanoma_config"
TESTING = ("is sanoma's testing library, which runs workflows on fakes from the tests: a workflow imports what it "
           "needs from `runs.authoring`")
CONFIG = ("is the config the worker is built from (its connectors with their drivers, its wakeups): a workflow "
          "imports its connectors from their own modules, and from `sanoma_config` only the collections it declares")

# --- what a workflow may not use ------------------------------------------------------------------

NOW = "reads the clock, which differs on every replay: use `ctx.now()`"
SLEEP = "holds the worker: use `ctx.sleep(seconds=...)` (a durable sleep that holds no process)"
RANDOM = "is random, so it differs on every replay: take it as input, or record it with a ctx call"
NETWORK = ("reaches the network outside the policy and the ledger: declare an operation on a connector and call "
           "it through ctx")
CONCURRENCY = ("starts work a replay cannot follow: use `ctx.all([...])` for a fan-out, `ctx.start_run(...)` for "
               "another workflow, or an operation on a connector for outside work")
ENVIRON = ("reads the worker's environment, which may differ on every replay: use a connector's environment "
           "(credentials) or the workflow's input")
MACHINE = ("reads the machine the worker runs on, which may differ on every replay: take what you need as the "
           "workflow's input, or declare an operation on a connector and call it through ctx")
OS_MODULE = (": a workflow does not use `os`, which reads the machine the worker runs on and its environment: use a "
             "connector's environment (credentials) or the workflow's input, or declare an operation on a connector")
DYNAMIC = ("runs code built while the workflow runs, which the lint cannot read and a replay may not repeat: "
           "write the code out in the workflow, and call vendors through ctx")
TIME_MODULE = (": a workflow does not use `time`, which reads the worker's clock and holds the worker in sleeps: use "
               "`ctx.now()` for the time, `ctx.sleep(...)` to wait, and `datetime` for dates and times")

# Exact names (as imported: `datetime.datetime.now`) -> (rule, what is wrong and what to use).
MEMBERS: dict[str, tuple[str, str]] = {
    **{f"datetime.datetime.{m}": ("clock", NOW) for m in ("now", "utcnow", "today")},
    "datetime.date.today": ("clock", NOW),
    **{f"time.{m}": ("clock", NOW) for m in (
        "time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
        "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime", "clock_gettime_ns", "localtime",
        "gmtime", "ctime", "asctime", "strftime")},
    "time.sleep": ("sleep", SLEEP),
    "uuid.uuid1": ("randomness", RANDOM),
    "uuid.uuid4": ("randomness", RANDOM),
    "uuid.getnode": ("environment", MACHINE),
    "os.urandom": ("randomness", RANDOM),
    "os.getrandom": ("randomness", RANDOM),
    **{f"os.{m}": ("environment", ENVIRON) for m in (
        "environ", "environb", "getenv", "getenvb", "putenv", "unsetenv")},
    **{f"os.{m}": ("concurrency", CONCURRENCY) for m in (
        "system", "popen", "fork", "forkpty", "kill", "killpg", "posix_spawn", "posix_spawnp", "startfile")},
}
# `os.spawnv`, `os.execvp`, ...: every name starting so.
MEMBER_PREFIXES: tuple[tuple[str, str, str], ...] = (
    ("os.spawn", "concurrency", CONCURRENCY),
    ("os.exec", "concurrency", CONCURRENCY),
)
# Modules refused whole: importing them, and every use of what they hold.
MODULES: dict[str, tuple[str, str]] = {
    **{m: ("randomness", RANDOM) for m in ("random", "secrets")},
    **{m: ("network", NETWORK) for m in (
        "requests", "urllib", "urllib3", "http", "httpx", "aiohttp", "socket", "ssl", "smtplib", "ftplib", "poplib",
        "imaplib", "telnetlib", "xmlrpc", "websocket", "websockets", "socketserver")},
    **{m: ("concurrency", CONCURRENCY) for m in (
        "threading", "_thread", "multiprocessing", "concurrent", "subprocess", "asyncio", "sched", "signal")},
    **{m: ("dynamic-code", DYNAMIC) for m in ("importlib", "runpy")},
    "time": ("clock", TIME_MODULE),
    "os": ("environment", OS_MODULE),
}
# Built-in functions, when the file does not bind the name itself.
BUILTINS: dict[str, tuple[str, str]] = {
    "open": ("files", "reads or writes files on the worker, which may differ on every replay: declare an operation "
                      "on a connector and call it through ctx, or take the content as the workflow's input"),
    **{name: ("dynamic-code", DYNAMIC) for name in ("eval", "exec", "compile", "__import__")},
    "input": ("terminal", "waits for a terminal the worker does not have: take it as the workflow's input, or ask "
                          "a person with `ctx.approval(...)`"),
    "hash": ("process-bound", "differs from one worker process to the next (Python salts it), so a replay elsewhere "
                              "differs: use the values themselves, or a stable text such as `json.dumps(...)`"),
    "id": ("process-bound", "is a memory address, different in every worker process: use the values themselves"),
}
# The runtime's error classes a replay does not keep (it raises a recorded error again as a
# `SanomaError` with its code), with the code to check instead.
ERROR_CLASSES: dict[str, str] = {
    "DriverError": "driver_failed",
    "DriverTimeout": "driver_timeout",
    "InvalidInput": "invalid_input",
    "ConfigError": "config_invalid",
}
ERROR_MODULES = ("connectors", "connectors.errors", AUTHORING)


@dataclass(frozen=True)
class Allowed:
    """Where the file is, and what it may import besides sanoma's authoring API."""

    package: str  # the config root's package name, e.g. "company"
    module: str  # the file's module, e.g. "company.workflows.refund" (for relative imports)
    is_package: bool = False  # an `__init__.py`
    connector_modules: frozenset[str] = frozenset()  # modules the config imports its connectors from
    config_collections: frozenset[str] = frozenset()  # names `sanoma_config.py` binds to `define_collection(...)`


def lint_workflow(rel: str, source: str, allowed: Allowed) -> list[LintProblem]:
    """Every problem in one workflow file's text, sorted by line and column."""
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as err:
        return [LintProblem(rel, err.lineno or 1, err.offset or 1,
                            f"syntax: {err.msg}: the file is not valid Python", "syntax")]
    except ValueError as err:  # NUL bytes
        return [LintProblem(rel, 1, 1, f"syntax: {err}: the file is not valid Python", "syntax")]
    checker = _Checker(rel, tree, allowed, source.splitlines())
    checker.check()
    found = {*checker.problems, *_outline_problems(rel, source, tree), *_patch_problems(rel, tree, checker.lines)}
    return sorted(found)


def _patch_problems(rel: str, tree: ast.Module, lines: list[str]) -> list[LintProblem]:
    """A patch is found again by its name on every replay, and retired by it: `ctx.patched` takes
    one string literal, each name once in a file."""
    found: list[LintProblem] = []
    seen: dict[str, int] = {}
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == "patched" and isinstance(node.func.value, ast.Name)]
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        column = len(lines[call.lineno - 1].encode("utf-8")[:call.col_offset].decode("utf-8", "ignore")) + 1 \
            if 0 < call.lineno <= len(lines) else call.col_offset + 1
        where = (rel, call.lineno, column)
        arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            found.append(LintProblem(*where, "patch: ctx.patched takes the patch's name as one string literal "
                                     "(ctx.patched(\"new-refund\")): a replay finds the patch by it", "patch"))
            continue
        if not PATCH_NAME.match(arg.value):
            found.append(LintProblem(*where, f"patch: the patch name {arg.value!r} must be lowercase letters, digits "
                                     "and _ . - (at most 100)", "patch"))
        elif arg.value in seen:
            found.append(LintProblem(*where, f"patch: the patch name {arg.value!r} is used again (first on line "
                                     f"{seen[arg.value]}): give each change its own name, so each is retired on "
                                     "its own", "patch"))
        else:
            seen[arg.value] = call.lineno
    return found


def _outline_problems(rel: str, source: str, tree: ast.Module) -> list[LintProblem]:
    """What the outline of each workflow the file defines cannot draw (the worker refuses these too,
    as sanoma.E008). A `run` defined in another file is outlined where the worker reads it, not here."""
    defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found = []
    for outline in outlines_in_source(source, rel):
        if outline.function != "<lambda>" and outline.function not in defined:
            continue
        for problem in outline.problems:
            found.append(LintProblem(rel, problem.line, _characters(lines, problem.line, problem.column),
                                     f"outline: {problem.message}", "outline"))
    return found


def _characters(lines: list[str], line: int, utf16_column: int) -> int:
    """The outline counts columns in UTF-16 units; the lint in characters (they differ past U+FFFF)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    units = text.encode("utf-16-le")[:(utf16_column - 1) * 2]
    return len(units.decode("utf-16-le", errors="ignore")) + 1


@dataclass
class _Checker(ast.NodeVisitor):
    rel: str
    tree: ast.Module
    allowed: Allowed
    lines: list[str]  # the source, to count columns in characters (`ast` counts UTF-8 bytes)
    problems: list[LintProblem] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)  # local name -> dotted name it stands for
    bound: set[str] = field(default_factory=set)  # every name the file binds itself
    calls: dict[int, ast.Call] = field(default_factory=dict)  # id(func node) -> the call

    # --- reading the file ---------------------------------------------------------------------

    def check(self) -> None:
        assigned: dict[str, int] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.calls[id(node.func)] = node
            for name in _names_bound(node):
                self.bound.add(name)
                assigned[name] = assigned.get(name, 0) + 1
        typing_only = _typing_only_imports(self.tree)
        for node in ast.walk(self.tree):
            if id(node) in typing_only:
                continue  # never runs: only a type checker reads it
            if isinstance(node, ast.Import):
                self.check_import(node)
            elif isinstance(node, ast.ImportFrom):
                self.check_import_from(node)
        self.follow_aliases(assigned)
        self.visit(self.tree)

    def follow_aliases(self, assigned: Mapping[str, int]) -> None:
        """`clock = time`: a name assigned once, to something imported, stands for it too."""
        for node in ast.walk(self.tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and assigned.get(node.targets[0].id) == 1 and node.targets[0].id not in self.bindings):
                dotted = self.qualify(node.value)
                if dotted is not None:
                    self.bindings[node.targets[0].id] = dotted

    def report(self, node: ast.AST, rule: str, message: str) -> None:
        line = getattr(node, "lineno", 1) or 1
        offset = getattr(node, "col_offset", 0) or 0
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        column = len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore")) + 1
        self.problems.append(LintProblem(self.rel, line, column, message, rule))

    def qualify(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for (`dt.now` -> `datetime.datetime.now`), when it
        starts from an imported name; else None."""
        if isinstance(node, ast.Name):
            return self.bindings.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        return None

    # --- imports --------------------------------------------------------------------------------

    def check_import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self.bindings[local] = alias.name if alias.asname else alias.name.split(".")[0]
            refused = self.refused_import(alias.name, None)
            if refused:
                self.report(alias, *_import_message(f"import {alias.name}{_as(alias)}", refused))

    def check_import_from(self, node: ast.ImportFrom) -> None:
        module = self.absolute(node)
        written = f"from {'.' * node.level}{node.module or ''} import"
        if module is None:
            names = ", ".join(alias.name + _as(alias) for alias in node.names)
            self.report(node, "import", f"`{written} {names}` reaches outside the config root: a workflow imports "
                                        f"{ALLOWED_TEXT}")
            return
        for alias in node.names:
            if alias.name == "*":
                self.report(alias, "import", f"`{written} *` hides which names the workflow uses: import each name "
                                             f"you use by name")
                continue
            self.bindings[alias.asname or alias.name] = f"{module}.{alias.name}"
            refused = self.refused_import(module, alias.name)
            if refused:
                self.report(alias, *_import_message(f"{written} {alias.name}{_as(alias)}", refused))

    def absolute(self, node: ast.ImportFrom) -> str | None:
        """The module an import-from names; None when a relative import climbs out of the root."""
        if node.level == 0:
            return node.module or ""
        parts = self.allowed.module.split(".")
        if not self.allowed.is_package:
            parts = parts[:-1]
        keep = len(parts) - (node.level - 1)
        if keep < 1:
            return None
        return ".".join([*parts[:keep], *([node.module] if node.module else [])])

    def refused_import(self, module: str, name: str | None) -> tuple[str, str] | None:
        """(rule, reason) when the file may not import `name` from `module` (or `module` itself)."""
        top = module.split(".")[0]
        if top == self.allowed.package:
            config = f"{self.allowed.package}.{CONFIG_MODULE}"
            if module == config and name not in self.allowed.config_collections or (
                    module == self.allowed.package and name == CONFIG_MODULE) or module.startswith(f"{config}."):
                return "import", CONFIG
            return None
        if module in self.allowed.connector_modules:
            return None
        if module == AUTHORING and name in VENDOR_HALVES:
            return "import", HALF
        if module == AUTHORING or f"{module}.{name}" == AUTHORING:
            return None
        if "runs.testing" in (module, f"{module}.{name}") or top == "features":
            return "import", TESTING
        if top == "runs":
            return "import", ("is sanoma's engine, not the authoring API: a workflow imports what it needs from "
                              "`runs.authoring`")
        if module in CONNECTORS_PUBLIC or f"{module}.{name}" in CONNECTORS_PUBLIC:
            if name in VENDOR_HALVES:
                return "import", HALF
            return None
        if top == "connectors":
            return "import", ("is a connector's inside: a workflow imports from `connectors` (its public names) or "
                              "`runs.authoring`, and calls vendors through ctx")
        if top in ALLOWED_PACKAGES or module in ALLOWED_STDLIB:
            dotted = f"{module}.{name}" if name else module
            return _member_rule(dotted)
        dotted = f"{module}.{name}" if name else module
        return _member_rule(dotted) or ("import", f"is not among what a workflow may import: {ALLOWED_TEXT}")

    # --- uses -----------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        return  # imports were checked before the walk, wherever they are

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        if self.use(node):
            return
        if node.id in BUILTINS and node.id not in self.bound and node.id not in self.bindings:
            rule, reason = BUILTINS[node.id]
            self.report(node, rule, f"`{node.id}{self.call_suffix(node)}` {reason}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and self.use(node):
            return  # reported once, at the longest refused chain
        self.generic_visit(node)

    def use(self, node: ast.Name | ast.Attribute) -> bool:
        dotted = self.qualify(node)
        refused = _member_rule(dotted) if dotted else None
        if refused is None or dotted is None:
            return False
        rule, reason = refused
        shown = _shown(dotted)
        written = ast.unparse(node)
        suffix = self.call_suffix(node)
        same = written == shown or written.endswith(f".{shown}")
        subject = f"`{written}{suffix}`" if same else f"`{written}{suffix}` (`{shown}{suffix}`)"
        self.report(node, rule, _sentence(subject, reason))
        return True

    def call_suffix(self, node: ast.AST) -> str:
        call = self.calls.get(id(node))
        if call is None:
            return ""
        return "()" if not call.args and not call.keywords else "(...)"

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")
                and node.func.id not in self.bound and len(node.args) == 2):
            found = self.error_class(node.args[1])
            if found:
                self.report(node, "error-class",
                            f"`{node.func.id}({ast.unparse(node.args[0])}, {found[0]})` {_replay_reason(found[1])}: "
                            f"use `error_code({ast.unparse(node.args[0])}) == \"{ERROR_CLASSES[found[1]]}\"`")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        if any(_is_type_of(operand) for operand in operands):
            for operand in operands:
                found = self.error_class(operand)
                if found:
                    self.report(node, "error-class",
                                f"`{ast.unparse(node)}` {_replay_reason(found[1])}: check "
                                f"`error_code(err) == \"{ERROR_CLASSES[found[1]]}\"`")
                    break
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            found = self.error_class(node.type)
            if found:
                self.report(found[2], "error-class",
                            f"`except {found[0]}` {_replay_reason(found[1])}, so it does not catch it on replay: "
                            f"catch `SanomaError` and check `error_code(err) == \"{ERROR_CLASSES[found[1]]}\"`")
        self.generic_visit(node)

    def error_class(self, node: ast.AST) -> tuple[str, str, ast.AST] | None:
        """(as written, class name, node) of the first runtime error class the expression names."""
        items: Iterable[ast.AST] = node.elts if isinstance(node, ast.Tuple) else [node]
        for item in items:
            dotted = self.qualify(item)
            if dotted is None:
                continue
            module, _, name = dotted.rpartition(".")
            if name in ERROR_CLASSES and module in ERROR_MODULES:
                return ast.unparse(item), name, item
        return None


def _typing_only_imports(tree: ast.Module) -> set[int]:
    """The imports under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`), which never run: names for
    annotations only, allowed from anywhere. Their `else:` runs, and is checked."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                or isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"):
            for statement in node.body:
                found.update(id(inner) for inner in ast.walk(statement)
                             if isinstance(inner, (ast.Import, ast.ImportFrom)))
    return found


def _member_rule(dotted: str) -> tuple[str, str] | None:
    """The rule for a dotted name: the longest refused name it starts with (`os.environ.get` is
    `os.environ`), a member before its module."""
    parts = dotted.split(".")
    for size in range(len(parts), 0, -1):
        name = ".".join(parts[:size])
        if name in MEMBERS:
            return MEMBERS[name]
        for prefix, rule, reason in MEMBER_PREFIXES:
            if size >= 2 and name.startswith(prefix):
                return rule, reason
        if name in MODULES:
            return MODULES[name]
    return None


def _import_message(written: str, refused: tuple[str, str]) -> tuple[str, str]:
    rule, reason = refused
    return rule, _sentence(f"`{written}`", reason)


def _as(alias: ast.alias) -> str:
    return f" as {alias.asname}" if alias.asname else ""


def _sentence(subject: str, reason: str) -> str:
    """`subject reason`, or `subject: reason` when the reason starts with its own colon."""
    return f"{subject}{reason}" if reason.startswith(":") else f"{subject} {reason}"


def _shown(dotted: str) -> str:
    """How a message names a dotted name: `datetime.datetime.now` reads `datetime.now`."""
    for prefix in ("datetime.datetime.", "datetime.date."):
        if dotted.startswith(prefix):
            return dotted[len("datetime."):]
    return dotted


def _replay_reason(name: str) -> str:
    return f"checks the error's class, which a replay does not keep (it raises a recorded error again as a " \
           f"`SanomaError`, not a `{name}`)"


def _is_type_of(node: ast.AST) -> bool:
    """`type(x)` or `x.__class__`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
        return len(node.args) == 1
    return isinstance(node, ast.Attribute) and node.attr == "__class__"


def _names_bound(node: ast.AST) -> list[str]:
    """The names a node binds (not imports: those are followed as bindings)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []
