"""GitHub's webhooks for changes: `verify_signature` checks `X-Hub-Signature-256`; `events_of` reads a
delivery as the change messages it means (`pushed`, `checks_passed`, `checks_failed`, `merged`,
`deployed`)."""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Whether `X-Hub-Signature-256` (`sha256=<hex>`) is the HMAC-SHA256 of the raw body with the
    webhook's secret, compared in constant time. No secret, no header, or another algorithm: False."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def events_of(event: str, payload: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A GitHub webhook delivery (its `X-GitHub-Event` and JSON body) as the change messages it means:

    - `push` to a branch (not a tag, not a deletion): `("pushed", {branch, sha})`;
    - `check_suite` / `check_run` completed: `("checks_passed", {branch, sha, check})` when it
      succeeded, `("checks_failed", {..., conclusion})` when it failed, timed out, was cancelled or
      needs action (neutral and skipped say nothing). One check run is one check among the
      commit's: a workflow that needs all of them asks `status()`; `check` names the suite or run;
    - `pull_request` closed and merged: `("merged", {branch, sha: merge_commit_sha, base, head_sha,
      pull_request})`;
    - `deployment_status` success: `("deployed", {environment, sha, branch: the deployment's ref, url})`.

    Anything else (`ping`, other actions, a payload of another shape) means nothing: `[]`.
    """
    try:
        return _events(event, payload)
    except (AttributeError, KeyError, TypeError):
        return []


_FAILED = {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}


def _events(event: str, payload: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if event == "push":
        ref = payload.get("ref") or ""
        if not ref.startswith("refs/heads/") or payload.get("deleted") or not payload.get("after"):
            return []
        return [("pushed", {"branch": ref[len("refs/heads/"):], "sha": payload["after"]})]
    if event in ("check_suite", "check_run"):
        if payload.get("action") != "completed":
            return []
        item = payload[event]
        suite = item if event == "check_suite" else (item.get("check_suite") or {})
        branch = suite.get("head_branch") or next(
            (p["head"]["ref"] for p in item.get("pull_requests") or [] if p.get("head", {}).get("ref")), None)
        sha = item.get("head_sha")
        if not branch or not sha:
            return []
        check = item.get("name") or (item.get("app") or {}).get("slug") or event
        conclusion = item.get("conclusion")
        if conclusion == "success":
            return [("checks_passed", {"branch": branch, "sha": sha, "check": check})]
        if conclusion in _FAILED:
            return [("checks_failed", {"branch": branch, "sha": sha, "check": check, "conclusion": conclusion})]
        return []
    if event == "pull_request":
        pr = payload["pull_request"]
        if payload.get("action") != "closed" or not pr.get("merged"):
            return []
        return [("merged", {"branch": pr["head"]["ref"], "sha": pr["merge_commit_sha"], "base": pr["base"]["ref"],
                            "head_sha": pr["head"]["sha"], "pull_request": pr.get("html_url")})]
    if event == "deployment_status":
        status = payload["deployment_status"]
        if status.get("state") != "success":
            return []
        deployment = payload["deployment"]
        return [("deployed", {"environment": status.get("environment") or deployment.get("environment"),
                              "sha": deployment["sha"], "branch": deployment.get("ref"),
                              "url": status.get("environment_url") or status.get("target_url") or None})]
    return []


__all__ = ["events_of", "verify_signature"]
