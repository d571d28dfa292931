"""The GitHub client against the local GitHub: its headers and token, pages, redirects, and
GitHub's failures (its message, its rate limits as a wait) as DriverErrors. No database."""
from __future__ import annotations

import time

import pytest

from connectors.errors import DriverError
from connectors.vendors.github.api import SECONDARY_LIMIT_WAIT, GitHubClient
from connectors.vendors.github.tests.conftest import TOKEN
from connectors.vendors.github.tests.github_server import GitHubServer


def client(server: GitHubServer, token: str | None = TOKEN) -> GitHubClient:
    return GitHubClient(server.url, token=lambda: token, timeout=5)


def failure(call, *args, **kwargs) -> DriverError:
    with pytest.raises(DriverError) as raised:
        call(*args, **kwargs)
    return raised.value


def test_every_request_carries_githubs_headers_and_the_token_read_at_that_request(server):
    tokens = iter([TOKEN, "ghp_rotated"])
    gh = GitHubClient(server.url, token=lambda: next(tokens), timeout=5)
    gh.call("POST", "/orgs/acme/repos", json={"name": "site"})
    refused = failure(gh.call, "GET", "/repos/acme/site")  # the rotated token, read at once
    assert refused.status == 401
    first, second = server.received
    assert first.header("Accept") == "application/vnd.github+json"
    assert first.header("X-GitHub-Api-Version") == "2022-11-28" and first.header("User-Agent").startswith("sanoma")
    assert (first.header("Authorization"), second.header("Authorization")) == (f"Bearer {TOKEN}",
                                                                                "Bearer ghp_rotated")


def test_a_list_is_read_page_by_page_following_link_next(server):
    gh = client(server)
    for n in range(250):
        server.state.org["repos"][f"r{n:03}"] = {"id": n, "name": f"r{n:03}", "visibility": "private"}
    names = [r["name"] for r in gh.items("/orgs/acme/repos", {"type": "all"})]
    assert names == [f"r{n:03}" for n in range(250)]
    asked = server.requests_to("GET", "/orgs/acme/repos")
    assert [(r.query["page"][0] if "page" in r.query else "1", r.query["per_page"][0]) for r in asked] == [
        ("1", "100"), ("2", "100"), ("3", "100")]
    assert all(r.query["type"] == ["all"] for r in asked)
    # a list longer than the pages allowed is refused, never cut short
    too_long = failure(gh.items, "/orgs/acme/repos", max_pages=2)
    assert "longer than 2 pages" in too_long.message


def test_a_redirect_is_followed_with_the_token_on_githubs_host_only(server):
    gh = client(server)
    gh.call("POST", "/orgs/acme/repos", json={"name": "old-name"})
    gh.call("PATCH", "/repos/acme/old-name", json={"name": "new-name"})
    moved = gh.call("GET", "/repos/acme/old-name")  # GitHub answers 301 to /repositories/<id>
    assert moved["name"] == "new-name"
    followed = server.received[-1]
    assert followed.path.startswith("/repositories/") and followed.header("Authorization") == f"Bearer {TOKEN}"
    # another host (as a download host) never gets the token
    elsewhere = GitHubClient(server.url.replace("127.0.0.1", "localhost"), token=lambda: TOKEN)
    assert elsewhere._auth(server.url + "/x", TOKEN) == {}
    assert gh._auth(server.url + "/x", TOKEN) == {"Authorization": f"Bearer {TOKEN}"}


def test_a_refusal_is_final_and_names_githubs_message_and_errors(server):
    gh = client(server)
    gh.call("POST", "/orgs/acme/repos", json={"name": "site"})
    again = failure(gh.call, "POST", "/orgs/acme/repos", json={"name": "site"})
    assert (again.status, again.retryable, again.retry_after) == (422, False, None)
    assert again.message == ("GitHub answered 422 to POST /orgs/acme/repos: Repository creation failed. "
                             "(name already exists on this account)")
    assert again.data["documentation_url"].startswith("https://docs.github.com/rest/repos")


def test_a_bad_token_is_final_and_never_shown(server):
    refused = failure(client(server, "ghp_wrongTOKEN12345").call, "GET", "/repos/acme/site")
    assert (refused.status, refused.retryable) == (401, False)
    assert "Bad credentials" in refused.message and "GITHUB_TOKEN" in refused.message
    assert "ghp_wrongTOKEN12345" not in refused.message + repr(refused.data) + repr(client(server))


def test_the_primary_rate_limit_is_retryable_until_githubs_reset(server):
    reset = server.primary_limit(1, reset_in=20)
    limited = failure(client(server).call, "GET", "/repos/acme/site")
    assert (limited.status, limited.retryable) == (403, True)
    assert limited.retry_after == pytest.approx(reset - time.time(), abs=1.5)
    assert "rate limit" in limited.message and "API rate limit exceeded" in limited.message


@pytest.mark.parametrize(("status", "retry_after", "waits"), [
    (403, 17, 17.0), (429, 5, 5.0), (403, None, SECONDARY_LIMIT_WAIT), (429, None, SECONDARY_LIMIT_WAIT)])
def test_a_secondary_rate_limit_waits_as_github_says_or_a_minute(server, status, retry_after, waits):
    server.secondary_limit(1, status=status, retry_after=retry_after)
    limited = failure(client(server).call, "GET", "/repos/acme/site")
    assert (limited.status, limited.retryable, limited.retry_after) == (status, True, waits)
    assert "secondary rate limit" in limited.message


def test_a_403_that_is_no_rate_limit_is_final(server):
    server.fault(status=403, body={"message": "Resource not accessible by integration",
                                   "documentation_url": "https://docs.github.com/rest"},
                 headers={"x-ratelimit-remaining": "4000"})
    refused = failure(client(server).call, "GET", "/repos/acme/site")
    assert (refused.status, refused.retryable, refused.retry_after) == (403, False, None)
    assert refused.message.endswith("Resource not accessible by integration")


def test_a_server_error_is_retryable(server):
    server.server_error(1, status=503)
    failed = failure(client(server).call, "GET", "/repos/acme/site")
    assert (failed.status, failed.retryable) == (503, True)
