"""What `manage.py lint` and the worker refuse in a workflow, shown on purpose-made bad files.

Each test writes a config root under a temporary folder, runs `manage.py lint --root` on it as an
operator would, and checks each refused use is reported at its line and column with what to write
instead. The outline test also starts the config the way the worker does (the system checks) and
checks the worker refuses the same lines.
"""
from __future__ import annotations

import io
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from runs.config.checks import check_config

CONFIG = """
    from runs.authoring import SanomaConfig
    from runs.tests.fixtures import acme

    config = SanomaConfig(app_name="lintco", connectors=[acme])
"""


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """An empty config root with a package name of its own (the worker imports it by its folder name)."""
    name = f"lintco_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / name
    (folder / "workflows").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "workflows" / "__init__.py").write_text("")
    (folder / "sanoma_config.py").write_text(textwrap.dedent(CONFIG).lstrip("\n"))
    yield folder
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def lint_command(root: Path) -> tuple[int, dict[tuple[int, int], str]]:
    """`manage.py lint --root ROOT`: its exit status and each reported problem of `workflows/bad.py`
    by (line, column), the message as printed."""
    out = io.StringIO()
    try:
        call_command("lint", "--root", str(root), stdout=out)
        code = 0
    except SystemExit as exit:
        code = int(exit.code or 0)
    prefix = f"{root}/workflows/bad.py:"
    found: dict[tuple[int, int], str] = {}
    for printed in out.getvalue().splitlines():
        if printed.startswith(prefix):
            line, column, message = printed[len(prefix):].split(":", 2)
            found[(int(line), int(column))] = message.strip()
    return code, found


# --- the clock, randomness, the network, timers and threads, the environment, asyncio ----------------

REPLAY_BREAKERS = """
    import asyncio
    import os
    import random
    import threading
    import time
    import urllib.request
    import uuid
    from datetime import datetime

    import requests

    from runs.authoring import define_workflow


    def run(ctx, input):
        started = datetime.now()
        stamp = time.time()
        pick = random.random()
        key = uuid.uuid4()
        page = urllib.request.urlopen("https://example.com/prices")
        reply = requests.get("https://example.com/prices")
        time.sleep(5)
        timer = threading.Timer(5, print)
        token = os.environ["TOKEN"]
        both = asyncio.gather(page, reply)
        return [started, stamp, pick, key, timer, token, both]


    bad = define_workflow(name="bad", run=run)
"""


def test_the_clock_randomness_network_timers_environment_and_asyncio_are_each_reported_with_what_to_use(root):
    """Everything that would make a replay differ from the first run is reported at its use, and each
    message says what to write instead: `ctx.now()` for the clock, `ctx.sleep(...)` for a wait,
    `ctx.all([...])` for work side by side, an operation on a connector for the network, and the
    input or a connector's environment for randomness and the environment."""
    write(root, "workflows/bad.py", REPLAY_BREAKERS)
    code, found = lint_command(root)
    assert code == 1
    uses = {
        (16, 15): ("`datetime.now()`", "use `ctx.now()`"),
        (17, 13): ("`time.time()`", "use `ctx.now()`"),
        (18, 12): ("`random.random()`", "take it as input, or record it with a ctx call"),
        (19, 11): ("`uuid.uuid4()`", "take it as input, or record it with a ctx call"),
        (20, 12): ("`urllib.request.urlopen(...)`", "declare an operation on a connector and call it through ctx"),
        (21, 13): ("`requests.get(...)`", "declare an operation on a connector and call it through ctx"),
        (22, 5): ("`time.sleep(...)`", "use `ctx.sleep(seconds=...)`"),
        (23, 13): ("`threading.Timer(...)`", "use `ctx.all([...])` for a fan-out"),
        (24, 13): ("`os.environ`", "use a connector's environment (credentials) or the workflow's input"),
        (25, 12): ("`asyncio.gather(...)`", "use `ctx.all([...])` for a fan-out"),
    }
    for where, (written, instead) in uses.items():
        assert where in found, f"nothing reported at line {where[0]}, column {where[1]}: {found}"
        assert found[where].startswith(f"{written} ") and instead in found[where], found[where]
    # Each refused module is reported at its import as well; nothing else is.
    imports = {(1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (6, 8), (10, 8)}
    assert set(found) == set(uses) | imports
    assert found[(5, 8)].startswith("`import time`: a workflow does not use `time`")
    assert found[(10, 8)].startswith("`import requests` reaches the network outside the policy and the ledger")


# --- imports ------------------------------------------------------------------------------------

IMPORTS = """
    from __future__ import annotations

    import importlib
    from typing import TYPE_CHECKING

    from connectors import define_driver
    from connectors.drivers import http_driver
    from features.steps.sanoma_steps import given_the_run
    from runs.authoring import *
    from runs.services import start
    from runs.testing import resolve_on_fakes

    from .. import sanoma_config
    from ..sanoma_config import config

    if TYPE_CHECKING:
        from runs.models import Run
        from runs.testing import make_user


    def run(ctx, input: Run | None = None):
        other = importlib.import_module("json")
        same = __import__("json")
        return [other, same]
"""


def test_imports_beyond_the_authoring_api_are_each_reported_and_type_only_imports_are_allowed(root):
    """A workflow imports the authoring API, its connectors and its own files. The testing library,
    a connector's driver half, the engine's services, `import *`, an import made while running, and
    the config itself are each reported at the import; what is imported under `if TYPE_CHECKING:`
    never runs (it is there for annotations), so it is allowed."""
    write(root, "workflows/bad.py", IMPORTS)
    code, found = lint_command(root)
    assert code == 1
    expected = {
        (3, 8): "`import importlib` runs code built while the workflow runs",
        (6, 24): "`from connectors import define_driver` belongs to a vendor's driver or fake",
        (7, 32): "`from connectors.drivers import http_driver` is a connector's inside",
        (8, 41): "`from features.steps.sanoma_steps import given_the_run` is sanoma's testing library",
        (9, 28): "`from runs.authoring import *` hides which names the workflow uses",
        (10, 27): "`from runs.services import start` is sanoma's engine, not the authoring API",
        (11, 26): "`from runs.testing import resolve_on_fakes` is sanoma's testing library",
        (13, 16): "`from .. import sanoma_config` is the config the worker is built from",
        (14, 29): "`from ..sanoma_config import config` is the config the worker is built from",
        (22, 13): "`importlib.import_module(...)` runs code built while the workflow runs",
        (23, 12): "`__import__(...)` runs code built while the workflow runs",
    }
    assert sorted(found) == sorted(expected), found
    for where, start in expected.items():
        assert found[where].startswith(start), found[where]
    assert "a workflow imports what it needs from `runs.authoring`" in found[(11, 26)]
    assert not any(line in (17, 18) for line, _ in found)  # under `if TYPE_CHECKING:`


def test_the_collections_the_config_declares_may_be_imported_from_it_and_nothing_else(root):
    """The config declares the collections its workflows call, so a workflow imports those from it by
    name; anything else the config holds (its connectors with their drivers, the config object) is
    refused."""
    write(root, "sanoma_config.py", """
        from pydantic import BaseModel
        from runs.authoring import SanomaConfig, define_collection
        from runs.tests.fixtures import acme


        class Note(BaseModel):
            order_id: str


        notes = define_collection("notes", record=Note, key="order_id")
        config = SanomaConfig(app_name="lintco", connectors=[acme], collections=[notes])
    """)
    write(root, "workflows/bad.py", f"""
        from {root.name}.sanoma_config import notes
        from {root.name}.sanoma_config import acme
        import {root.name}.sanoma_config
    """)
    code, found = lint_command(root)
    assert code == 1
    assert sorted(found) == [(2, len(f"from {root.name}.sanoma_config import ") + 1), (3, 8)]
    assert all("is the config the worker is built from" in message for message in found.values())


# --- checks on an error's class -----------------------------------------------------------------

ERROR_CLASS = """
    from connectors import DriverError, SanomaError, error_code
    from runs.authoring import define_workflow


    def run(ctx, input):
        try:
            ctx.acme.order.get({"order_id": "1"})
        except SanomaError as err:
            if isinstance(err, DriverError):
                return "the vendor failed"
            if error_code(err) == "driver_failed":
                return "the vendor failed, checked as a replay sees it"
            raise
        return "found"


    bad = define_workflow(name="bad", run=run, uses=["acme.order.get"])
"""


def test_a_check_on_a_drivers_error_class_is_reported_pointing_to_error_code(root):
    """A replay raises a recorded error again as a `SanomaError` carrying its code, so
    `isinstance(err, DriverError)` answers differently on replay; the lint says to check
    `error_code(err)` instead, and the check written that way passes."""
    write(root, "workflows/bad.py", ERROR_CLASS)
    code, found = lint_command(root)
    assert code == 1
    assert list(found) == [(9, 12)]
    assert found[(9, 12)] == (
        "`isinstance(err, DriverError)` checks the error's class, which a replay does not keep (it raises a recorded "
        "error again as a `SanomaError`, not a `DriverError`): use `error_code(err) == \"driver_failed\"`")


# --- what the outline cannot draw ---------------------------------------------------------------

UNDRAWABLE = """
    from runs.authoring import define_workflow

    USES = ["acme.order.get", "acme.mail.send"]


    def look_up(ctx, order_id, depth):
        order = ctx.acme.order.get({"order_id": order_id})
        if depth:
            look_up(ctx, order_id, depth - 1)
        return order


    def raises_outside_except(ctx, input):
        order = ctx.acme.order.get({"order_id": input["order_id"]})
        if order.total == 0:
            raise ValueError("nothing to refund")
        return order.total


    def recurses(ctx, input):
        return look_up(ctx, input["order_id"], 2)


    def hands_ctx_away(ctx, input):
        return input["notifier"].send(ctx)


    def uses_ctx_in_finally(ctx, input):
        try:
            ctx.acme.order.get({"order_id": input["order_id"]})
        finally:
            ctx.acme.mail.send({"to": "ops", "text": "looked"})


    def never_runs(ctx, input):
        for order_id in input["order_ids"]:
            break
            ctx.acme.order.get({"order_id": order_id})


    def ends_each_arm(ctx, input):
        order = ctx.acme.order.get({"order_id": input["order_id"]})
        if order.total == 0:
            return "nothing to refund"
        try:
            ctx.acme.mail.send({"to": "ops", "text": "refund"})
        except Exception:
            raise
        return "told"


    first = define_workflow(name="recurses", run=recurses, uses=USES)
    second = define_workflow(name="raises-outside-except", run=raises_outside_except, uses=USES)
    third = define_workflow(name="hands-ctx-away", run=hands_ctx_away, uses=USES)
    fourth = define_workflow(name="never-runs", run=never_runs, uses=USES)
    fifth = define_workflow(name="uses-ctx-in-finally", run=uses_ctx_in_finally, uses=USES)
    sixth = define_workflow(name="ends-each-arm", run=ends_each_arm, uses=USES)
"""

UNDRAWN = {  # (line, column): what the message starts with
    (9, 9): "look_up() calls itself (look_up → look_up)",
    (16, 9): "raise outside an except handler",
    (25, 35): "ctx is passed to input[\"notifier\"].send()",
    (32, 9): "ctx is used in a finally block",
    (38, 9): "this never runs: it follows the break at line 37",
}


def test_an_undrawable_body_is_refused_when_the_worker_starts_and_reported_by_the_lint(root):
    """A workflow's picture is drawn from its file before it runs, so its body may only hold what the
    picture can show: a helper calling itself, a raise outside an except handler, ctx handed to what
    the outline cannot read, ctx in a `finally` and a call that never runs are refused when the
    worker starts (each a sanoma.E008 error at its file and line) and reported by the lint at the
    same places. A return or raise that ends an if arm or an except handler is drawn as the way out,
    so it passes."""
    write(root, "workflows/bad.py", UNDRAWABLE)
    # The worker checks the config before it starts: one error per place, nothing else wrong.
    with override_settings(SANOMA_ROOT=str(root), SANOMA_FAKES="instance"):
        errors = check_config()
    assert [error.id for error in errors] == ["sanoma.E008"] * len(UNDRAWN), [str(e) for e in errors]
    refused = {str(error.obj): str(error.msg) for error in errors}
    assert sorted(refused) == sorted(f"{root}/workflows/bad.py:{line}" for line, _ in UNDRAWN)
    for (line, column), start in UNDRAWN.items():
        assert f"at workflows/bad.py:{line}:{column}: {start}" in refused[f"{root}/workflows/bad.py:{line}"]
    # The lint reports the same places, and nothing about the workflow that ends its arms.
    code, found = lint_command(root)
    assert code == 1
    assert sorted(found) == sorted(UNDRAWN)
    for where, start in UNDRAWN.items():
        assert found[where].startswith(f"outline: {start}"), found[where]


def test_ordinary_python_with_early_returns_loops_that_break_and_helpers_passes_both(root):
    """Early returns (in a branch, in a loop), `break` and `continue` in loops that call ctx, and
    helpers of the same file taking ctx (one calling another) are drawn: the worker's checks and
    the lint pass the file."""
    write(root, "workflows/bad.py", """
        from runs.authoring import define_workflow


        def tell(ctx, to, text):
            return ctx.acme.mail.send({"to": to, "text": text})


        def look_up(c, order_id):
            order = c.acme.order.get({"order_id": order_id})
            if order.total > 1000:
                tell(c, "finance", "big")
                return order
            return order


        def run(ctx, input):
            if not input["order_ids"]:
                return None
            for order_id in input["order_ids"]:
                if not order_id:
                    continue
                order = look_up(ctx, order_id)
                if order.total == 0:
                    return "empty"
                if order.total > 5000:
                    break
            ctx.all([lambda: tell(ctx, "a", "done"), lambda: tell(ctx, "b", "done")])
            return "told"


        good = define_workflow(name="good", run=run, uses=["acme.order.get", "acme.mail.send", "all"])
    """)
    with override_settings(SANOMA_ROOT=str(root), SANOMA_FAKES="instance"):
        assert check_config() == []
    assert lint_command(root) == (0, {})


def test_the_same_body_written_to_be_drawn_passes_both(root):
    """Written so the picture can show it (the loop runs to its end, the failure is raised from an
    except handler, the call after the try instead of in `finally`), the same work passes the
    worker's checks and the lint."""
    write(root, "workflows/bad.py", """
        from runs.authoring import define_workflow


        def run(ctx, input):
            big = [ctx.acme.order.get({"order_id": order_id}) for order_id in input["order_ids"] if order_id]
            try:
                ctx.acme.order.get({"order_id": input["order_id"]})
            except Exception:
                ctx.acme.mail.send({"to": "ops", "text": "missing"})
                raise
            ctx.acme.mail.send({"to": "ops", "text": "looked"})
            return [order.order_id for order in big if order.total > 1000]


        good = define_workflow(name="good", run=run, uses=["acme.order.get", "acme.mail.send"])
    """)
    with override_settings(SANOMA_ROOT=str(root), SANOMA_FAKES="instance"):
        assert check_config() == []
    assert lint_command(root) == (0, {})
