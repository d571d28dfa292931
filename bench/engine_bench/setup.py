"""The bench's database and Django, made ready as bench/engine.py does: the database dropped and
created afresh, migrated, the bench company's config set, a `bench` user allowed to start runs."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine_bench.common import BENCH_ROOT, REPO, VERSION
from engine_bench.database import recreate_database


def prepare(url: str) -> tuple[Any, dict[str, str], Path]:
    """The resolved config, the environment a worker of it needs, and a fresh var folder."""
    recreate_database(url)
    var = Path(tempfile.mkdtemp(prefix="sanoma-bench-"))
    env = {"DATABASE_URL": url, "SANOMA_ROOT": str(BENCH_ROOT), "SANOMA_FAKES": "instance",
           "SANOMA_APP_VERSION": VERSION, "SANOMA_VAR_DIR": str(var), "SANOMA_LOG_LEVEL": "WARNING"}
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "sanoma_site.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    from runs.config.registry import set_config
    from runs.config.resolution import load_config
    from runs.testing import make_user

    call_command("migrate", verbosity=0)
    config = load_config(BENCH_ROOT, fakes="instance", app_version=VERSION)
    set_config(config)
    make_user("bench", perms=["runs.start_workflow"])
    return config, env, var
