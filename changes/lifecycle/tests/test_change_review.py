"""What an owner sees before letting a change merge, and a change opened only for a branch there is.

- A change is opened only for a branch the repository has, under a name git takes: anything else is
  refused at once on every surface (the API, the *Open a change* form, `manage.py change open`),
  naming the branch, and nothing is opened (before, a run started and failed on its first step).
- What the checked commit brings into the base (its diff, `git diff base...head`) is recorded with
  the checks; the merge's approval page shows the change's checks, plan and diff and links to the
  change, and its inbox row links to the change.

On the embedded git remote, advanced in this process (the checks run in their own process).
"""
from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes.lifecycle.models import ChangeRun
from changes.lifecycle.remotes.git import GitRemote
from changes.lifecycle.remotes.github import GitHubRemote
from changes.lifecycle.remotes.tests.github_server import GitHubServer, Repo
from changes.lifecycle.services import open_change
from changes.lifecycle.tests.gitco import git, gitco_site, push
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval, Run


@pytest.fixture
def site(tmp_path: Path, db) -> Iterator[tuple[Path, Path, ResolvedConfig]]:
    """The gitco company: its live root, its embedded remote and a clone to push from; alice (staff)
    opens changes, sam (an owner) approves merges."""
    with gitco_site(tmp_path) as made:
        get_user_model().objects.filter(username__in=["alice", "sam"]).update(is_staff=True)
        yield made


def desk(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def api(username: str) -> APIClient:
    client = APIClient()
    user = get_user_model().objects.get(username=username)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def nothing_opened() -> bool:
    return not ChangeRun.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(("branch", "said"), [
    ("no-such-branch", "has no branch 'no-such-branch' (its branches: main)"),
    ("a..b", "'a..b' is not a valid branch name"),
    ("ends.lock", "'ends.lock' is not a valid branch name"),
])
def test_a_change_of_a_branch_the_repository_lacks_is_refused_on_every_surface(site, branch, said):
    remote, _clone, _config = site
    reply = api("alice").post("/api/changes", {"branch": branch, "title": "Hello"}, format="json")
    assert reply.status_code == 400, reply.json()
    answer = reply.json()
    assert answer["code"] == "invalid_input" and said in answer["error"]
    assert [issue["path"] for issue in answer["issues"]] == [["branch"]]
    assert said in answer["issues"][0]["message"]

    form = desk("alice").post("/admin/lifecycle/changerun/open/", {"branch": branch, "title": "Hello"})
    assert form.status_code == 200
    assert list(form.context["form"].errors) == ["branch"] and said in form.context["form"].errors["branch"][0]
    assert "Nothing was opened." in form.content.decode()

    with pytest.raises(CommandError, match=re.escape(said)):
        call_command("change", "open", "--branch", branch, "--title", "Hello", "--as", "alice", stdout=io.StringIO())
    assert nothing_opened()


def test_the_diff_is_what_the_branch_brings_since_it_left_the_base(site):
    remote, clone, _config = site
    head = push(clone, "hello", {"workflows/hello.py": "# hello\n", "README.md": "The gitco company, said again.\n"},
                "Hello")
    push(clone, "main", {"NOTES.md": "main moved on\n"}, "Main moves on")  # not the change's: not in its diff
    diff = GitRemote().diff(str(remote), sha=head, base="main")
    assert {f["path"]: (f["status"], f["added"], f["removed"]) for f in diff["files"]} == {
        "README.md": ("modified", 1, 1), "workflows/hello.py": ("added", 1, 0)}
    assert (diff["added"], diff["removed"], diff["files_count"], diff["truncated"]) == (2, 1, 2, False)
    assert diff["sha"] == head and diff["merge_base"] == git("merge-base", "main", head, cwd=clone)
    assert "+# hello" in diff["patch"] and "NOTES.md" not in diff["patch"]


def test_github_answers_the_same_diff_through_its_compare_api(tmp_path):
    repo = Repo(tmp_path / "repo", {"README.md": "The company.\n", "workflows/old.py": "# old\n"})
    head = repo.commit("hello", {"workflows/hello.py": "# hello\n", "README.md": "The company, said again.\n",
                                 "workflows/old.py": None}, "Hello")
    repo.commit("main", {"NOTES.md": "main moved on\n"}, "Main moves on")
    with GitHubServer({"acme/config": repo.bare}, token="t0ken").running() as server:
        diff = GitHubRemote(api_url=server.url, token=lambda: "t0ken", timeout=5).diff(
            "https://github.com/acme/config", sha=head, base="main")
    assert {f["path"]: (f["status"], f["added"], f["removed"]) for f in diff["files"]} == {
        "README.md": ("modified", 1, 1), "workflows/hello.py": ("added", 1, 0), "workflows/old.py": ("removed", 0, 1)}
    assert (diff["added"], diff["removed"], diff["sha"]) == (2, 2, head)
    assert "+# hello" in diff["patch"] and "NOTES.md" not in diff["patch"]


def test_the_merge_approval_shows_the_changes_checks_plan_and_diff_and_links_to_it(site):
    remote, clone, config = site
    head = push(clone, "hello", {"workflows/hello.py": "# nothing to run yet\n"}, "Hello")
    run = open_change(branch="hello", title="Say hello", url=str(remote), by="alice", config=config)
    drain(config)
    approval = Approval.objects.get(run_id=run.id, status="pending")
    assert approval.op == "sanoma.change.merge"
    change_url = f"/admin/lifecycle/changerun/{quote(run.id)}/change/"

    inbox = desk("sam").get("/admin/runs/approval/").content.decode()
    # What the merge does to the work in flight: nothing here parks (the change's own run is left out).
    # The commit by its first 12 characters, the whole id on hover.
    assert (f'<strong class="sanoma-summary">Merge hello (<span class="sanoma-id" title="{head}">{head[:12]}</span>) '
            'into main: no parked runs</strong>') in inbox
    assert f'<a class="sanoma-extra" href="{change_url}">the change: its checks, plan and diff</a>' in inbox

    page = desk("sam").get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert 'id="change-link">the change\'s page</a>' in page and f'href="{change_url}"' in page
    # Each check with its result, the plan (gitco declares nothing at vendors), the diff.
    checked = re.findall(r'<tr class="sanoma-check \w+">\s*<th>(\w+)</th><td>(\w+)</td>', page)
    assert checked == [("config", "ok"), ("django", "ok"), ("lint", "ok"), ("scenarios", "ok"), ("declared", "ok"),
                       ("in_flight", "ok")]
    # A caption is set in capitals; what it says after its label (a commit id, a sentence) is not.
    assert '<caption>Work in flight: <span class="sanoma-as-is">no parked runs</span></caption>' in page
    assert (f'<caption>Checks: <span class="sanoma-as-is">passed (<span class="sanoma-id" title="{head}">'
            f'{head[:12]}</span>)</span></caption>') in page
    assert "Nothing to plan: this company declares no resources at its vendors" in page
    assert ChangeRun.objects.get(pk=run.id).state == "checks_passed"
    assert '<tr class="diff-file added"><td>added</td><td class="path">workflows/hello.py</td>' in page
    assert '<span class="add">+# nothing to run yet</span>' in page
    assert "checked-other-commit" not in page  # the checks are of the commit this approval merges

    # The change's own page shows the same diff.
    change_page = desk("alice").get(change_url).content.decode()
    assert '<td class="path">workflows/hello.py</td>' in change_page
    # And the API's change carries it, apart from the checks.
    answer: dict[str, Any] = api("alice").get(f"/api/changes/{run.id}").json()
    assert [f["path"] for f in answer["diff"]["files"]] == ["workflows/hello.py"] and "diff" not in answer["checks"]
    # And `manage.py change show` prints it.
    shown = io.StringIO()
    call_command("change", "show", run.id, stdout=shown)
    assert "  diff against main: 1 file(s), +1 -0\n    added    workflows/hello.py (+1 -0)\n" in shown.getvalue()
