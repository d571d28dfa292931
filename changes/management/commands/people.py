"""`manage.py people [--json]`: the people and groups the data files declare and the site has, who
can sign in to the desk (or why not) and what each group may do there.

    manage.py people                           everyone, every group
    manage.py people grant GROUP PERM...       add permissions (app_label.codename, or a role) to a group
    manage.py people revoke GROUP PERM...      take them away
    manage.py people roles                     the roles and the permissions each stands for

A group a data file declares takes its permissions there (`sanoma.group(name=..., permissions=[...])`),
applied by `manage.py apply`: grant and revoke refuse it, naming its file and line, so the
repository stays the truth (see `changes.resources.access`)."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from changes.datafiles.sanoma import ROLES
from changes.resources import access, directory
from runs.config.checks import COMMAND_CHECKS
from runs.console import console_login
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("List the people and groups (declared in data files, and the site's) with who can sign in to the "
            "desk and what each group may do; grant or revoke a group's permissions")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="one JSON document: people, groups")
        sub = parser.add_subparsers(dest="action")
        for name, what in (("grant", "add permissions to a group the data files do not declare"),
                           ("revoke", "take permissions from a group the data files do not declare")):
            one = sub.add_parser(name, help=what)
            one.add_argument("group")
            one.add_argument("permissions", nargs="+", metavar="PERMISSION",
                             help=f"app_label.codename (runs.operate_runs), or a role: {', '.join(ROLES)}")
        sub.add_parser("roles", help="the roles a group may carry, and their permissions")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        action = options.get("action")
        if action in ("grant", "revoke"):
            held = access.grant(group=options["group"], names=options["permissions"], by=f"console:{console_login()}",
                                revoke=action == "revoke")
            self.stdout.write(f"{options['group']} {'lost' if action == 'revoke' else 'holds'} "
                              f"{', '.join(options['permissions'])}; it now holds: {', '.join(held) or 'nothing'}")
            return
        if action == "roles":
            for role, permissions in ROLES.items():
                self.stdout.write(f"{role:<9} {', '.join(permissions)}")
            return
        people, groups = directory.people_and_groups()
        if options["json"]:
            self.stdout.write(json.dumps(directory.plain(people, groups), indent=2))
            return
        self.stdout.write("People")
        width = max([len(p.username) for p in people] + [6])
        for p in people:
            desk = (f"can sign in to the desk ({'superuser' if p.superuser else 'staff'})" if p.can_sign_in
                    else f"cannot sign in: {p.desk}")
            where = f"  ({p.declared_at})" if p.declared_at else "  (the site's)"
            self.stdout.write(f"  {p.username:<{width}}  {desk}; groups: {', '.join(p.groups) or '-'}{where}")
        self.stdout.write("Groups")
        width = max([len(g.name) for g in groups] + [6])
        for g in groups:
            where = f"  ({g.declared_at})" if g.declared_at else "  (the site's)"
            holds = ", ".join(g.permissions) or "no permissions"
            pending = ""
            if g.declared_permissions is not None and sorted(g.declared_permissions) != g.permissions:
                pending = f"; declared: {', '.join(g.declared_permissions) or 'none'} (apply makes it so)"
            state = "" if g.exists else "not applied yet; "
            self.stdout.write(f"  {g.name:<{width}}  {state}{holds}{pending}; members: {', '.join(g.members) or '-'}"
                              f"{where}")
