"""An operator (the `operator` role) may open every page the health page and the alerts send them
to: the app versions, the worker wake-up and the schedules."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from runs.declarations import ROLES
from runs.testing import make_user


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["/admin/runs/appversion/", "/admin/wakeups/wakeuprow/",
                                  "/admin/wakeups/schedulestate/", "/admin/health/"])
def test_an_operator_opens_the_pages_the_health_page_names(page: str) -> None:
    operator = make_user("otto", perms=ROLES["operator"])
    get_user_model().objects.filter(pk=operator.pk).update(is_staff=True)
    client = Client()
    client.force_login(operator)
    assert client.get(page).status_code == 200
