"""The desk's health page, server side: who may read it, and what it says (the browser journey is
in sanoma_site/tests/test_health_browser.py)."""
from __future__ import annotations

from datetime import timedelta

import pytest

from runs.engine import clock
from runs.models import Run, RunStatus
from runs.testing import make_user


def staff(username: str = "olga"):
    user = make_user(username)
    user.is_staff = True
    user.save()
    return user


@pytest.mark.django_db
def test_only_staff_read_the_health_page(client):
    answer = client.get("/admin/health/")
    assert answer.status_code == 302 and answer["Location"].startswith("/admin/login/")
    client.force_login(make_user("nobody"))  # signed in, but not staff
    assert client.get("/admin/health/").status_code == 302
    client.force_login(staff())
    answer = client.get("/admin/health/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "Every condition holds that is known (1 not known yet)." in page
    assert '<tr id="condition-ledger" class="unknown">' in page
    home = client.get("/admin/").content.decode()
    assert 'href="/admin/health/"' in home and ">Conditions<" in home


@pytest.mark.django_db
def test_the_page_names_a_stuck_queue_and_the_missing_worker(client):
    client.force_login(staff())
    now = clock.now()
    Run.objects.create(id="stuck-1", workflow="refund", app_version="refund@1", input={}, started_by="olga",
                       status=RunStatus.QUEUED, queued_at=now - timedelta(minutes=12), created_at=now, updated_at=now)
    page = client.get("/admin/health/").content.decode()
    assert "2 conditions need attention." in page
    assert '<tr id="condition-queue" class="failing">' in page
    assert "1 run(s) queued; the oldest for 12 min" in page
    assert '<tr id="condition-workers" class="failing">' in page
    assert "no live worker, 1 run(s) runnable" in page
    assert "SanomaNoLiveWorker" in page
