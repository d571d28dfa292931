"""A run retention removed, as an operator meets it in a real browser (headless Chromium): the link
they kept to its page leads to its pruned row, which says when it ended, when it went and which
export holds its ledger records; the Pruned runs page lists it. Someone who may not read pruned
runs is told only what any missing run tells them."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from runs.tests.browser_support import BROWSER_TESTS, EC, By, WebDriverWait, browser, log_in, shots, staff_user  # noqa: F401
from runs.tests.test_retention import brief, ended_days_ago, folder, retention  # noqa: F401

pytestmark = [*BROWSER_TESTS, pytest.mark.django_db(transaction=True)]


def operator(username: str) -> Any:
    user = staff_user(username)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="runs", codename__in=("view_prunedrun", "view_run", "view_any_run")))
    return user


def test_a_link_to_a_removed_run_leads_to_where_its_record_went(live_server, engine_for, browser, folder):  # noqa: F811
    run = engine_for(brief).run("brief")
    ended_days_ago(run, 45)
    out, ok = retention()
    assert ok and "done: 1 run" in out, out
    operator("olga")
    wait = WebDriverWait(browser, 20)

    # The link kept from before (a change's page, an alert, a bookmark), followed after retention ran.
    log_in(browser, live_server.url, "olga", then=f"/admin/runs/run/{run.id}/change/")
    note = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "ul.messagelist li"))).text
    assert f"Run {run.id} ended" in note and "was removed by retention on" in note
    assert "ledger verify --export" in note and ".jsonl" in note
    assert browser.find_element(By.CSS_SELECTOR, "div.field-run_id .readonly").text == run.id

    # The Pruned runs page, from the home page, found by the run's id.
    browser.get(f"{live_server.url}/admin/")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Pruned runs"))).click()
    search = wait.until(EC.visibility_of_element_located((By.ID, "searchbar")))
    search.send_keys(run.id)
    browser.find_element(By.CSS_SELECTOR, "#changelist-search input[type=submit]").click()
    wait.until(lambda b: "q=" in b.current_url)  # the searched page, not the list it was typed on
    rows = wait.until(EC.presence_of_all_elements_located((By.CSS_SELECTOR, "#result_list tbody tr")))
    assert len(rows) == 1 and run.id in rows[0].text and "brief" in rows[0].text


def test_someone_who_may_not_read_pruned_runs_is_told_only_that_there_is_no_such_run(
        live_server, engine_for, browser, folder):  # noqa: F811
    run = engine_for(brief).run("brief")
    ended_days_ago(run, 45)
    assert retention()[1]
    viewer = staff_user("vic")
    viewer.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs",
                                                           codename__in=("view_run", "view_any_run")))
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "vic", then=f"/admin/runs/run/{run.id}/change/")
    note = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "ul.messagelist li"))).text
    assert note == f"No run {run.id}, or you may not see it"
