"""When a config gets the built-in `drift` and `apply` (and the `sanoma` connector), and what they take."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from changes.resources import extension
from changes.resources.workflows import READ_OP, RECORD_OP
from company.vendors.shop import shop
from connectors import define_connector, op
from connectors.errors import ConfigError, SanomaError
from runs import services as run_services
from runs.config import extensions
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.testing import make_user

COMPANY = Path(__file__).resolve().parents[2] / "company"


class Ping(BaseModel):
    n: int = 0


def test_a_config_with_resource_types_gets_drift_and_apply_as_builtins():
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop]), fakes="instance")
    assert config.workflows["drift"].builtin and config.workflows["apply"].builtin
    assert READ_OP in config.ops and RECORD_OP in config.ops and "sanoma.person.create" in config.ops
    assert config.ops[RECORD_OP].effect == "write" and config.ops["sanoma.person.import"].effect == "read"
    # sanoma's own types (person, group, and the host type local), the data files' read and record, the
    # source resolve drift and apply call for a host, the runtime's wakeup (there is a host type), and
    # the change connector every config has
    assert sorted(op_id for op_id in config.ops if op_id.startswith("sanoma.")) == sorted([
        "sanoma.apps.list", *(f"sanoma.change.{verb}" for verb in ("check", "merge", "plan", "resolve")),
        *(f"sanoma.{kind}.{verb}" for kind in ("group", "local", "person")
          for verb in ("create", "delete", "import", "read", "update")),
        READ_OP, RECORD_OP, "sanoma.source.resolve", "sanoma.wakeup.register"])
    assert sorted(config.workflows) == ["apply", "call", "change", "drift"]
    assert extensions.extend(config) is config  # extending again adds nothing


def test_a_config_without_types_or_data_files_gets_neither(tmp_path):
    plain = define_connector("pinger", {"ping": {"send": op(effect="send", input=Ping, output=Ping)}})
    config = resolve_config(SanomaConfig(app_name="p", connectors=[plain], root=tmp_path))
    assert "drift" not in config.workflows and "apply" not in config.workflows
    # Every config has sanoma's change connector and its workflow; the declared-state ops are not added.
    assert list(config.workflows) == ["call", "change"] and config.workflows["change"].builtin
    assert sorted(op_id for op_id in config.ops if op_id.startswith("sanoma.")) == [
        "sanoma.apps.list", "sanoma.change.check", "sanoma.change.merge", "sanoma.change.plan",
        "sanoma.change.resolve"]


def test_a_connector_named_sanoma_is_a_config_problem():
    mine = define_connector("sanoma", {"ping": {"send": op(effect="send", input=Ping, output=Ping)}})
    with pytest.raises(ConfigError, match='connector named "sanoma"'):
        resolve_config(SanomaConfig(app_name="p", connectors=[shop, mine]))


def test_the_extension_is_installed_as_django_starts():
    assert extension.NAME in extensions.registered()


@pytest.mark.django_db
def test_drift_and_apply_take_exactly_an_empty_input():
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY), fakes="instance")
    set_config(config)
    try:
        make_user("ops", perms=["runs.start_workflow"])
        for workflow in ("drift", "apply"):
            with pytest.raises(SanomaError, match="dry_run") as refused:
                run_services.start(workflow=workflow, input={"dry_run": True}, started_by="ops", config=config)
            assert refused.value.code == "invalid_input"
    finally:
        set_config(None)
