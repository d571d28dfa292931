"""Who a Cedar `@approve` may name: a person or a group of the site.

A held call waits for its approver; an approver nobody is (a typo, someone who left) holds it for
ever. So each `@approve` is checked against:

- the people and groups the data files declare (`sanoma.person`, `sanoma.group`): a fresh site,
  before an apply made them, already knows them. The layer that reads data files names the
  reader in its extension's `declared_approvers` (`runs.extensions`): this layer may not import it;
- the site's users and groups (Django's auth tables), for people made another way (the admin, SSO).

An approver found in neither is an error. A warning, for one no data file declares: an inactive
account; an account with no password that never signed in (what a held call makes for an approver
it does not know, a typo included, so the error turns into this warning after the first hold);
a group nobody is in (a held call makes that too); and every unknown one when the site's tables
cannot be read (no database yet): they may be users.
"""
from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import is_password_usable
from django.db.models import Count

from connectors.errors import Problem, ProblemKind
from runs.approvals.approver import GROUP_PREFIX, Approver
from runs.extensions import providing
from runs.policies.cedar import CedarPolicy

SUGGESTIONS_FROM = 5000  # the site's users read for a "did you mean"


def declared(root: Path | None, connectors: Sequence[Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The people and groups every extension's `declared_approvers` declares."""
    people: set[str] = set()
    groups: set[str] = set()
    for _, reader in providing("declared_approvers"):
        theirs, their_groups = reader(root, connectors)
        people |= set(theirs)
        groups |= set(their_groups)
    return frozenset(people), frozenset(groups)


@dataclass(frozen=True)
class Site:
    """What the site's auth tables hold of the names asked about."""

    active: frozenset[str]
    inactive: frozenset[str]
    groups: frozenset[str]
    usernames: tuple[str, ...]  # some of the site's usernames, for suggestions
    placeholders: frozenset[str] = frozenset()  # active, no password, never signed in
    empty_groups: frozenset[str] = frozenset()  # groups nobody is in


def site_names(people: Collection[str], groups: Collection[str]) -> Site | str:
    """The site's users and groups among these names; or why the tables could not be read."""
    try:
        users = get_user_model().objects
        rows = list(users.filter(username__in=list(people)).values_list("username", "is_active", "password",
                                                                         "last_login"))
        group_model = apps.get_model("auth", "Group")  # through the registry: this module loads before models
        group_rows = list(group_model.objects.filter(name__in=list(groups)).annotate(
            members=Count("user", distinct=True)).values_list("name", "members"))
        usernames = tuple(users.order_by("username").values_list("username", flat=True)[:SUGGESTIONS_FROM])
    except Exception as err:  # no database yet, not migrated, or no access (a test without it)
        return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".rstrip(": ")
    # An account with no password that never signed in is what a held call makes for an approver
    # who has no account (runs.approvals.permissions.approver_holder): a typo gets one too.
    placeholders = frozenset(u for u, active, password, last in rows
                             if active and last is None and not is_password_usable(password))
    return Site(active=frozenset(u for u, active, _, _ in rows if active) - placeholders,
                inactive=frozenset(u for u, active, _, _ in rows if not active),
                groups=frozenset(name for name, members in group_rows if members),
                usernames=usernames, placeholders=placeholders,
                empty_groups=frozenset(name for name, members in group_rows if not members))


@dataclass(frozen=True)
class ApproverProblem:
    problem: Problem  # at the policy's file and line
    serious: bool  # an error; else a warning


def approver_problems(policy: CedarPolicy, *, root: Path | None, connectors: Sequence[Any]) -> list[ApproverProblem]:
    """Each `@approve` that names nobody of the site (see the module's docstring)."""
    named = policy.approvers()
    if not named:
        return []
    people, groups = declared(root, connectors)
    asked = [Approver.parse(a) for _, a in named]
    asked_people = {a.name for a in asked if not a.is_group}
    asked_groups = {a.name for a in asked if a.is_group}
    site = site_names(asked_people, asked_groups)
    shown = policy.directory.name if policy.directory is not None else "policies"
    found: list[ApproverProblem] = []
    for rule, approver in named:
        where = f"{shown}/{rule.file}"
        line = rule.line + rule.source[: max(rule.source.find("@approve"), 0)].count("\n")
        text, serious = _judge(approver, people, groups, site)
        if text:
            found.append(ApproverProblem(Problem(f"{where}:{line}: @approve(\"{approver}\") {text}",
                                                 kind=ProblemKind.POLICY, file=where, line=line), serious))
    return found


def _judge(approver: str, people: frozenset[str], groups: frozenset[str], site: Site | str) -> tuple[str, bool]:
    """What is wrong with the approver ("" when nothing), and whether it is an error."""
    unread = f" (the site's users were not read: {site})" if isinstance(site, str) else ""
    group = Approver.parse(approver).group
    if group is not None:
        name = group
        if name in groups or (not isinstance(site, str) and name in site.groups):
            return "", False
        close = _close(name, sorted(groups))
        if not isinstance(site, str) and name in site.empty_groups:
            return (f"names the group {name}, which no data file declares and nobody is in (a held call makes the "
                    f"group it names){_mean(close, GROUP_PREFIX)}: until someone is in it, nobody decides what "
                    "it holds", False)
        return (f"names the group {name}, which no data file declares (sanoma.group) and the site does not have: "
                f"the call would wait for nobody{_mean(close, GROUP_PREFIX)}{unread}", not unread)
    if approver in people or (not isinstance(site, str) and approver in site.active):
        return "", False
    if not isinstance(site, str) and approver in site.inactive:
        return (f"names {approver}, whose account is inactive and whom no data file declares: nobody can decide "
                "what it holds until the account is active again", False)
    if not isinstance(site, str) and approver in site.placeholders:
        close = _close(approver, sorted(people | frozenset(site.usernames) - {approver}))
        return (f"names {approver}, whom no data file declares and whose account has no password and never signed "
                f"in (the account a held call makes for an approver it does not know){_mean(close, '')}: if that "
                "is not someone, nobody decides what it holds", False)
    known = sorted(people | frozenset(() if isinstance(site, str) else site.usernames))
    return (f"names {approver}, who is neither a person the data files declare (sanoma.person) nor a user of the "
            f"site: the call would wait for nobody{_mean(_close(approver, known), '')}"
            f"; a group is written group:<name>{unread}", not unread)


def _close(name: str, candidates: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.7)
    return found[0] if found else None


def _mean(close: str | None, prefix: str) -> str:
    return f" (did you mean {prefix}{close}?)" if close else ""


__all__ = ["ApproverProblem", "Site", "approver_problems", "declared", "site_names"]
