"""The wakeup a config root declares: `wakeup(...)` from the front door, given its register half here."""
from __future__ import annotations

from pathlib import Path

import pytest

from runs.authoring import wakeup
from runs.config.resolution import load_config
from runs.declarations import Wakeup
from wakeups.declare import WakeupDeclaration, declared_wakeups, hand_to_supervisor, sanoma_wakeup

COMPANY = Path(__file__).resolve().parents[2] / "company"


def test_the_example_company_declares_its_wakeup_from_the_front_door_and_the_worker_gets_its_half(settings):
    settings.SANOMA_WAKEUP = ""
    [declared] = declared_wakeups(load_config(COMPANY, fakes="instance"))
    assert isinstance(declared, WakeupDeclaration)
    assert (declared.id, declared.type, declared.host) == ("sanoma.wakeup", "sanoma.wakeup", "supervisor")
    assert declared.register is hand_to_supervisor
    settings.SANOMA_WAKEUP = "off"
    assert declared_wakeups(load_config(COMPANY, fakes="instance")) == []


def test_a_wakeup_is_a_plain_value_checked_when_made():
    assert wakeup() == Wakeup(host="supervisor", id="sanoma.wakeup", type="sanoma.wakeup")
    assert wakeup(host="box-2").host == "box-2"
    with pytest.raises(ValueError, match=r"wakeup\(host=...\) must be non-empty text; got ''"):
        wakeup(host="")
    with pytest.raises(ValueError, match="wakeup type 'acme.pager' is not one sanoma has: sanoma.wakeup"):
        Wakeup(type="acme.pager")
    # the older spelling still gives the declaration with its half
    assert sanoma_wakeup(host="supervisor").register is hand_to_supervisor
