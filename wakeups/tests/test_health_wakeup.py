"""The wakeup's health: a registration of the next deadline that fails, made by the worker's own
stop rule, turns the gauge `sanoma_wakeup_registered` to 0 (read through prometheus_client's
registry, as /metrics does) and the desk's condition to failing; the next one that succeeds turns
both back."""
from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from runs.config.resolution import SanomaConfig
from runs.config.workflows import define_workflow
from runs.testing import resolve_on_fakes
from wakeups import health
from wakeups.tests.test_idle import Recorder, make_run, nothing, rule_for

pytestmark = pytest.mark.django_db



@pytest.fixture
def config():
    return resolve_on_fakes(SanomaConfig(connectors=[], workflows=[define_workflow(name="nap", run=nothing)]))


def registered() -> float | None:
    registry = CollectorRegistry()
    registry.register(health.WakeupCollector())
    return registry.get_sample_value("sanoma_wakeup_registered")


def test_a_failing_registration_is_a_zero_until_one_succeeds(config):
    assert registered() == 1  # no row yet: nothing has failed
    assert health.condition().ok is True

    make_run(config, "sleeper", wake_in=600)
    register = Recorder(fail="POST https://wake.example/ answered 500")
    rule = rule_for(config, register)
    assert not rule.check().stop
    assert registered() == 0
    shown = health.condition()
    assert shown.ok is False and shown.alert == "SanomaWakeupNotRegistered"
    assert shown.summary == ("registering the next deadline failed: "
                             "RuntimeError: POST https://wake.example/ answered 500")

    register.fail = ""
    assert rule.check().stop
    assert registered() == 1 and health.condition().ok is True
