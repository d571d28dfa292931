"""A direct call the example company's Cedar policy denies says its reason once, on every surface:
the command's error, the API's `error` and `reason`, and the run's page on the desk (each of its
rows and boxes). Cedar's own reason begins `<op> was denied by policy: `, which the error's message
says already."""
from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from runs.sandbox.tests.conftest import company  # noqa: F401  (the example company, its Cedar policy)

REASON = "customer data is erased by the privacy team by hand, never by a workflow"
OP = "shop.customer.delete"


def signed_in(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_a_denied_direct_calls_reason_is_said_once_by_the_command_the_api_and_the_desk(company):  # noqa: F811
    with pytest.raises(CommandError) as refused:
        call_command("call", OP, "--set", "customer=ada@example.com", "--as", "alice", stdout=io.StringIO(),
                     stderr=io.StringIO())
    said = str(refused.value)
    assert said.startswith(f"{OP} was denied by policy: {REASON} (run call-") and said.count(REASON) == 1
    assert said.endswith("[policy_denied]")

    request = {"op": OP, "input": {"customer": "ada@example.com"}}
    answer = signed_in("alice").post("/api/calls", data=json.dumps(request), content_type="application/json")
    body = answer.json()
    assert (answer.status_code, body["code"], body["reason"]) == (403, "policy_denied", REASON)
    assert body["error"].count(REASON) == 1 and body["error"].count(OP) == 1

    out = io.StringIO()
    call_command("show", body["run_id"], stdout=out)
    [line] = [line for line in out.getvalue().splitlines() if "op.called" in line]
    assert line.strip() == f"1 op.called {OP} (write) deny: {REASON}"

    page = signed_in("ops").get(f"/admin/runs/run/{body['run_id']}/change/").content.decode()
    page = re.sub(r"<details>.*?</details>|<pre[^>]*>.*?</pre>", "", page, flags=re.DOTALL)  # the records' JSON
    rows = re.findall(r"<tr[^>]*>.*?</tr>|<li[^>]*>.*?</li>|<p[^>]*>.*?</p>", page, flags=re.DOTALL)
    shown = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)) for row in rows if REASON in row]
    assert shown, "the reason is on the run's page"
    for text in shown:
        assert text.count(REASON) == 1, text
    [called] = [text for text in shown if "op.called" in text]
    assert f"deny: {REASON}" in called and "policy_denied" in called
