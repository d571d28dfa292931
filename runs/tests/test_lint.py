"""The lint: each refused use in a workflow file at its line and column with its `ctx` replacement,
aliases and nested code, what stays allowed, policies and data files, and `manage.py lint`."""
from __future__ import annotations

import io
import json
import textwrap
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from company.vendors.shop import shop
from runs.config.lint import RULES, LintError, LintProblem, lint, lint_paths

COMPANY = Path(__file__).resolve().parents[2] / "company"


def make_root(tmp_path: Path, files: dict[str, str], name: str = "acme") -> Path:
    root = tmp_path / name
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def flow(tmp_path: Path, text: str) -> list[tuple[int, int, str, str]]:
    """Lint one workflow file holding `text`: (line, column, rule, message) of each problem."""
    root = make_root(tmp_path, {"workflows/flow.py": text})
    found = lint_paths(root)
    assert all(p.file == "workflows/flow.py" for p in found)
    return [(p.line, p.column, p.rule, p.message) for p in found]


CLOCK = "reads the clock, which differs on every replay: use `ctx.now()`"
RANDOM = "is random, so it differs on every replay: take it as input, or record it with a ctx call"
NETWORK = ("reaches the network outside the policy and the ledger: declare an operation on a connector and call "
           "it through ctx")
ENV = ("reads the worker's environment, which may differ on every replay: use a connector's environment "
       "(credentials) or the workflow's input")


# --- the example company --------------------------------------------------------------------------


def test_the_example_company_is_clean():
    report = lint(COMPANY)
    assert report.problems == ()
    assert {"workflows/refund.py", "workflows/await_shipment.py", "apps/support/workflows/onboard_team.py",
            "policies/shop.cedar", "resources/catalog.py", "apps/support/resources/agents.py"} <= set(report.files)
    assert lint_paths(COMPANY) == []


def test_a_problem_reads_file_line_column_message():
    problem = LintProblem("workflows/a.py", 3, 7, "`time.time()` reads the clock", "clock")
    assert str(problem) == "workflows/a.py:3:7: `time.time()` reads the clock"
    assert problem.plain() == {"file": "workflows/a.py", "line": 3, "column": 7,
                               "message": "`time.time()` reads the clock", "rule": "clock"}


# --- each refused use ---------------------------------------------------------------------------


def test_the_clock(tmp_path):
    assert flow(tmp_path, """
        from datetime import date, datetime, timezone
        import datetime as dtm


        def run(ctx, input):
            a = datetime.now()
            b = datetime.utcnow().isoformat()
            c = date.today()
            d = dtm.datetime.now(tz=timezone.utc)
            e = datetime.today
            return ctx.now()
    """) == [
        (6, 9, "clock", f"`datetime.now()` {CLOCK}"),
        (7, 9, "clock", f"`datetime.utcnow()` {CLOCK}"),
        (8, 9, "clock", f"`date.today()` {CLOCK}"),
        (9, 9, "clock", f"`dtm.datetime.now(...)` {CLOCK}"),
        (10, 9, "clock", f"`datetime.today` {CLOCK}"),
    ]


def test_the_time_module_its_clock_and_its_sleep(tmp_path):
    found = flow(tmp_path, """
        import time


        def run(ctx, input):
            started = time.time()
            time.sleep(5)
            return time.monotonic() - started
    """)
    assert [(line, column, rule) for line, column, rule, _ in found] == [
        (1, 8, "clock"), (5, 15, "clock"), (6, 5, "sleep"), (7, 12, "clock")]
    assert found[0][3].startswith("`import time`: a workflow does not use `time`")
    assert "`ctx.now()`" in found[0][3] and "`ctx.sleep(...)`" in found[0][3]
    assert found[1][3] == f"`time.time()` {CLOCK}"
    assert found[2][3] == "`time.sleep(...)` holds the worker: use `ctx.sleep(seconds=...)` (a durable sleep that " \
                          "holds no process)"
    assert found[3][3] == f"`time.monotonic()` {CLOCK}"


def test_randomness(tmp_path):
    assert flow(tmp_path, """
        import random
        import secrets
        import uuid
        from os import urandom


        def run(ctx, input):
            pick = random.choice(input.items)
            token = secrets.token_hex(8)
            key = uuid.uuid4()
            same = uuid.uuid5(uuid.NAMESPACE_URL, "https://example.com")
            return urandom(4)
    """) == [
        (1, 8, "randomness", f"`import random` {RANDOM}"),
        (2, 8, "randomness", f"`import secrets` {RANDOM}"),
        (4, 16, "randomness", f"`from os import urandom` {RANDOM}"),
        (8, 12, "randomness", f"`random.choice(...)` {RANDOM}"),
        (9, 13, "randomness", f"`secrets.token_hex(...)` {RANDOM}"),
        (10, 11, "randomness", f"`uuid.uuid4()` {RANDOM}"),
        (12, 12, "randomness", f"`urandom(...)` (`os.urandom(...)`) {RANDOM}"),
    ]


@pytest.mark.parametrize("module", ["requests", "urllib.request", "http.client", "socket", "httpx", "aiohttp",
                                    "smtplib"])
def test_the_network(tmp_path, module):
    found = flow(tmp_path, f"""
        import {module}


        def run(ctx, input):
            return {module}.anything(input.url)
    """)
    assert found == [
        (1, 8, "network", f"`import {module}` {NETWORK}"),
        (5, 12, "network", f"`{module}.anything(...)` {NETWORK}"),
    ]


def test_the_network_through_from_imports(tmp_path):
    assert flow(tmp_path, """
        from urllib.request import urlopen as fetch


        def run(ctx, input):
            return fetch(input.url).read()
    """) == [
        (1, 28, "network", f"`from urllib.request import urlopen as fetch` {NETWORK}"),
        (5, 12, "network", f"`fetch(...)` (`urllib.request.urlopen(...)`) {NETWORK}"),
    ]


@pytest.mark.parametrize("module", ["threading", "multiprocessing", "concurrent.futures", "subprocess", "asyncio"])
def test_threads_and_processes(tmp_path, module):
    found = flow(tmp_path, f"""
        import {module}


        def run(ctx, input):
            {module}.start(lambda: ctx.shop.order.get({{}}))
    """)
    assert [(line, column, rule) for line, column, rule, _ in found] == [(1, 8, "concurrency"), (5, 5, "concurrency")]
    assert found[1][3].startswith(f"`{module}.start(...)` starts work a replay cannot follow: use `ctx.all([...])`")
    assert "`ctx.start_run(...)`" in found[1][3]


def test_the_environment(tmp_path):
    found = flow(tmp_path, """
        import os
        from os import environ as env


        def run(ctx, input):
            token = os.environ["TOKEN"]
            region = os.getenv("REGION", "eu")
            return env.get("X"), os.environ.get("Y"), os.system("ls")
    """)
    assert found[0][:3] == (1, 8, "environment")
    assert found[1:] == [
        (2, 16, "environment", f"`from os import environ as env` {ENV}"),
        (6, 13, "environment", f"`os.environ` {ENV}"),
        (7, 14, "environment", f"`os.getenv(...)` {ENV}"),
        (8, 12, "environment", f"`env.get(...)` (`os.environ.get(...)`) {ENV}"),
        (8, 26, "environment", f"`os.environ.get(...)` {ENV}"),
        (8, 47, "concurrency", found[-1][3]),
    ]
    assert found[-1][3].startswith("`os.system(...)` starts work a replay cannot follow")


def test_files_and_code_built_at_run_time(tmp_path):
    found = flow(tmp_path, """
        def run(ctx, input):
            with open("/etc/prices.json") as f:
                prices = f.read()
            eval(input.expression)
            exec("x = 1")
            code = compile("1", "<x>", "eval")
            mod = __import__("os")
            return hash(prices), id(code), input()
    """)
    assert [(line, column, rule) for line, column, rule, _ in found] == [
        (2, 10, "files"), (4, 5, "dynamic-code"), (5, 5, "dynamic-code"), (6, 12, "dynamic-code"),
        (7, 11, "dynamic-code"), (8, 12, "process-bound"), (8, 26, "process-bound")]
    assert found[0][3].startswith("`open(...)` reads or writes files on the worker")
    assert "declare an operation on a connector and call it through ctx" in found[0][3]
    assert found[1][3].startswith("`eval(...)` runs code built while the workflow runs")
    assert found[5][3].startswith("`hash(...)` differs from one worker process to the next")


def test_input_reads_a_terminal_unless_it_is_the_workflows_input(tmp_path):
    assert flow(tmp_path, """
        def helper():
            return input("name? ")
    """) == [(2, 12, "terminal", "`input(...)` waits for a terminal the worker does not have: take it as the "
                                  "workflow's input, or ask a person with `ctx.approval(...)`")]


def test_imports_beyond_the_authoring_api(tmp_path):
    found = flow(tmp_path, """
        import logging
        from django.utils import timezone
        from runs.testing import run_workflow
        from connectors.fakes import define_fake
        from connectors import define_driver, error_code
        from runs.authoring import *
        from ...elsewhere import helper
        from .. import sanoma_config
        import json, math, re
    """)
    assert [(line, column, rule) for line, column, rule, _ in found] == [
        (1, 8, "import"), (2, 26, "import"), (3, 26, "import"), (4, 30, "import"), (5, 24, "import"),
        (6, 28, "import"), (7, 1, "import"), (8, 16, "import")]
    messages = [message for _, _, _, message in found]
    assert messages[0].startswith("`import logging` is not among what a workflow may import: runs.authoring, ")
    assert messages[1].startswith("`from django.utils import timezone` is not among")
    assert messages[2] == ("`from runs.testing import run_workflow` is sanoma's testing library, which runs "
                           "workflows on fakes from the tests: a workflow imports what it needs from `runs.authoring`")
    assert messages[3].startswith("`from connectors.fakes import define_fake` is a connector's inside")
    assert messages[4].startswith("`from connectors import define_driver` belongs to a vendor's driver or fake")
    assert messages[5].startswith("`from runs.authoring import *` hides which names the workflow uses")
    assert messages[6].startswith("`from ...elsewhere import helper` reaches outside the config root")
    assert messages[7].startswith("`from .. import sanoma_config` is the config the worker is built from")


def test_checks_on_error_classes(tmp_path):
    found = flow(tmp_path, """
        from connectors import DriverError, SanomaError, error_code
        from connectors.errors import DriverTimeout
        from runs.authoring import SanomaError as Base


        def run(ctx, input):
            try:
                ctx.shop.order.get({"order_id": input.order_id})
            except (DriverTimeout, KeyError):
                pass
            except Base as err:
                if isinstance(err, DriverError):
                    return "vendor"
                if type(err) is DriverError or err.__class__ == DriverTimeout:
                    return "class"
                if isinstance(err, SanomaError) and error_code(err) == "driver_failed":
                    return "fine"
    """)
    assert [(line, column, rule) for line, column, rule, _ in found] == [
        (9, 13, "error-class"), (12, 12, "error-class"), (14, 12, "error-class"), (14, 40, "error-class")]
    assert found[0][3] == (
        "`except DriverTimeout` checks the error's class, which a replay does not keep (it raises a recorded error "
        "again as a `SanomaError`, not a `DriverTimeout`), so it does not catch it on replay: catch `SanomaError` and "
        "check `error_code(err) == \"driver_timeout\"`")
    assert found[1][3] == (
        "`isinstance(err, DriverError)` checks the error's class, which a replay does not keep (it raises a recorded "
        "error again as a `SanomaError`, not a `DriverError`): use `error_code(err) == \"driver_failed\"`")
    assert found[2][3].startswith("`type(err) is DriverError` checks the error's class")
    assert found[3][3].startswith("`err.__class__ == DriverTimeout` checks the error's class")


def test_aliases_attribute_chains_nested_functions_and_lambdas(tmp_path):
    assert flow(tmp_path, """
        import datetime as d
        import time as t
        from datetime import datetime as dt


        def run(ctx, input):
            clock = t
            stamp = lambda: dt.now()

            def inner():
                def deeper():
                    return d.datetime.utcnow()
                return deeper() + t.time()

            class Later:
                when = d.date.today()

            return [x for x in [clock.perf_counter()]], stamp, inner, Later
    """) == [
        (2, 8, "clock", "`import time as t`: a workflow does not use `time`, which reads the worker's clock and "
                        "holds the worker in sleeps: use `ctx.now()` for the time, `ctx.sleep(...)` to wait, and "
                        "`datetime` for dates and times"),
        (7, 13, "clock", "`t` (`time`): a workflow does not use `time`, which reads the worker's clock and holds the "
                         "worker in sleeps: use `ctx.now()` for the time, `ctx.sleep(...)` to wait, and `datetime` "
                         "for dates and times"),
        (8, 21, "clock", f"`dt.now()` (`datetime.now()`) {CLOCK}"),
        (12, 20, "clock", f"`d.datetime.utcnow()` {CLOCK}"),
        (13, 27, "clock", f"`t.time()` (`time.time()`) {CLOCK}"),
        (16, 16, "clock", f"`d.date.today()` {CLOCK}"),
        (18, 25, "clock", f"`clock.perf_counter()` (`time.perf_counter()`) {CLOCK}"),
    ]


def test_columns_count_characters_not_bytes(tmp_path):
    assert [(line, column) for line, column, _, _ in flow(tmp_path, """
        def run(ctx, input):
            note = "päivää"; return __import__("os")
    """)] == [(2, 29)]


def test_a_file_that_is_not_python(tmp_path):
    assert flow(tmp_path, """
        def run(ctx, input):
            return ctx.now(
    """) == [(2, 19, "syntax", "syntax: '(' was never closed: the file is not valid Python")]


# --- what stays allowed ---------------------------------------------------------------------------


def test_what_a_workflow_may_write_is_not_flagged(tmp_path):
    root = make_root(tmp_path, {
        "sanoma_config.py": """
            from outside_vendor.shop import shop as outside
            from runs.authoring import SanomaConfig
            config = SanomaConfig(app_name="acme", connectors=[outside])
        """,
        "vendors/shop.py": "shop = None\n",
        "workflows/_helpers.py": """
            def cents(amount):
                return round(amount * 100)
        """,
        "workflows/good.py": """
            '''Everything here is allowed.'''
            from __future__ import annotations

            import json
            import math
            import re
            import uuid
            from collections.abc import Mapping
            from dataclasses import dataclass
            from datetime import UTC, date, datetime, timedelta
            from decimal import Decimal
            from enum import Enum
            from typing import Any

            from pydantic import BaseModel, Field

            from acme.vendors.shop import shop
            from connectors import DriverError, ErrorCode, SanomaError, error_code
            from outside_vendor.shop import shop as outside
            from runs.authoring import Approved, define_workflow
            from runs import authoring
            from connectors import errors

            from ._helpers import cents
            from . import _helpers


            class Kind(Enum):
                A = "a"


            @dataclass
            class Row:
                when: datetime


            class In(BaseModel):
                order_id: str = Field(min_length=1)
                due: date = date(2024, 1, 1)


            def run(ctx, input: In) -> Mapping[str, Any]:
                id = input.order_id
                open = {"order_id": id}
                start = ctx.now()
                later = start + timedelta(days=1)
                fixed = datetime(2024, 5, 1, tzinfo=UTC)
                key = uuid.uuid5(uuid.NAMESPACE_URL, f"https://shop.example.com/{id}")
                try:
                    order = ctx.shop.order.get(open)
                except SanomaError as err:
                    if error_code(err) == ErrorCode.DRIVER_FAILED:
                        raise
                    order = None
                ok = ctx.approval("Sign", approver="group:finance")
                ctx.sleep(seconds=math.ceil(1.5))
                ctx.all([lambda p=p: ctx.shop.product.price(p) for p in [{"sku": "mug"}]])
                return {"order": json.dumps(order, default=str), "later": later.isoformat(), "fixed": str(fixed),
                        "match": bool(re.match(r"\\d+", id)), "d": str(Decimal("1.5")), "key": str(key),
                        "by": isinstance(ok, Approved), "cents": cents(2), "kind": Kind.A.value,
                        "h": _helpers.cents(1), "row": Row(when=start), "s": shop, "o": outside,
                        "e": isinstance(ValueError(), ValueError), "cls": DriverError.__name__,
                        "a": authoring.error_code(None), "errors": errors.error_code(None)}


            good = define_workflow(name="good", input=In, run=run, uses=["approval", "sleep", "all"])
        """,
    })
    report = lint(root)
    assert report.files == ("workflows/_helpers.py", "workflows/good.py")
    assert report.problems == ()


def test_an_import_from_a_module_the_config_does_not_import_connectors_from(tmp_path):
    root = make_root(tmp_path, {
        "sanoma_config.py": """
            from outside_vendor.shop import shop
            config = SanomaConfig(app_name="acme", connectors=[shop])
        """,
        "workflows/flow.py": """
            from outside_vendor.shop import shop
            from outside_vendor.other import helper
        """,
    })
    assert [(p.line, p.column, p.rule) for p in lint_paths(root)] == [(2, 34, "import")]


def test_test_files_beside_workflows_are_left_to_the_tests(tmp_path):
    root = make_root(tmp_path, {
        "workflows/test_flow.py": "from runs.testing import run_workflow\n",
        "apps/support/workflows/lib/clock.py": "import time\n",
    })
    report = lint(root)
    assert report.files == ("apps/support/workflows/lib/clock.py",)
    assert [(p.file, p.line, p.column, p.rule) for p in report.problems] == [
        ("apps/support/workflows/lib/clock.py", 1, 8, "clock")]


# --- policies and data files --------------------------------------------------------------------


def test_policy_problems_at_their_file_and_line(tmp_path):
    root = make_root(tmp_path, {
        "policies/a.cedar": """
            @id("open")
            permit(principal, action, resource);

              permit(principal, action == , resource);
        """,
        "policies/b.cedar": """
            // holds
            @approve("alice")
            permit(principal, action, resource);
            @id("open")
            forbid(principal, action, resource);
        """,
    })
    found = lint_paths(root)
    assert [(p.file, p.line, p.column, p.rule) for p in found] == [
        ("policies/a.cedar", 4, 3, "policy"), ("policies/b.cedar", 2, 1, "policy"),
        ("policies/b.cedar", 4, 1, "policy")]
    assert found[0].message == "unexpected token `,`"
    assert found[1].message == "@approve only applies to a forbid (a permit cannot hold a call)"
    assert found[2].message == "policy id 'open' is already used at policies/a.cedar:1"
    assert [p.file for p in lint_paths(root, [root / "policies" / "b.cedar"])] == ["policies/b.cedar"] * 2


SHOP_CONFIG = """
    from company.vendors.shop import shop
    from runs.authoring import SanomaConfig
    config = SanomaConfig(app_name="lintco", connectors=[shop])
"""
CATALOG = """
    from company.vendors.shop import shop
    mug = shop.product(sku="mug", title="Mug", price_cents=-3)
"""


def test_data_file_problems_are_the_readers(tmp_path):
    root = make_root(tmp_path, {"resources/catalog.py": CATALOG, "workflows/flow.py": "import time\n"})
    found = lint_paths(root, connectors=[shop])
    assert [(p.file, p.line, p.column, p.rule) for p in found] == [
        ("resources/catalog.py", 2, 56, "data-file"), ("workflows/flow.py", 1, 8, "clock")]
    assert found[0].message == "mug: price_cents: Input should be greater than 0"


def test_data_files_are_read_against_the_connectors_sanoma_config_lists(tmp_path):
    name = f"lintco_{uuid.uuid4().hex[:8]}"
    root = make_root(tmp_path, {"sanoma_config.py": SHOP_CONFIG, "resources/catalog.py": CATALOG}, name=name)
    assert [str(p) for p in lint_paths(root)] == [
        "resources/catalog.py:2:56: mug: price_cents: Input should be greater than 0"]


def test_a_config_that_cannot_be_imported_is_a_problem_not_a_crash(tmp_path):
    name = f"lintco_{uuid.uuid4().hex[:8]}"
    root = make_root(tmp_path, {"sanoma_config.py": "import nowhere_to_be_found\n",
                                "resources/catalog.py": CATALOG}, name=name)
    found = lint_paths(root)
    assert [(p.file, p.line, p.rule) for p in found] == [("sanoma_config.py", 1, "config")]
    assert found[0].message == ("sanoma_config.py cannot be imported: ModuleNotFoundError: No module named "
                                "'nowhere_to_be_found'; so the data files were not read")
    no_config = make_root(tmp_path, {"resources/catalog.py": CATALOG}, name="bare")
    assert [p.rule for p in lint_paths(no_config)] == ["config"]


# --- order, paths ---------------------------------------------------------------------------------


def test_problems_are_sorted_by_file_line_and_column_and_paths_limit_them(tmp_path):
    root = make_root(tmp_path, {
        "workflows/b.py": "import time\nimport random\n",
        "workflows/a.py": "import os; import socket\n",
        "apps/sales/workflows/c.py": "import threading\n",
    })
    found = lint_paths(root)
    assert [(p.file, p.line, p.column) for p in found] == [
        ("apps/sales/workflows/c.py", 1, 8), ("workflows/a.py", 1, 8), ("workflows/a.py", 1, 19),
        ("workflows/b.py", 1, 8), ("workflows/b.py", 2, 8)]
    assert {p.file for p in lint_paths(root, [root / "workflows" / "a.py"])} == {"workflows/a.py"}
    assert {p.file for p in lint_paths(root, [root / "apps"])} == {"apps/sales/workflows/c.py"}
    with pytest.raises(LintError, match="no such file or folder"):
        lint(root, [root / "workflows" / "missing.py"])
    (root / "vendors").mkdir()
    with pytest.raises(LintError, match="holds no file the lint reads"):
        lint(root, [root / "vendors"])


def test_every_rule_is_described():
    assert {"clock", "sleep", "randomness", "network", "concurrency", "environment", "files", "dynamic-code",
            "error-class", "import", "syntax", "policy", "data-file", "config"} <= set(RULES)


# --- manage.py lint -------------------------------------------------------------------------------


def run_command(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("lint", *args, stdout=out)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_command_on_the_example_company_exits_zero():
    code, out = run_command()
    assert code == 0
    assert out.strip().splitlines()[-1] == f"0 problems in 0 files ({len(lint(COMPANY).files)} files linted)"


def test_the_command_prints_each_problem_and_exits_one(tmp_path):
    root = make_root(tmp_path, {
        "workflows/a.py": "import time\n\n\ndef run(ctx, input):\n    return time.time()\n",
        "workflows/b.py": "import os\n",
        "workflows/c.py": "from runs.authoring import define_workflow\n",
    })
    code, out = run_command("--root", str(root))
    lines = out.strip().splitlines()
    assert code == 1
    assert lines[0].startswith(f"{root}/workflows/a.py:1:8: `import time`: a workflow does not use `time`")
    assert lines[1] == f"{root}/workflows/a.py:5:12: `time.time()` {CLOCK}"
    assert lines[2].startswith(f"{root}/workflows/b.py:1:8: `import os`")
    assert lines[3] == "3 problems in 2 files (3 files linted)"

    code, out = run_command("--root", str(root), str(root / "workflows" / "b.py"))
    assert code == 1
    assert out.strip().splitlines()[-1] == "1 problem in 1 file (1 file linted)"

    code, out = run_command("--root", str(root), "--json")
    document = json.loads(out)
    assert code == 1
    assert document["root"] == str(root)
    assert document["files"] == ["workflows/a.py", "workflows/b.py", "workflows/c.py"]
    assert document["problems"][1] == {"file": "workflows/a.py", "line": 5, "column": 12,
                                       "message": f"`time.time()` {CLOCK}", "rule": "clock"}

    assert run_command("--root", str(root), str(root / "workflows" / "c.py"))[0] == 0
    with pytest.raises(CommandError, match="no such file or folder"):
        call_command("lint", "--root", str(root), str(root / "nope.py"), stdout=io.StringIO())


def test_the_test_script_runs_the_lint():
    script = (Path(__file__).resolve().parents[2] / "test").read_text()
    assert ("  lint mypy .venv/bin/mypy . || failed=1\n"
            "  lint sanoma-lint .venv/bin/python manage.py lint || failed=1\n") in script
