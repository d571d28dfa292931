"""Runs the code blocks a docs page marks, so a page's commands cannot stop working unnoticed.

A block is marked by an HTML comment right before its fence (invisible on the built site):

    <!-- docs-test: shell -->            a console transcript: `$ command` lines, each followed by the
                                         output it must print ("..." matches anything); without any
                                         `$ ` line, the block is one bash script (set -e)
    <!-- docs-test: python -->           Python, run with the project's interpreter
    <!-- docs-test: output -->           what the block before it (a shell script or Python) prints
    <!-- docs-test: write PATH -->       write the block to PATH (relative to the current folder);
                                         without PATH, the fence's title="..." names it
    <!-- docs-test: background -->       start the block (a bash script) and leave it running until
                                         the page ends (ready="text": wait until it prints that);
                                         then Ctrl-C (SIGINT to its process group), SIGKILL after 10 s

Options after the action: `status=N` (the exit status a shell or python block must end with, default
0) and `timeout=SECONDS` (default 180; for background, how long to wait for `ready`). A directive
whose comment holds more lines is a hidden block: its lines are the code, nothing is shown.

Each page runs in a fresh folder of its own, set up like a checkout of the project: `manage.py`,
`.venv` and `features/` (where `manage.py behave` finds its steps) there point at the project's,
so `.venv/bin/python manage.py ...` works as the pages write it. The commands get the environment
of the tests without any SANOMA_*, DJANGO_* or DATABASE_* variable, and SANOMA_VAR_DIR=<folder>/var
(so the database is a SQLite file there). Blocks run in page order, and as in a terminal, `cd` and
`export` carry over from one block to the next.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

PROJECT = Path(__file__).resolve().parents[2]
DOCS = PROJECT / "docs"
ACTIONS = ("shell", "python", "output", "write", "background")
OPTIONS = {"status", "timeout", "ready"}
DEFAULT_TIMEOUT = 180.0
# What a page's folder links to from the project, so commands run there as in a checkout:
# `manage.py behave` reads its steps from `features/` under the current folder.
CHECKOUT = ("manage.py", ".venv", "features")
DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(?P<head>[^\n]*?)\s*(?:-->\s*)?$")
TITLE = re.compile(r"""title=(?:"([^"]*)"|'([^']*)'|(\S+))""")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Variables a command must not inherit from the test run: they would point it at the tests' database.
INHERITED_PREFIXES = ("SANOMA_", "DJANGO_", "DATABASE_", "PYTEST_")


class DocsError(AssertionError):
    """A page's block did not do what the page says (or a directive is wrong): names page and line."""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the directive
    action: str
    arg: str | None
    options: dict[str, str]
    code: str
    hidden: bool

    @property
    def where(self) -> str:
        try:
            name = self.page.relative_to(PROJECT)
        except ValueError:
            name = self.page
        return f"{name}:{self.line}"

    @property
    def status(self) -> int:
        return int(self.options.get("status", "0"))

    @property
    def timeout(self) -> float:
        return float(self.options.get("timeout", DEFAULT_TIMEOUT))


def parse_page(page: Path) -> list[Block]:
    """The marked blocks of a page, in order; a directive that is wrong raises DocsError."""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    blocks: list[Block] = []
    pending: tuple[int, str, str | None, dict[str, str]] | None = None
    for token in tokens:
        if token.type == "html_block" and "docs-test:" in token.content:
            if pending is not None:
                raise DocsError(f"{page}:{pending[0]}: docs-test: {pending[1]} is not followed by a fenced block")
            line = (token.map or [0])[0] + 1
            first, _, rest = token.content.strip().partition("\n")
            match = DIRECTIVE.match(first)
            if match is None:
                raise DocsError(f"{page}:{line}: a docs-test directive is `<!-- docs-test: ACTION ... -->`")
            action, arg, options = _read_head(page, line, match["head"])
            if rest.strip():  # a hidden block: the comment's own lines are the code
                body, _, _ = rest.rpartition("-->")
                blocks.append(Block(page, line, action, arg, options, _dedent(body), hidden=True))
            else:
                pending = (line, action, arg, options)
        elif token.type == "fence" and pending is not None:
            line, action, arg, options = pending
            pending = None
            if action == "write" and arg is None:
                title = TITLE.search(token.info)
                if title is None:
                    raise DocsError(f"{page}:{line}: docs-test: write needs a PATH, or a title=\"PATH\" on the fence")
                arg = next(group for group in title.groups() if group is not None)
            blocks.append(Block(page, line, action, arg, options, token.content, hidden=False))
        elif pending is not None:
            raise DocsError(f"{page}:{pending[0]}: docs-test: {pending[1]} is not followed by a fenced block")
    if pending is not None:
        raise DocsError(f"{page}:{pending[0]}: docs-test: {pending[1]} is not followed by a fenced block")
    for before, block in zip([None, *blocks], blocks, strict=False):
        if block.action == "output" and (before is None or before.action not in ("shell", "python")
                                         or (before.action == "shell" and _is_transcript(before.code))):
            raise DocsError(f"{block.where}: docs-test: output follows a shell script or a python block "
                            "(a transcript's output is written under its `$ ` lines)")
    return blocks


def _read_head(page: Path, line: int, head: str) -> tuple[str, str | None, dict[str, str]]:
    words = shlex.split(head)
    if not words or words[0] not in ACTIONS:
        found = words[0] if words else "nothing"
        raise DocsError(f"{page}:{line}: docs-test: {found} is not an action; the actions are {', '.join(ACTIONS)}")
    action, arg, options = words[0], None, {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if eq:
            if key not in OPTIONS:
                raise DocsError(f"{page}:{line}: docs-test: unknown option {key}; the options are "
                                f"{', '.join(sorted(OPTIONS))}")
            options[key] = value
        elif action == "write" and arg is None:
            arg = word
        else:
            raise DocsError(f"{page}:{line}: docs-test: {action} takes no argument {word!r}")
    for key in ("status", "timeout"):
        if key in options and not re.fullmatch(r"\d+(\.\d+)?", options[key]):
            raise DocsError(f"{page}:{line}: docs-test: {key}={options[key]} is not a number")
    return action, arg, options


def _dedent(text: str) -> str:
    lines = text.strip("\n").splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines) + "\n"


def _is_transcript(code: str) -> bool:
    return any(line.startswith("$ ") for line in code.splitlines())


def pages_with_tests(docs: Path = DOCS) -> list[Path]:
    """The pages that mark at least one block (a page may also show the directives as examples)."""
    return sorted(page for page in docs.rglob("*.md")
                  if "docs-test:" in page.read_text(encoding="utf-8") and parse_page(page))


# ---- matching output ------------------------------------------------------------------------------

def normalize(text: str) -> str:
    lines = [ANSI.sub("", line).rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def matches(expected: str, actual: str) -> bool:
    """Line by line; a line `...` matches any lines (none too), `...` within a line any text."""
    pattern = []
    for line in normalize(expected).splitlines():
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append("[^\n]*".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), normalize(actual)) is not None


# ---- running a page -------------------------------------------------------------------------------

@dataclass
class Session:
    """One page's folder, its terminal state (current folder, exported variables) and what it left running."""

    folder: Path
    cwd: Path
    env: dict[str, str]
    state: Path
    background: list[tuple[Block, subprocess.Popen[bytes]]] = field(default_factory=list)

    @classmethod
    def fresh(cls, base: Path) -> Session:
        folder, state = base / "page", base / ".state"
        folder.mkdir(parents=True)
        state.mkdir()
        for name in CHECKOUT:
            (folder / name).symlink_to(PROJECT / name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(INHERITED_PREFIXES)}
        env["SANOMA_VAR_DIR"] = str(folder / "var")
        return cls(folder=folder, cwd=folder, env=env, state=state)

    def bash(self, command: str, timeout: float) -> tuple[int, str]:
        """Run a command as a terminal would, keeping where it ended and what it exported."""
        saved = self.state / "env"
        script = (f"trap '__status=$?; pwd > {shlex.quote(str(self.state / 'cwd'))}; "
                  f"env -0 > {shlex.quote(str(saved))}; exit $__status' EXIT\n{command}\n")
        status, output = self._run(["bash", "-c", script], timeout)
        if (self.state / "cwd").exists():
            self.cwd = Path((self.state / "cwd").read_text().strip())
            pairs = (item.partition("=") for item in saved.read_text().split("\0") if "=" in item)
            self.env = {k: v for k, _, v in pairs if k not in ("_", "SHLVL", "PWD", "OLDPWD")}
        return status, output

    def _run(self, argv: list[str], timeout: float) -> tuple[int, str]:
        try:
            done = subprocess.run(argv, cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired as err:
            out = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else ""
            return -1, out + f"\n(still running after {timeout:g} s: stopped)"
        return done.returncode, done.stdout.decode(errors="replace")

    def start(self, block: Block) -> None:
        log = self.state / f"background-{len(self.background)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(["bash", "-c", block.code], cwd=self.cwd, env=self.env, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.background.append((block, process))
        ready = block.options.get("ready")
        if ready is None:
            return
        deadline = time.monotonic() + block.timeout
        while ready not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                why = f"ended with status {process.returncode}" if process.poll() is not None else \
                    f"did not print it within {block.timeout:g} s"
                raise DocsError(f"{block.where}: background block waited for {ready!r} and {why}:\n"
                                f"{log.read_text(errors='replace')}")
            time.sleep(0.1)

    def stop(self, grace: float = 10.0) -> None:
        """Every background block's process group gets SIGINT, as Ctrl-C in its terminal sends it (what a
        page tells its reader to do), then SIGKILL after `grace` seconds."""
        for _, process in self.background:
            if process.poll() is None:
                _signal_group(process, signal.SIGINT)
        deadline = time.monotonic() + grace
        for _, process in self.background:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
            _signal_group(process, signal.SIGKILL)  # anything it left behind in its group


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def transcript(code: str) -> Iterator[tuple[str, str]]:
    """(command, expected output) pairs of a console transcript; `\\` at a line's end continues it."""
    command: list[str] | None = None
    expected: list[str] = []
    continued = False
    for line in code.splitlines():
        if continued and command is not None:
            command.append(line)
        elif line.startswith("$ "):
            if command is not None:
                yield "\n".join(command), "\n".join(expected)
            command, expected = [line[2:]], []
        elif command is not None:
            expected.append(line)
        continued = line.endswith("\\")
    if command is not None:
        yield "\n".join(command), "\n".join(expected)


def _check(block: Block, command: str, status: int, output: str, expected: str | None) -> None:
    problems = []
    if status != block.status:
        problems.append(f"exited {status}, the page expects {block.status}")
    if expected is not None and not matches(expected, output):
        problems.append(f"printed what the page does not show.\n--- the page shows:\n{normalize(expected)}"
                        f"--- it printed:\n{normalize(output)}")
    if problems:
        shown = output if expected is None else ""
        raise DocsError(f"{block.where}: {command.strip()}\n" + "\n".join(problems)
                        + (f"\n--- it printed:\n{normalize(shown)}" if shown else ""))


def run_page(page: Path, base: Path) -> None:
    """Run a page's marked blocks in order, in a fresh folder under `base`; DocsError on the first that fails."""
    blocks = parse_page(page)
    session = Session.fresh(base)
    try:
        for index, block in enumerate(blocks):
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            expected = following.code if following is not None and following.action == "output" else None
            if block.action == "shell" and _is_transcript(block.code):
                for command, shown in transcript(block.code):
                    status, output = session.bash(command, block.timeout)
                    _check(block, "$ " + command, status, output, shown if shown.strip() else None)
            elif block.action == "shell":
                status, output = session.bash("set -e\n" + block.code, block.timeout)
                _check(block, block.code, status, output, expected)
            elif block.action == "python":
                status, output = session._run([sys.executable, "-c", block.code], block.timeout)
                _check(block, block.code, status, output, expected)
            elif block.action == "write":
                assert block.arg is not None
                target = session.cwd / block.arg
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.code, encoding="utf-8")
            elif block.action == "background":
                session.start(block)
    finally:
        session.stop()
