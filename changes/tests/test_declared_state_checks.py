"""The reference acceptance checks for declared state, translated to Python data files: a driver's
environment and its stored credentials, declaring resources, reading data files, and `drift`.

The checks other tests already show (the worker refusing to start, a running worker reloading,
refusals of a bad declaration, "declared twice" and cycles, a policy denying an import) are not
repeated here. The resource tests use a small `forge` connector defined below: repositories and
branch protections, where a protection refers to its repository by the repository's `node_id`,
and a fake standing in for the vendor.
"""
from __future__ import annotations

import io
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from pydantic import BaseModel, Field, field_validator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes import services as resource_services
from changes.credentials import runtime, selectors, services
from changes.credentials.models import Credential, CredentialChange
from changes.credentials.tests.credentials_company.harness import ROOT, TEST_KEY, rows_containing
from changes.resources.compare import Declared, resolve
from changes.resources.workflows import READ_OP
from changes.selectors import declared_resources
from connectors import CallContext, Ref, define_connector, define_resource, op, with_setup
from connectors.errors import ConfigError, SanomaError
from connectors.fakes import define_fake
from runs import services as run_services
from runs.config.datafiles import read_datafiles
from runs.config.describe import describe_config
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig, load_config, resolve_config
from runs.engine import secrets
from runs.models import LedgerKind, LedgerRecord, Run, RunStatus
from runs.testing import make_user

# ---- a forge: repositories and their branch protections ------------------------------------------


class Label(BaseModel):
    name: str = Field(min_length=1)
    color: str = "grey"


class RepositoryFields(BaseModel):
    name: str = Field(min_length=1)
    description: str = ""
    topics: list[str] = Field(default_factory=list)
    labels: list[Label] = Field(default_factory=list)
    node_id: str | None = None  # the forge's own id, e.g. R_1
    deploy_token: str | None = None


class ProtectionFields(BaseModel):
    repository_id: str = Field(min_length=1)
    pattern: str = Field(min_length=1)
    reviews: int = Field(default=1, ge=0)


class ForgeEnvironment(BaseModel):
    FORGE_DEPLOY_TOKEN: str | None = Field(default=None, description="the deploy token repositories are given")


repository = define_resource(
    type="repository", title="Repository", identity="name", schema=RepositoryFields,
    fields={"topics": {"unordered": True}, "node_id": {"vendor_owned": True}, "deploy_token": {"write_only": True}},
    find=lambda desired: desired["name"],
)
branch_protection = define_resource(
    type="branch_protection", title="Branch protection", identity=("repository_id", "pattern"),
    schema=ProtectionFields, fields={"repository_id": {"references": "forge.repository", "by": "node_id"}},
    find=lambda desired: f"{desired['repository_id']}:{desired['pattern']}",
)
bare_forge = define_connector("forge", {}, types=[repository, branch_protection], environment=ForgeEnvironment)


def _gone(id: str) -> dict:
    return {"id": id, "gone": True}


def _repo_look(state: dict, i: Any, c: CallContext) -> dict:
    held = state["repositories"].get(i.id)
    return _gone(i.id) if held is None else {"id": i.id, "handle": held["node_id"], "values": held}


def _repo_create(state: dict, i: Any, c: CallContext) -> dict:
    name = i.desired["name"]
    state["repositories"][name] = {**i.desired, "node_id": f"R_{len(state['repositories']) + 1}"}
    return {"id": name, "handle": state["repositories"][name]["node_id"], "values": state["repositories"][name]}


def _repo_update(state: dict, i: Any, c: CallContext) -> dict:
    state["repositories"][i.id].update(i.changes)
    return _repo_look(state, i, c)


def _repo_delete(state: dict, i: Any, c: CallContext) -> dict:
    state["repositories"].pop(i.id, None)
    return _gone(i.id)


def _protection_look(state: dict, i: Any, c: CallContext) -> dict:
    held = state["protections"].get(i.id)
    return _gone(i.id) if held is None else {"id": i.id, "handle": i.id, "values": held}


def _protection_create(state: dict, i: Any, c: CallContext) -> dict:
    repo = state["repositories"][i.desired["repository_id"]]  # the forge takes a name, holds the node id
    id = f"{i.desired['repository_id']}:{i.desired['pattern']}"
    state["protections"][id] = {**i.desired, "repository_id": repo["node_id"]}
    return {"id": id, "handle": id, "values": state["protections"][id]}


def _protection_update(state: dict, i: Any, c: CallContext) -> dict:
    state["protections"][i.id].update(i.changes)
    return _protection_look(state, i, c)


def _protection_delete(state: dict, i: Any, c: CallContext) -> dict:
    state["protections"].pop(i.id, None)
    return _gone(i.id)


def forge_fake(file: Path | None = None):
    return define_fake(bare_forge, initial=lambda: {"repositories": {}, "protections": {}}, file=file, ops={
        "repository": {"import": _repo_look, "read": _repo_look, "create": _repo_create, "update": _repo_update,
                       "delete": _repo_delete},
        "branch_protection": {"import": _protection_look, "read": _protection_look, "create": _protection_create,
                              "update": _protection_update, "delete": _protection_delete},
    })


forge = with_setup(bare_forge, fake=forge_fake)
FORGE = "from changes.tests.test_declared_state_checks import forge\n"
DEPLOY_TOKEN = "dtok-never-shown-4c1e0b7a93"


def data_root(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "forgeco"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FORGE + textwrap.dedent(text).lstrip("\n"))
    return root


REPOS = '''
    api = forge.repository(name="api", description="The API", topics=["python", "django"],
                           labels=[{"name": "bug", "color": "red"}, {"name": "docs", "color": "blue"}])
    web = forge.repository(name="web")
    api_main = forge.branch_protection(repository_id=api, pattern="main", reviews=2)
'''


def held_state() -> dict:
    """Exactly what REPOS declares, as the forge holds it: a set reordered, an undeclared field set,
    the protection naming its repository by node id."""
    return {
        "repositories": {
            "api": {"name": "api", "description": "The API", "topics": ["django", "python"],
                    "labels": [{"name": "bug", "color": "red"}, {"name": "docs", "color": "blue"}], "node_id": "R_1"},
            "web": {"name": "web", "description": "made by hand", "topics": ["legacy"], "labels": [],
                    "node_id": "R_2"},
        },
        "protections": {"api:main": {"repository_id": "R_1", "pattern": "main", "reviews": 2}},
    }


@pytest.fixture
def forge_site(db, tmp_path) -> Iterator[Any]:
    def make(files: dict[str, str] | None = None, *, root: Path | None | bool = True, fakes: str = "instance",
             connector: Any = forge) -> ResolvedConfig:
        chosen = data_root(tmp_path, files if files is not None else {"resources/repos.py": REPOS}) \
            if root is True else (root or None)
        config = resolve_config(SanomaConfig(app_name="forgeco", connectors=[connector], root=chosen), fakes=fakes)
        set_config(config)
        return config

    make_user("ops", perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield make
    set_config(None)


def hold(config: ResolvedConfig, state: dict) -> None:
    config.fakes["forge"].update(lambda s: s.update(json.loads(json.dumps(state))))


def drift(config: ResolvedConfig) -> tuple[Run, dict]:
    return resource_services.drift(by="ops", here=True, config=config)


def by_name(report: dict) -> dict[str, dict]:
    return {e["name"]: e for e in report["resources"]}


# ---- credentials -------------------------------------------------------------------------------

CRED_NAMES = ("VAULT_URL", "VAULT_TOKEN", "VAULT_REGION", "VAULT_FLAKY", "MAILER_KEY", "GITHUB_TOKEN",
              "SANOMA_GITHUB_WEBHOOK_SECRET")


@pytest.fixture
def vault_site(db, settings, monkeypatch) -> Iterator[ResolvedConfig]:
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    for name in CRED_NAMES:
        monkeypatch.delenv(name, raising=False)
    config = load_config(ROOT, fakes="", app_version="checks")
    set_config(config)
    runtime.invalidate()
    yield config
    set_config(None)
    runtime.invalidate()


class ModeEnvironment(BaseModel):
    MODE_LEVEL: str = Field(default="low", pattern="^(low|high)$", description="how loud")


class SharedRequired(BaseModel):
    SHARED_KEY: str = Field(min_length=8, description="a key both use")


class SharedOptional(BaseModel):
    SHARED_KEY: str = Field(default="shared-default", description="a key both use")


class AlsoOptional(BaseModel):
    SHARED_KEY: str | None = Field(default=None, description="a key both use")


class Parsed(BaseModel):
    PARSED_NUMBER: str = Field(description="a number")

    @field_validator("PARSED_NUMBER")
    @classmethod
    def _parse(cls, value: str) -> str:
        return str(int(value) + 0 if value.isdigit() else _explode(value))


def _explode(value: str) -> str:
    raise KeyError(f"cannot parse {value}")  # not a validation error, and it repeats the value


def test_an_optional_variable_with_an_invalid_value_stops_the_worker(vault_site, monkeypatch) -> None:
    moody = define_connector("moody", {}, environment=ModeEnvironment)
    assert secrets.startup_problems([moody]) == []  # unset: its default serves
    monkeypatch.setenv("MODE_LEVEL", "deafening")
    assert secrets.startup_problems([moody]) == [
        "moody: MODE_LEVEL is invalid (environment): String should match pattern '^(low|high)$'"]
    # The example's optional VAULT_FLAKY alone, every required variable set: still refused.
    monkeypatch.setenv("VAULT_URL", "https://vault.example")
    monkeypatch.setenv("VAULT_TOKEN", "tok-0123456789")
    monkeypatch.setenv("MAILER_KEY", "mk-1")
    monkeypatch.setenv("VAULT_FLAKY", "boom")
    assert secrets.startup_problems(vault_site.connectors) == [
        "vault: VAULT_FLAKY is invalid (environment): its check threw (RuntimeError)"]


def test_a_check_that_throws_makes_the_value_invalid_without_showing_it(vault_site, monkeypatch) -> None:
    parser = define_connector("parser", {}, environment=Parsed)
    value = "not-a-number-7f3a9e"
    monkeypatch.setenv("PARSED_NUMBER", value)
    (status,) = selectors.credential_statuses(among=[parser])
    assert (status.status, status.problem, status.source) == ("invalid", "its check threw (KeyError)", "environment")
    assert value not in repr(status) and value not in status.describe()
    assert value not in " ".join(secrets.startup_problems([parser]))


def test_a_variable_two_connectors_declare_is_ready_only_if_it_is_for_both(vault_site, monkeypatch) -> None:
    # One row per variable, naming every connector that declares it, each checking it with its own
    # model: the row says the graver status; what the worker needs is the worse of the two, and
    # optional holds only if both are.
    strict = define_connector("strict", {}, environment=SharedRequired)
    lenient = define_connector("lenient", {}, environment=SharedOptional)
    also = define_connector("also", {}, environment=AlsoOptional)
    rows = selectors.credential_statuses(among=[strict, lenient])
    assert [(r.connector, r.status) for r in rows] == [("strict, lenient", "missing")]
    assert secrets.startup_problems([strict, lenient]) == ["strict: SHARED_KEY is missing (a key both use)"]
    assert secrets.startup_problems([lenient, also]) == []  # optional for both: ready
    monkeypatch.setenv("SHARED_KEY", "short")
    rows = selectors.credential_statuses(among=[strict, lenient])
    assert [(r.connector, r.status) for r in rows] == [("strict, lenient", "invalid")]
    assert secrets.startup_problems([lenient, strict]) == [
        "strict: SHARED_KEY is invalid (environment): String should have at least 8 characters"]


def test_setting_is_refused_for_an_undeclared_name_an_empty_by_a_refused_or_empty_value(vault_site) -> None:
    # The port answers an undeclared name with its own code, unknown_credential (404 over the API).
    keeper = make_user("keeper", perms=["credentials.manage_credentials"])
    with pytest.raises(SanomaError) as undeclared:
        services.set_credential(name="NOPE", value="whatever-1", by=keeper)
    assert undeclared.value.code == "unknown_credential"
    assert str(undeclared.value) == ("No connector declares NOPE: the declared variables are GITHUB_TOKEN, "
                                     "MAILER_KEY, SANOMA_GITHUB_WEBHOOK_SECRET, VAULT_FLAKY, VAULT_REGION, "
                                     "VAULT_TOKEN, VAULT_URL")
    for nobody in ("", "   "):
        with pytest.raises(SanomaError) as no_one:
            services.set_credential(name="VAULT_TOKEN", value="tok-0123456789", by=nobody)
        assert no_one.value.code == "invalid_input"
    refused_value = "http://tok-Refused-55aa"
    with pytest.raises(SanomaError) as refused:
        services.set_credential(name="VAULT_URL", value=refused_value, by=keeper)
    assert refused.value.code == "invalid_input"
    assert str(refused.value) == ("VAULT_URL was not stored: vault's check refuses the value: must be an https:// "
                                  "URL, not (the value)")
    assert refused.value.data["issues"] == [{"path": ["value"], "message": "must be an https:// URL, not (the value)",
                                             "code": "refused"}]
    assert refused_value not in json.dumps(refused.value.data)
    with pytest.raises(SanomaError) as empty:
        services.set_credential(name="VAULT_TOKEN", value="", by=keeper)
    assert str(empty.value) == "The value of VAULT_TOKEN is empty: clear it to unset it"
    assert empty.value.data["issues"][0]["path"] == ["value"]
    answer = APIClient()
    answer.force_authenticate(keeper)
    reply = answer.put("/api/credentials/VAULT_URL", {"value": refused_value}, format="json")
    assert reply.status_code == 400 and reply.json()["issues"][0]["path"] == ["value"]
    assert refused_value not in reply.content.decode()
    assert not Credential.objects.exists() and not CredentialChange.objects.exists()


def test_a_listed_status_is_the_environments_value_over_a_stored_one(vault_site, monkeypatch) -> None:
    keeper = make_user("keeper", perms=["credentials.manage_credentials"])
    services.set_credential(name="VAULT_URL", value="https://stored.example", by=keeper)
    url = next(s for s in selectors.credential_statuses() if s.name == "VAULT_URL")
    assert (url.status, url.source) == ("set", "stored")
    monkeypatch.setenv("VAULT_URL", "http://from-the-environment.example")  # the check refuses this one
    url = next(s for s in selectors.credential_statuses() if s.name == "VAULT_URL")
    assert (url.status, url.source) == ("invalid", "environment")
    listed = io.StringIO()
    call_command("credentials", "list", "--json", stdout=listed)
    row = next(r for r in json.loads(listed.getvalue()) if r["name"] == "VAULT_URL")
    assert (row["status"], row["source"]) == ("invalid", "environment")


# ---- declaring resources -----------------------------------------------------------------------


def test_a_protection_refers_to_its_repository_by_name_and_refuses_a_resource_where_none_is_allowed(tmp_path):
    root = data_root(tmp_path, {"resources/repos.py": REPOS + '''
    wrong = forge.branch_protection(repository_id=web, pattern=api)
'''})
    found = read_datafiles(root, [forge])
    protection = found.by_id()["resources/repos.py#api_main"]
    assert protection.values["repository_id"] == Ref(id="resources/repos.py#api", type="forge.repository",
                                                     name="api")
    assert protection.references == ("resources/repos.py#api",)
    plain = {r.id: r.plain() for r in found.resources}
    desired = resolve(branch_protection, plain[protection.id]["values"], Declared(plain, {}))
    assert desired == {"repository_id": "api", "pattern": "main", "reviews": 2}
    assert branch_protection.import_id(desired) == "api:main"
    assert [str(p) for p in found.problems] == [
        "resources/repos.py:7:60: wrong: pattern: takes a value, not a reference to api: write the value itself"]
    assert "resources/repos.py#wrong" not in found.by_id()


@pytest.mark.parametrize(("written", "problem"), [
    ('title=make_title("api")',
     "resources/x.py:3:42: `make_title(...)` is a call, and a data file is read, not run: write the value itself"),
    ('**{"description": "x"}', "resources/x.py:3:36: `**values`: write each field out"),
    ('topics=[*["a", "b"]]', "resources/x.py:3:44: `*items` is computed when the file runs: write the items out"),
    ('description={**{"a": 1}}', "resources/x.py:3:51: `**mapping` is computed when the file runs"),
    ('description=forge.description',
     "resources/x.py:3:48: `forge.description` is looked up when the file runs, and a data file is read, not run: "
     "write the value itself"),
    ('description=undefined',
     "resources/x.py:3:48: undefined is not declared: declare it in this file (undefined = vendor.type(...)) or "
     "import it (from forgeco.resources.<file> import undefined)"),
])
def test_a_computed_value_is_a_problem_at_its_place_and_leaves_its_resource_out(tmp_path, written, problem):
    # The reference's call, spread, member access and `undefined`, as Python writes them.
    text = 'ok = forge.repository(name="ok")\nbad = forge.repository(name="bad", ' + written + ")\n"
    found = read_datafiles(data_root(tmp_path, {"resources/x.py": text}), [forge])
    messages = [str(p) for p in found.problems]
    assert len(messages) == 1 and messages[0].startswith(problem), messages
    assert [r.name for r in found.resources] == ["ok"]
    assert found.problems[0].resource in (None, "resources/x.py#bad")


def test_a_config_with_no_root_reads_one_problem_and_no_resources(forge_site):
    config = forge_site(root=None)
    with pytest.raises(ConfigError) as missing:
        declared_resources()
    assert len(missing.value.problems) == 1 and "has no root folder" in str(missing.value.problems[0])
    _, report = drift(config)
    assert report["resources"] == [] and report["files"] == []
    assert [p["message"] for p in report["problems"]] == [
        "the config has no root folder, so it has no data files: there is nothing to compare"]


# ---- drift -------------------------------------------------------------------------------------


def test_drift_is_clean_when_the_vendor_holds_exactly_the_declared_state(forge_site):
    config = forge_site()
    hold(config, held_state())
    run, report = drift(config)
    assert run.status == RunStatus.FINISHED
    assert {name: e["status"] for name, e in by_name(report).items()} == {
        "api": "clean", "web": "clean", "api_main": "clean"}
    assert report["problems"] == [] and report["summary"] == {"clean": 3, "drifted": 0, "gone": 0, "error": 0}


def test_drift_names_each_changed_leaf_with_list_indexes_and_a_removed_instance_as_gone(forge_site):
    config = forge_site()
    state = held_state()
    state["repositories"]["api"]["description"] = "An API"
    state["repositories"]["api"]["labels"][1]["color"] = "green"
    del state["repositories"]["web"]
    hold(config, state)
    _, report = drift(config)
    entries = by_name(report)
    assert entries["api"]["status"] == "drifted"
    assert entries["api"]["diffs"] == [{"path": "description", "desired": "The API", "actual": "An API"},
                                       {"path": "labels.1.color", "desired": "blue", "actual": "green"}]
    assert entries["web"]["status"] == "gone" and entries["web"]["diffs"] == []
    assert entries["api_main"]["status"] == "clean"
    # A list of another length is compared whole.
    state["repositories"]["api"]["labels"].pop()
    hold(config, state)
    _, report = drift(config)
    assert by_name(report)["api"]["diffs"][1] == {
        "path": "labels", "desired": [{"name": "bug", "color": "red"}, {"name": "docs", "color": "blue"}],
        "actual": [{"name": "bug", "color": "red"}]}


def test_a_reference_held_as_the_repositorys_node_id_is_clean_another_repositorys_drifted(forge_site):
    config = forge_site()
    hold(config, held_state())
    assert by_name(drift(config)[1])["api_main"]["status"] == "clean"  # R_1, api's node id read in this run
    state = held_state()
    state["protections"]["api:main"]["repository_id"] = "R_2"  # web's
    hold(config, state)
    entry = by_name(drift(config)[1])["api_main"]
    assert entry["status"] == "drifted"
    assert entry["diffs"] == [{"path": "repository_id", "desired": "api", "actual": "R_2"}]


def test_drift_takes_only_an_empty_input_records_it_and_answers_the_report(forge_site):
    config = forge_site()
    # No input at all (None) is the engine's `{}` for every workflow, as the API's empty body is.
    refused_inputs: list[Any] = [{"dry_run": True}, {"": None}, [], "x"]
    for given in refused_inputs:
        with pytest.raises(SanomaError) as refused:
            run_services.start(workflow="drift", input=given, started_by="ops", config=config)
        assert refused.value.code == "invalid_input"
    assert not Run.objects.exists()
    run, report = drift(config)
    started = LedgerRecord.objects.get(run_id=run.id, kind=LedgerKind.RUN_STARTED)
    assert started.body["input"] == {} and run.input == {}
    run.refresh_from_db()
    assert run.result == report and report["summary"]["clean"] == 0


def test_a_write_only_token_never_reaches_a_record_and_is_never_compared(forge_site, monkeypatch):
    monkeypatch.setenv("FORGE_DEPLOY_TOKEN", DEPLOY_TOKEN)
    literal = "dtok-in-the-repo-e5d4c3"
    config = forge_site({"resources/repos.py": '''
        from changes.datafiles.sanoma import secret
        api = forge.repository(name="api", deploy_token=secret("FORGE_DEPLOY_TOKEN"))
        leaky = forge.repository(name="leaky", deploy_token="''' + literal + '''")
    '''})
    # This forge shows a write-only field back anyway: what it shows is dropped before it is recorded.
    state = {"repositories": {"api": {"name": "api", "deploy_token": "what-the-forge-holds", "node_id": "R_1"}},
             "protections": {}}
    hold(config, state)
    run, report = drift(config)
    entries = by_name(report)
    assert entries["api"]["status"] == "clean"  # the forge's own token is not compared
    assert entries["api"]["values"]["deploy_token"] == {"secret": "FORGE_DEPLOY_TOKEN"}
    assert "leaky" not in entries  # a value in a write-only field is a problem, and is not repeated
    assert [p["message"].split(":")[:2] for p in report["problems"]] == [["leaky", " deploy_token"]]
    step = LedgerRecord.objects.get(run_id=run.id, kind=LedgerKind.OP_CALLED, body__op=READ_OP)
    shown = json.dumps([step.body, report])
    for value in (DEPLOY_TOKEN, literal, "what-the-forge-holds"):
        assert value not in shown
        assert rows_containing(value) == []
    assert rows_containing("FORGE_DEPLOY_TOKEN")  # the search finds what is there: the name


def test_drift_without_resource_types_is_refused_saying_so_and_an_unknown_run_has_no_report(db, tmp_path):
    class Ping(BaseModel):
        n: int = 0

    plain = define_connector("pinger", {"ping": {"send": op(effect="send", input=Ping, output=Ping)}})
    config = resolve_config(SanomaConfig(app_name="plain", connectors=[plain], root=tmp_path), fakes="instance")
    set_config(config)
    try:
        make_user("ops", perms=["runs.start_workflow"])
        assert "drift" not in config.workflows
        with pytest.raises(SanomaError) as refused:
            resource_services.drift(by="ops", here=True, config=config)
        assert refused.value.code == "invalid_input" and "no resource types" in refused.value.message
        client = APIClient()
        token, _ = Token.objects.get_or_create(user=make_user("api-ops", perms=["runs.start_workflow"]))
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        reply = client.post("/api/resources/drift")
        assert (reply.status_code, reply.json()["code"]) == (400, "invalid_input")
        assert "no resource types" in reply.json()["error"]
        with pytest.raises(CommandError, match="no resource types"):
            call_command("drift", "--as", "ops", "--here", stdout=io.StringIO())
        assert not Run.objects.exists()
        unknown = client.get("/api/resources/plan?run=drift-0000000000000000000a")
        assert (unknown.status_code, unknown.json()["code"]) == (404, "run_not_found")
    finally:
        set_config(None)


def test_resource_types_without_drivers_still_have_drift_and_each_resource_reports_the_missing_driver(forge_site):
    # The port's drift lists the data files' read and every type's import among the operations it uses,
    # driver or not (the reference lists none): what shows the missing driver is each resource's error.
    config = forge_site(fakes="", connector=bare_forge)
    described = {w["name"]: w for w in describe_config(config)["workflows"]}
    assert described["drift"]["builtin"] is True
    # sanoma's own types include the host type sanoma.local, whose resources drift resolves to a
    # revision (sanoma.source.resolve) before it imports them.
    assert set(described["drift"]["uses"]) == {READ_OP, "forge.repository.import", "forge.branch_protection.import",
                                                "sanoma.person.import", "sanoma.group.import",
                                                "sanoma.local.import", "sanoma.source.resolve"}
    _, report = drift(config)
    assert [(e["name"], e["status"], e["error"]["code"]) for e in report["resources"]] == [
        ("api", "error", "no_driver"), ("web", "error", "no_driver"), ("api_main", "error", "no_driver")]
    assert all("forge" in e["error"]["message"] for e in report["resources"])
