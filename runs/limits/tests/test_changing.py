"""Changing a limit at run time: only operators may; a bad value is refused naming what is wrong
and changes nothing; `manage.py limits` as the docs show it (the guide's own blocks run too)."""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from connectors.errors import SanomaError
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.limits import gate, services
from runs.limits.models import LimitCursor, LimitHold, LimitOverride, LimitSlot
from runs.limits.tests.test_waiting import SEND, SINGLE, WORKFLOWS, gauge, meter
from runs.testing import make_user, resolve_on_fakes


@pytest.fixture
def company(db):
    make_user("olga", perms=["runs.pause"])
    make_user("vera")
    set_config(resolve_on_fakes(SanomaConfig(connectors=[meter, gauge], workflows=WORKFLOWS)))
    yield
    set_config(None)


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"target": "nope", "rate": "5/s"}, "No connector or operation 'nope'; the connectors are gauge, meter"),
    ({"target": "meter", "rate": "5/fortnight"}, "rate '5/fortnight': unit 'fortnight' must be one of s, min, h, day"),
    ({"target": "meter", "rate": "0/s"}, "rate '0/s': the number of calls must be from 1 to 1,000,000 (a rate is "
                                         "<calls>/<unit> such as '5/s', '600/min', '1000/h' or '20000/day', or off"),
    ({"target": "meter", "rate": "-1/s"}, "rate '-1/s' must be <calls>/<unit>"),
    ({"target": "meter", "concurrency": "two"}, "concurrency 'two': give a whole number of calls at once from 1 to "
                                                "10,000, or 0 or off to lift it"),
    ({"target": "meter", "concurrency": "-1"}, "concurrency '-1': give a whole number of calls at once from 1"),
    ({"target": "meter", "concurrency": -1}, "concurrency -1: give a whole number of calls at once from 1"),
    ({"target": "meter", "concurrency": "10001"}, "concurrency '10001': give a whole number of calls at once from 1"),
    ({"target": "meter", "concurrency": 0.5}, "concurrency 0.5: give a whole number of calls at once from 1"),
    ({"target": "meter", "concurrency": True}, "concurrency True: give a whole number"),
    ({"target": "meter"}, "say what changes: a rate (5/s, or off), a concurrency (2, or off), or both"),
    # sanoma's own work (child runs, drift, deploys) is never held up by a limit an operator sets.
    ({"target": "sanoma", "rate": "1/day"},
     "sanoma is sanoma's own connector, not a vendor's: its calls take no limit"),
    ({"target": "sanoma.run.start", "rate": "1/day"},
     "sanoma.run.start is an operation of sanoma's own connector sanoma, not a vendor's"),
    ({"target": "data", "concurrency": "1"}, "data is sanoma's own connector, not a vendor's"),
])
def test_a_bad_change_is_refused_naming_what_is_wrong_and_changes_nothing(company, kwargs, says):
    with pytest.raises(SanomaError) as caught:
        services.set_override(by="olga", **kwargs)
    assert says in caught.value.message and caught.value.code == "invalid_input"
    field = "target" if "sanoma's own" in says or "No connector" in says else \
        "concurrency" if says.startswith("concurrency") else "rate"
    assert [issue["path"] for issue in caught.value.data["issues"]] == [[field]]  # names the field
    assert not LimitOverride.objects.exists()


@pytest.mark.parametrize("typed", ["0", "off", " OFF ", 0])
def test_a_concurrency_of_0_or_off_lifts_it(company, typed):
    services.set_override(target="gauge.ping.single", concurrency=typed, by="olga")
    assert LimitOverride.objects.get(target="gauge.ping.single").concurrency == 0
    assert gate.applied_limits(SINGLE, {}) == []  # no bound left: the call takes no budget at all


@pytest.mark.parametrize(("args", "field", "says"), [
    (["--concurrency", "-1"], "concurrency", "concurrency '-1': give a whole number of calls at once from 1 to 10,000, "
                                             "or 0 or off to lift it"),
    (["--concurrency", "two"], "concurrency", "concurrency 'two': give a whole number"),
    (["--rate", "0/s"], "rate", "rate '0/s': the number of calls must be from 1 to 1,000,000"),
    (["--rate", "5/fortnight"], "rate", "rate '5/fortnight': unit 'fortnight' must be one of s, min, h, day"),
    (["--rate", "5/s", "--concurrency", "1.5"], "concurrency", "concurrency '1.5': give a whole number"),
])
def test_the_command_refuses_a_bad_value_naming_the_field_and_changes_nothing(company, args, field, says):
    with pytest.raises(CommandError) as caught:
        call_command("limits", "set", "meter", *args, "--as", "olga")
    # The message names the field first (a line repeating it under the error is not printed again).
    assert says in str(caught.value) and str(caught.value).startswith(f"{field} "), str(caught.value)
    assert not LimitOverride.objects.exists()


def test_the_command_takes_concurrency_0_as_off(company, capsys):
    call_command("limits", "set", "gauge.ping.single", "--concurrency", "0", "--as", "olga")
    assert capsys.readouterr().out.strip() == "gauge.ping.single: no limit from the next call"
    call_command("limits")
    assert "gauge.ping.single  in force: none  declared: 1 at once  now: idle  (set by olga at " in \
        capsys.readouterr().out


def test_only_an_operator_may_change_a_limit(company):
    with pytest.raises(SanomaError) as caught:
        services.set_override(target="meter", rate="1/s", by="vera")
    assert caught.value.code == "permission_denied" and "takes runs.pause (operators)" in caught.value.message
    with pytest.raises(SanomaError):
        services.reset(target="meter", by="vera")
    assert not LimitOverride.objects.exists()


def test_set_then_reset_goes_back_to_the_declaration_with_a_fresh_budget(company):
    services.set_override(target="meter", rate="10/s", concurrency="off", by="olga")
    [applied] = gate.applied_limits(SEND, {})
    assert (str(applied.rate), applied.concurrency) == ("10/s", None)
    services.set_override(target="meter", concurrency=3, by="olga")  # the rate given before is replaced too
    assert LimitOverride.objects.get(target="meter").rate == ""
    LimitCursor.objects.create(scope="meter", key="", next_at=10**13)
    LimitSlot.objects.create(scope="meter", key="", slot=0, holder="x:1", until=10**13)
    LimitHold.objects.create(holder="x:2", scope="meter", key="", at=10**13)
    assert services.reset(target="meter", by="olga") is True
    assert not (LimitOverride.objects.exists() or LimitCursor.objects.exists() or LimitSlot.objects.exists()
                or LimitHold.objects.exists())
    [applied] = gate.applied_limits(SEND, {})
    assert (str(applied.rate), applied.concurrency) == ("30/min", None)


def test_the_command_lists_sets_and_resets(company, capsys):
    call_command("limits")
    listed = capsys.readouterr().out
    assert "meter              in force: 30/min (as declared)  now: idle\n" in listed  # said once, not twice
    assert "gauge.ping.keyed   in force: 6/min, per account" in listed
    call_command("limits", "set", "meter", "--rate", "2/s", "--as", "olga")
    assert capsys.readouterr().out.strip() == "meter: 2/s from the next call"
    with pytest.raises(CommandError, match="say who changes it"):
        call_command("limits", "set", "meter", "--rate", "1/s")
    with pytest.raises(CommandError, match="reset takes no values"):
        call_command("limits", "reset", "meter", "--rate", "1/s", "--as", "olga")
    call_command("limits", "reset", "meter", "--as", "olga")
    assert capsys.readouterr().out.strip() == "meter: 30/min from the next call (as declared)"


def test_the_desk_says_to_edit_a_limit_already_changed_rather_than_add_it_again(company, client):
    from django.contrib.auth import get_user_model

    olga = get_user_model().objects.get(username="olga")
    olga.is_staff = True  # the desk is for staff accounts
    olga.save()
    client.force_login(olga)
    services.set_override(target="meter", rate="10/s", by="olga")
    page = client.post("/admin/runs/limitoverride/add/", {"target": "meter", "rate": "5/s", "concurrency": ""})
    assert page.status_code == 200
    assert "This limit is already changed: open its override in the list and edit it" in page.content.decode()
    assert LimitOverride.objects.get(target="meter").rate == "10/s"  # nothing changed
