"""Defining workflows and resolving a config."""
from __future__ import annotations

import dataclasses
import re
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from pydantic import BaseModel

from connectors import define_connector, define_driver, op, with_setup
from connectors.errors import ConfigError
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, load_config, resolve_config
from runs.config.workflows import Schedule, define_workflow
from runs.tests.fixtures import GET, PUBLISH, acme


def body(ctx, input):
    return {}


def other_body(ctx, input):
    return {"other": True}


@pytest.mark.parametrize("name", ["Refund", "my_flow", "1st", "", "a b"])
def test_a_name_that_is_not_lowercase_letters_digits_and_dashes_is_refused(name):
    with pytest.raises(ValueError, match="must be lowercase letters, digits and dashes"):
        define_workflow(name=name, run=body)


def make_root(tmp_path: Path, files: dict[str, str]) -> Path:
    """A config root on disk; its folder name is unique so its package imports fresh."""
    root = tmp_path / f"root_{uuid.uuid4().hex[:10]}"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "__init__.py").touch()
    return root


CONFIG = """
from runs.tests.fixtures import acme
from runs.config.resolution import SanomaConfig
config = SanomaConfig(app_name="acme", connectors=[acme])
"""

SYNC = """
from runs.config.workflows import define_workflow
def run(ctx, input):
    return {"from": __file__}
sync = define_workflow(name="sync", run=run)
"""


def test_a_workflow_under_apps_is_named_for_its_app_and_one_at_the_root_is_not(tmp_path):
    root = make_root(tmp_path, {
        "sanoma_config.py": CONFIG,
        "workflows/sync.py": SYNC,
        "apps/shop/workflows/sync.py": SYNC,
        "apps/crm/workflows/sync.py": SYNC,
    })
    config = load_config(root, fakes="instance")
    assert set(config.workflows) - {"call", "change"} == {"sync", "shop.sync", "crm.sync"}  # and the built-ins
    assert config.workflows["shop.sync"].app == "shop"
    assert config.workflows["crm.sync"].app == "crm"
    assert config.workflows["sync"].app is None


@pytest.mark.parametrize("name", ["drift", "apply", "call", "change"])
def test_a_workflow_named_like_a_builtin_is_refused(name):
    wf = define_workflow(name=name, run=body)
    with pytest.raises(ConfigError, match=f'named "{name}", the name of a built-in workflow'):
        resolve_config(SanomaConfig(connectors=[acme], workflows=[wf]), fakes="instance")


def test_two_definitions_with_one_name_are_refused_but_one_listed_twice_is_not():
    first = define_workflow(name="twin", run=body)
    second = define_workflow(name="twin", run=other_body)
    with pytest.raises(ConfigError, match='Two different workflow definitions are named "twin"'):
        resolve_config(SanomaConfig(connectors=[acme], workflows=[first, second]), fakes="instance")
    config = resolve_config(SanomaConfig(connectors=[acme], workflows=[first, first]), fakes="instance")
    assert list(config.workflows) == ["twin", "call", "change"]  # and the built-ins call and change


class Anything(BaseModel):
    text: str = ""


def test_redeclaring_an_operation_with_another_effect_is_refused_naming_both(tmp_path):
    impostor = define_connector(
        "acme", {"post": {"publish": op(effect="read", input=Anything, output=Anything, idempotent=True)}}
    )
    wf = define_workflow(name="poster", uses=[impostor.op("acme.post.publish")], run=body)
    with pytest.raises(ConfigError) as refused:
        resolve_config(SanomaConfig(connectors=[acme], workflows=[wf]), fakes="instance")
    message = str(refused.value)
    assert "acme.post.publish with effect read" in message and "its connector declares effect publish" in message


@pytest.mark.django_db
def test_the_worker_and_the_commands_refuse_a_bad_config_with_the_same_message(tmp_path):
    root = make_root(tmp_path, {
        "sanoma_config.py": CONFIG,
        "workflows/bad.py": """
            from runs.config.workflows import define_workflow
            def run(ctx, input):
                return {}
            bad = define_workflow(name="bad", uses=["acme.nothing.here"], run=run)
        """,
    })
    with pytest.raises(ConfigError) as refused:
        load_config(root)
    expected = str(refused.value)
    assert "acme.nothing.here, which no connector in the config declares" in expected
    set_config(None)
    try:
        with override_settings(SANOMA_ROOT=root):
            commands = (
                ["worker"],
                ["start", "bad", "--as", "alice"],
                ["policy", "explain", "--op", "acme.order.get", "--as", "x"],
            )
            for command in commands:
                with pytest.raises(CommandError) as failed:
                    call_command(*command)
                assert str(failed.value) == expected
    finally:
        set_config(None)


def test_a_driver_for_an_undeclared_operation_and_an_operation_without_driver_are_refused():
    small = define_connector("tiny", {"thing": {"get": op(effect="read", input=Anything, output=Anything)}})
    bigger = define_connector("tiny", {"thing": {
        "get": op(effect="read", input=Anything, output=Anything),
        "put": op(effect="write", input=Anything, output=Anything),
    }})
    driver = define_driver(bigger, {"thing": {"get": lambda i, c: {}, "put": lambda i, c: {}}})
    with pytest.raises(ConfigError, match=r'Driver "tiny" implements tiny.thing.put, which no connector'):
        resolve_config(SanomaConfig(connectors=[with_setup(dataclasses.replace(small), driver=lambda: driver)]))
    wf = define_workflow(name="getter", uses=[small.op("tiny.thing.get")], run=body)
    with pytest.raises(ConfigError, match="tiny.thing.get has no driver"):
        resolve_config(SanomaConfig(connectors=[small], workflows=[wf]))


def test_a_driver_must_implement_every_operation_and_nothing_else():
    with pytest.raises(ValueError, match=r"missing acme\.") as refused:
        define_driver(acme, {"order": {"get": lambda i, c: {}}})
    assert "acme.mail.send" in str(refused.value)


def test_without_an_app_name_the_app_is_sanoma_and_the_version_a_hash():
    config = resolve_config(SanomaConfig(connectors=[acme], app_name=""), fakes="instance")
    assert config.app_name == "sanoma"
    assert re.fullmatch(r"sanoma@[0-9a-f]{64}", config.version)


@pytest.mark.parametrize("key", ["drivers", "fakes"])
def test_a_config_naming_drivers_or_fakes_is_refused(key):
    with pytest.raises(TypeError, match=key):
        refused: dict[str, Any] = {key: []}  # not a SanomaConfig field
        SanomaConfig(connectors=[acme], **refused)


def test_scenarios_are_found_in_apps_without_a_root_scenarios_folder(tmp_path):
    root = make_root(tmp_path, {"sanoma_config.py": CONFIG, "apps/crm/scenarios/leads.feature": "Feature: x\n"})
    config = load_config(root, fakes="instance")
    assert config.scenarios == [root / "apps" / "crm" / "scenarios"]


def test_a_schedule_trigger_is_checked():
    with pytest.raises(ValueError, match="is not a cron expression"):
        Schedule(cron="every night")
    with pytest.raises(ValueError, match="is not an IANA time zone"):
        Schedule(cron="0 3 * * *", timezone="Mars/Base")
    ok = define_workflow(name="nightly", run=body, trigger=Schedule(cron="0 3 * * *", timezone="Europe/Helsinki"))
    assert isinstance(ok.trigger, Schedule)
    assert ok.trigger.cron == "0 3 * * *"


def test_uses_refuses_what_is_neither_an_operation_nor_a_builtin():
    with pytest.raises(ValueError, match=r"neither an operation nor a built-in \(Ctx.approval, Ctx.sleep, Ctx.all"):
        define_workflow(name="x", uses=["sleeep"], run=body)


def test_the_authoring_api_imports_without_django(tmp_path):
    import subprocess
    import sys

    code = ("import sys; import runs.authoring, connectors; "
            "assert 'runs.models' not in sys.modules and 'django.db.models' not in sys.modules, "
            "sorted(m for m in sys.modules if m.startswith('django'))")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2],
                   env={"PATH": "/usr/bin:/bin"})
    assert GET.id == "acme.order.get" and PUBLISH.effect == "publish"
