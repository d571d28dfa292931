"""Drift, plan and apply against a connector whose fake is made from its resource type's schema
(no fake functions written): the round trip a new company meets first, on the real engine."""
from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from pydantic import BaseModel, Field

from changes import services
from runs.authoring import SanomaConfig, define_connector, define_fake, define_resource, with_setup
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, resolve_config
from runs.testing import make_user

PASSWORD = "pw-never-shown-0c9a7f"


class AccountFields(BaseModel):
    username: str = Field(min_length=1, pattern=r"^[a-z]+$")
    email: str = ""
    groups: list[str] = Field(default_factory=list)
    password: str | None = None
    created_at: str = ""


class DirectoryEnvironment(BaseModel):
    DIRECTORY_PASSWORD: str | None = Field(default=None, description="the first password of a new account")


account = define_resource(
    type="account", title="Account", identity="username", schema=AccountFields,
    fields={"groups": {"unordered": True}, "password": {"write_only": True}, "created_at": {"vendor_owned": True}},
    find=lambda desired: desired["username"], effects={"create": "access", "update": "access", "delete": "access"},
)
directory = define_connector("directory", {}, types=[account], environment=DirectoryEnvironment)
with_setup(directory, fake=lambda file: define_fake(directory, file=file))  # all five from the schema

ADA = 'ada = directory.account(username="ada", email="ada@x.example", groups=["ops", "dev"], ' \
      'password=secret("DIRECTORY_PASSWORD"))\n'
BO = 'bo = directory.account(username="bo", email="bo@x.example")\n'


def write(root: Path, *declarations: str) -> None:
    path = root / "resources" / "people.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("from changes.tests.test_resource_fake_apply import directory\n"
                    "from runs.authoring import secret\n" + "".join(declarations))


@pytest.fixture
def site(db, tmp_path, monkeypatch) -> Iterator[tuple[ResolvedConfig, Path]]:
    monkeypatch.setenv("DIRECTORY_PASSWORD", PASSWORD)
    root = tmp_path / "dirco"
    write(root, ADA, BO)
    config = resolve_config(SanomaConfig(app_name="dirco", connectors=[directory], root=root), fakes="instance")
    set_config(config)
    make_user("ops", perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield config, root
    set_config(None)


def drift(config: ResolvedConfig) -> dict[str, Any]:
    return services.drift(by="ops", here=True, config=config)[1]


def apply(config: ResolvedConfig) -> dict[str, Any]:
    run = services.start("apply", by="ops", config=config)
    followed = services.follow(run, here=True, config=config, timeout=60)
    assert followed.ended, followed
    return services.report(followed.run)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["status"] for e in report["resources"]}


def test_drift_plan_and_apply_round_trip_on_the_fake_made_from_the_schema(site):
    config, root = site
    fake = config.fakes["directory"]
    assert statuses(drift(config)) == {"ada": "gone", "bo": "gone"}
    out = apply(config)
    assert [(c["action"], c["name"], c["status"]) for c in out["changes"]] == [
        ("create", "ada", "done"), ("create", "bo", "done")], out
    held = fake.state["account"]
    assert held["ada"]["values"]["password"] == PASSWORD  # the vendor got the secret's value
    assert held["ada"]["values"]["created_at"] == ""  # vendor-owned: the schema's default
    settled = drift(config)
    assert statuses(settled) == {"ada": "clean", "bo": "clean"}
    assert services.plan(settled, by="ops", config=config)["empty"]

    def by_hand(state: dict[str, Any]) -> None:
        state["account"]["ada"]["values"]["email"] = "ada@elsewhere.example"
        state["account"]["ada"]["values"]["groups"] = ["dev", "ops"]  # unordered: not a difference
        del state["account"]["bo"]

    fake.update(by_hand)
    changed = drift(config)
    assert statuses(changed) == {"ada": "drifted", "bo": "gone"}
    ada = next(e for e in changed["resources"] if e["name"] == "ada")
    assert ada["diffs"] == [{"path": "email", "desired": "ada@x.example", "actual": "ada@elsewhere.example"}]
    plan = services.plan(changed, by="ops", config=config)
    assert [(c["action"], c["name"]) for c in plan["changes"]] == [("update", "ada"), ("create", "bo")]
    assert plan["changes"][0]["calls"][0]["input"]["changes"] == {"email": "ada@x.example"}
    out = apply(config)
    assert [(c["action"], c["name"], c["status"]) for c in out["changes"]] == [
        ("update", "ada", "done"), ("create", "bo", "done")], out
    assert statuses(drift(config)) == {"ada": "clean", "bo": "clean"}

    write(root, ADA)  # bo is no longer declared: sanoma made it, so sanoma deletes it
    gone = drift(config)
    plan = services.plan(gone, by="ops", config=config)
    assert [(c["action"], c["type"], c["import_id"]) for c in plan["changes"]] == [
        ("delete", "directory.account", "bo")], plan
    out = apply(config)
    assert [(c["action"], c["status"]) for c in out["changes"]] == [("delete", "done")], out
    assert set(fake.state["account"]) == {"ada"}
    assert services.plan(drift(config), by="ops", config=config)["empty"]
    assert textwrap.dedent(ADA) in (root / "resources" / "people.py").read_text()
