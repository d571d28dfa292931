"""Driving runs in-process, for tests and scenarios: the same engine, no cluster."""
from __future__ import annotations

from typing import Any, Sequence

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from runs.engine import clock
from runs.config.resolution import ResolvedConfig, SanomaConfig, resolve_config
from runs.engine.advance import advance
from runs.models import Run, RunStatus


def resolve_on_fakes(config: SanomaConfig, **options: Any) -> ResolvedConfig:
    """The config with every connector on its in-memory fake."""
    return resolve_config(config, fakes="instance", **options)


def drain(config: ResolvedConfig, *, worker_id: str = "test-worker", rounds: int = 1000) -> int:
    """Advance every runnable run of the config's version until none is: due sleepers wake,
    queued runs advance. Returns how many advances ran."""
    advanced = 0
    for _ in range(rounds):
        now = clock.now()
        Run.objects.filter(status=RunStatus.WAITING, app_version=config.version, wake_at__lte=now).update(
            status=RunStatus.QUEUED, wake_at=None, waiting_for="", queued_at=now
        )
        runnable = list(
            Run.objects.filter(status=RunStatus.QUEUED, app_version=config.version).order_by("created_at").values_list("pk", flat=True)
        )
        if not runnable:
            return advanced
        for run_id in runnable:
            advance(run_id, worker_id=worker_id, config=config)
            advanced += 1
    raise RuntimeError(f"runs kept becoming runnable after {rounds} rounds")


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
