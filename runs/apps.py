from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate

import runs.errors  # noqa: F401  (registers the app's error codes: the registry is whole once apps are ready)
from runs.health import timeouts


def _forget_permission_ids(**kwargs: object) -> None:
    # Permission rows are recreated by migrate (and by a test database flush): ids read before go stale.
    from runs.approvals.permissions import start_permission_id

    start_permission_id.cache_clear()


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runs.config.checks import check_config, check_deployment
        from runs.direct_calls.workflow import install as install_direct_calls

        install_direct_calls()  # the built-in `call` workflow, in every config: direct calls

        post_migrate.connect(_forget_permission_ids, dispatch_uid="runs.forget_permission_ids")
        timeouts.connect()  # migrations run without PostgreSQL's statement timeout
        # Every command that runs the checks (check, runserver, migrate, worker, ...) refuses a broken config.
        checks.register(check_config, "sanoma")
        checks.register(check_deployment, "sanoma", deploy=True)
