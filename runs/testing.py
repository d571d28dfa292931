"""Helpers for the tests: the config on in-memory fakes, people, and draining runs in-process."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from runs.config.resolution import ResolvedConfig, SanomaConfig, resolve_config
from runs.engine.drain import drain


def resolve_on_fakes(config: SanomaConfig, **options: Any) -> ResolvedConfig:
    """The config with every connector on its in-memory fake."""
    return resolve_config(config, fakes="instance", **options)


def make_user(username: str, *, groups: Sequence[str] = (), perms: Sequence[str] = (), superuser: bool = False):
    """A user in groups, with global permissions such as `runs.start_workflow`."""
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=username)
    user.is_superuser = superuser
    user.is_staff = superuser or user.is_staff
    user.set_unusable_password()
    user.save()
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return User.objects.get(pk=user.pk)


__all__ = ["drain", "make_user", "resolve_on_fakes"]
