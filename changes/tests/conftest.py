"""The declared state's desk tests' company: the example company on its fakes, and its people."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from changes.credentials import runtime
from company.vendors.shop import shop
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.testing import make_user

COMPANY = Path(__file__).resolve().parents[2] / "company"
SECRET = "whsec-desk-state-0123456789"


def staff(username: str, **kwargs):
    """A user who may sign in to the desk (with groups and permissions as `make_user` takes them)."""
    user = make_user(username, **kwargs)
    user.is_staff = True
    user.save()
    return user


@pytest.fixture
def company(db, monkeypatch):
    """The example company on its fakes: ops (staff), sec (security), and intern, who may start runs
    but is not staff, so the company's policy lets them read and denies them every write."""
    monkeypatch.setenv("SHOP_WEBHOOK_SECRET", SECRET)
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY), fakes="instance")
    set_config(config)
    runtime.invalidate()
    staff("ops", groups=["staff"], perms=["runs.start_workflow"])
    staff("sec", groups=["staff", "security"], perms=["runs.start_workflow"])
    staff("intern", perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield config
    set_config(None)
    runtime.invalidate()
