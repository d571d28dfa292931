"""Purpose-made config roots and a way to run `manage.py behave` on them in a subprocess.

`make_root(tmp_path, features)` writes a small company (a `desk` vendor with a fake, a few
workflows, a Cedar policy, a step set) and the given feature files under its `scenarios/`;
`run_behave(root)` runs `manage.py behave` with `SANOMA_ROOT` pointing at it and returns the exit
code and output. The subprocess gets its own var folder, and on PostgreSQL its own database name,
so it never touches the test database of the pytest session that started it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent
from urllib.parse import urlparse, urlunparse

PROJECT = Path(__file__).resolve().parents[2]

CONNECTOR = '''
from pydantic import BaseModel, Field

from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake
from features.library import StepSet


class Opening(BaseModel):
    title: str = Field(min_length=1)
    priority: int = 1
    urgent: bool = False


class Ticket(BaseModel):
    ticket_id: str
    title: str


class Closing(BaseModel):
    ticket_id: str


class Closed(BaseModel):
    ticket_id: str
    closed: bool


desk = define_connector("desk", {
    "ticket": {
        "open": op(effect="write", input=Opening, output=Ticket, given=GIVEN, expect=EXPECT),
        "close": op(effect="write", input=Closing, output=Closed),
    },
})


def _open(state, i, c):
    ticket = {"ticket_id": f"t{len(state['tickets']) + 1}", "title": i.title}
    state["tickets"].append(ticket)
    return ticket


def _close(state, i, c):
    return {"ticket_id": i.ticket_id, "closed": True}


def make_fake(file=None):
    return define_fake(desk, initial=lambda: {"tickets": []},
                       ops={"ticket": {"open": _open, "close": _close}}, file=file)


steps = StepSet("desk")


@steps.then("{int} ticket(s) is/are open")
def tickets_open(world, count):
    found = len(world.fake("desk").state["tickets"])
    assert found == count, f"{found} tickets are open, not {count}"


@steps.given("{word} is rate limited once")
def ambiguous(world, word):
    pass


desk = with_setup(desk, fake=make_fake, steps=steps)
'''

WORKFLOWS = {
    "triage.py": '''
from pydantic import BaseModel

from ROOT.desk import desk
from runs.authoring import define_workflow


class TriageInput(BaseModel):
    title: str
    priority: int = 1
    urgent: bool = False


def run(ctx, input):
    ticket = ctx.desk.ticket.open({"title": input.title, "priority": input.priority, "urgent": input.urgent})
    return {"ticket_id": ticket.ticket_id}


triage = define_workflow(name="triage", input=TriageInput, uses=[desk.op("desk.ticket.open")], run=run)
''',
    "two_approvals.py": '''
from ROOT.desk import desk
from runs.authoring import define_workflow


def run(ctx, input):
    legal = ctx.approval("Legal review", approver="lawyer")
    final = ctx.approval("Final check", approver="boss")
    ticket = ctx.desk.ticket.open({"title": "reviewed"})
    return {"legal": legal.approved_by, "final": final.approved_by, "ticket_id": ticket.ticket_id}


two_approvals = define_workflow(name="two-approvals", uses=[desk.op("desk.ticket.open"), "approval"], run=run)
''',
    "tidy.py": '''
from ROOT.desk import desk
from runs.authoring import define_workflow


def run(ctx, input):
    ticket = ctx.desk.ticket.open({"title": "to close"})
    ctx.desk.ticket.close({"ticket_id": ticket.ticket_id})
    return {}


tidy = define_workflow(name="tidy", uses=[desk.op("desk.ticket.open"), desk.op("desk.ticket.close")], run=run)
''',
}

POLICY = '''
@id("open-desk")
permit(principal, action, resource);

@id("no-closing")
@reason("tickets are closed by people, not workflows")
forbid(principal, action == Action::"desk.ticket.close", resource);
'''


def make_root(base: Path, features: dict[str, str], *, given: str = "a ticket {title} is open",
              expect: str = "ticket {title} was opened") -> Path:
    """A config root under `base` with a unique package name, holding `features` in scenarios/."""
    name = f"desk_{uuid.uuid4().hex[:10]}"
    root = base / name
    (root / "workflows").mkdir(parents=True)
    (root / "policies").mkdir()
    (root / "scenarios").mkdir()
    (root / "__init__.py").write_text("")
    (root / "desk.py").write_text(CONNECTOR.replace("GIVEN", repr(given)).replace("EXPECT", repr(expect)))
    (root / "sanoma_config.py").write_text(
        f"from {name}.desk import desk\nfrom runs.authoring import SanomaConfig\n\n"
        "config = SanomaConfig(app_name='desk', connectors=[desk])\n"
    )
    for file, text in WORKFLOWS.items():
        (root / "workflows" / file).write_text(text.replace("ROOT", name))
    (root / "policies" / "desk.cedar").write_text(POLICY)
    for file, text in features.items():
        path = root / "scenarios" / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text).lstrip())
    return root


def subprocess_env(var_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SANOMA_VAR_DIR=str(var_dir), PYTHONDONTWRITEBYTECODE="1", **extra)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    url = env.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        # A database of its own: Django's test database is then test_<name>, not the session's.
        parsed = urlparse(url)
        env["DATABASE_URL"] = urlunparse(parsed._replace(path=f"/scenarios_{uuid.uuid4().hex[:8]}"))
    return env


@dataclass
class Behave:
    returncode: int
    output: str

    def section(self, start: str, end: str | None = None) -> str:
        """The output from the first line holding `start` to the next holding `end`."""
        begin = self.output.find(start)
        if begin < 0:
            return ""
        stop = self.output.find(end, begin + len(start)) if end else -1
        return self.output[begin:stop] if stop >= 0 else self.output[begin:]


def run_behave(root: Path | None, var_dir: Path, *args: str, timeout: float = 300) -> Behave:
    # Scenarios run on the fakes. The system checks manage.py runs first resolve the config with
    # SANOMA_FAKES, and the desk connector has a fake and no driver.
    extra = {"SANOMA_FAKES": "instance", **({"SANOMA_ROOT": str(root)} if root is not None else {})}
    env = subprocess_env(var_dir, **extra)
    command = [sys.executable, str(PROJECT / "manage.py"), "behave", "--noinput", "--simple",
               "--format", "plain", "--no-capture", *args]
    if root is not None:
        command += ["--include", str(root)]
    done = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=timeout)
    return Behave(done.returncode, done.stdout + done.stderr)
