"""What a workflow promises about its approvals (`approval_sla`) and its history (`keep`) is shown
where its other facts are: the API's catalog, the config's description, and the desk's page."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from runs.authoring import define_workflow
from runs.config.describe import describe_config
from runs.config.registry import get_config, set_config
from runs.config.resolution import SanomaConfig
from runs.seed import seed_person
from runs.testing import resolve_on_fakes
from sanoma_site.catalog import duration_words

pytestmark = pytest.mark.django_db


def ask(ctx, input):
    return {"ok": True}


PROMISING = define_workflow(name="promising", run=ask, uses=[], approval_sla="4h", keep=timedelta(days=30))
PLAIN = define_workflow(name="plain", run=ask, uses=[])


@pytest.fixture
def promises():
    set_config(resolve_on_fakes(SanomaConfig(connectors=[], workflows=[PROMISING, PLAIN])))
    yield
    set_config(None)


@pytest.fixture
def root() -> Client:
    client = Client()
    client.force_login(seed_person(username="root", superuser=True))
    return client


def test_the_api_and_the_description_give_the_sla_and_the_keep_in_seconds(promises, root):
    by_name = {w["name"]: w for w in root.get("/api/workflows").json()["results"]}
    assert (by_name["promising"]["approval_sla_seconds"], by_name["promising"]["keep_seconds"]) == (14400, 2592000)
    assert (by_name["plain"]["approval_sla_seconds"], by_name["plain"]["keep_seconds"]) == (None, None)
    described = {w["name"]: w for w in describe_config(get_config())["workflows"]}
    assert (described["promising"]["approval_sla_seconds"], described["plain"]["keep_seconds"]) == (14400, None)


def test_the_desk_page_of_a_workflow_says_when_its_approvals_are_overdue_and_how_long_runs_are_kept(promises, root):
    page = root.get("/admin/catalog/workflows/promising/").content.decode()
    assert '<td id="approval-sla">4 hours</td>' in page and '<td id="keep">30 days</td>' in page
    plain = root.get("/admin/catalog/workflows/plain/").content.decode()
    assert '<td id="approval-sla">no limit</td>' in plain and "SANOMA_KEEP_ENDED_RUNS_DAYS" in plain


@pytest.mark.parametrize(("duration", "words"), [
    (timedelta(hours=4), "4 hours"), (timedelta(days=1), "1 day"), (timedelta(minutes=90), "90 minutes"),
    (timedelta(seconds=61), "61 seconds"), (None, ""),
])
def test_durations_are_said_in_the_largest_whole_unit(duration, words):
    assert duration_words(duration) == words
