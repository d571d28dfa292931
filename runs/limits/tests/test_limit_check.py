"""The system check of a declared `Limit`: each mistake is its own error (sanoma.E014) at the line of
the declaration, saying what is wrong, with a hint saying how to write it right."""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

from runs.config.checks import check_config
from runs.tests.processes import REPO

COMPANY = Path(__file__).resolve().parent / "limits_company"
DECLARED = 'limit=Limit(rate="5/s", concurrency=2))'
_names = itertools.count()


def company_declaring(tmp_path: Path, limit: str) -> tuple[Path, int]:
    """A copy of the test company whose connector `meter` declares `limit` instead; the line of it."""
    root = tmp_path / f"limitco{next(_names)}"
    shutil.copytree(COMPANY, root, ignore=shutil.ignore_patterns("__pycache__"))
    meter = root / "meter.py"
    text = meter.read_text()
    assert DECLARED in text
    meter.write_text(text.replace(DECLARED, limit))
    line = next(n for n, said in enumerate(meter.read_text().splitlines(), 1) if limit.splitlines()[0] in said)
    return root, line


CASES = [
    ('limit=Limit(rate="5/s", concurrency=0))',
     "Limit concurrency must be a whole number of calls at once from 1 to 10,000; got 0",
     'For no bound on calls at once leave concurrency out: Limit(rate="5/s").'),
    ('limit=Limit(rate="5/s", concurrency=-2))',
     "Limit concurrency must be a whole number of calls at once from 1 to 10,000; got -2",
     "Write a whole number, such as concurrency=4 (no quotes)."),
    ('limit=Limit(rate="5/s", concurrency="2"))',
     "Limit concurrency must be a whole number of calls at once from 1 to 10,000; got '2'",
     "Write a whole number, such as concurrency=4 (no quotes)."),
    ('limit=Limit(rate="5/fortnight"))',
     "Limit rate '5/fortnight': unit 'fortnight' must be one of s, min, h, day",
     "Write the rate as <calls>/<unit>, such as '5/s', '600/min', '1000/h' or '20000/day'; a slower rate in a "
     "bigger unit: '3/day', not '1/8h'."),
    ('limit=Limit(rate="0/s"))',
     "Limit rate '0/s': the number of calls must be from 1 to 1,000,000",
     "Write the rate as <calls>/<unit>, such as '5/s', '600/min', '1000/h' or '20000/day', from 1 call. For no "
     "bound on the rate, leave rate out."),
    ('limit=Limit(rate="5 per second"))',
     "Limit rate '5 per second' must be <calls>/<unit>, such as '10/s' or '600/min'",
     "Write the rate as <calls>/<unit>, such as '5/s', '600/min', '1000/h' or '20000/day': a whole number of calls, "
     "a slash, a unit."),
    ("limit=Limit(rate=5))",
     "Limit rate must be text such as '10/s' or '600/min'; got 5",
     "Quote it: rate=\"10/s\". Write the rate as <calls>/<unit>, such as '5/s', '600/min', '1000/h' or '20000/day'."),
    ("limit=Limit())",
     "Limit needs a rate ('10/s'), a concurrency (4), or both",
     'Give one or both: Limit(rate="10/s"), Limit(concurrency=4), Limit(rate="10/s", concurrency=4). No limit at '
     "all: leave limit= out."),
    ('limit=Limit(rate="5/s", key="the account"))',
     "Limit key must name an input field, such as 'account'; got 'the account'",
     'Give the name of a field of the input, as text: key="account".'),
    ('limit=Limit(rate="5/s", key="tenant"))',
     "connector meter: limit key 'tenant' is not a field of the input (Ping); its fields are account, n",
     'Key on one of those fields (key="account"), or leave key out for one budget for every call.'),
    ('limit="5/s")',
     "connector meter: limit must be a Limit(rate=..., concurrency=..., key=...); got '5/s'",
     'Write limit=Limit(rate="5/s"), not limit="5/s" (from runs.authoring import Limit).'),
]


@pytest.mark.parametrize(("declared", "says", "hint"), CASES, ids=[c[0] for c in CASES])
def test_each_bad_limit_is_its_own_error_saying_what_is_wrong_and_how_to_write_it(tmp_path, declared, says, hint):
    root, line = company_declaring(tmp_path, declared)
    with override_settings(SANOMA_ROOT=str(root), SANOMA_FAKES="", VAR_DIR=str(tmp_path / "var")):
        [error] = check_config()
    assert (error.id, error.msg, error.hint) == ("sanoma.E014", f"meter.py: invalid limit: {says}", hint)
    if says.startswith("connector meter"):  # found by define_connector: the statement declaring the connector
        line = next(n for n, said in enumerate((root / "meter.py").read_text().splitlines(), 1)
                    if said.startswith("vendor = define_connector("))
    assert str(error.obj) == f"{root}/meter.py:{line}"  # the declaration itself, not the import naming it


def test_manage_check_shows_the_error_and_its_own_hint(tmp_path):
    root, line = company_declaring(tmp_path, 'limit=Limit(rate="5/s", concurrency=0))')
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update(SANOMA_ROOT=str(root), SANOMA_VAR_DIR=str(tmp_path / "var"))
    done = subprocess.run([sys.executable, str(REPO / "manage.py"), "check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert (f"{root}/meter.py:{line}: (sanoma.E014) meter.py: invalid limit: Limit concurrency must be a whole "
            "number of calls at once from 1 to 10,000; got 0\n"
            '\tHINT: For no bound on calls at once leave concurrency out: Limit(rate="5/s").') in said, said
    assert "sanoma_config.py must import" not in said  # no hint about another problem
