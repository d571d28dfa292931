"""Running settings and manage.py the way a user does: with an environment and nothing else."""
from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SETTINGS_FILE = REPO / "sanoma_site" / "settings.py"

# Every variable the settings read: cleared so the caller's shell (./test on PostgreSQL sets
# DATABASE_URL) cannot leak into a test about defaults.
VARIABLES = (
    "DATABASE_URL", "DJANGO_ENV", "DJANGO_SECRET_KEY", "SECRET_KEY", "DJANGO_DEBUG", "DJANGO_ALLOWED_HOSTS",
    "DJANGO_CSRF_TRUSTED_ORIGINS", "DJANGO_SECURE_SSL_REDIRECT", "DJANGO_SECURE_HSTS_SECONDS",
    "DJANGO_SECURE_PROXY_SSL_HEADER", "DJANGO_LOG_LEVEL", "SANOMA_VAR_DIR", "SANOMA_ROOT", "SANOMA_APP_VERSION",
    "SANOMA_FAKES", "SANOMA_LEASE_SECONDS", "SANOMA_SEGMENT_SECONDS", "SANOMA_SWEEP_SECONDS", "SANOMA_WORKERS",
    "SANOMA_LOG_LEVEL", "SANOMA_Q_LOG_LEVEL", "SANOMA_LOG_FORMAT",
)

# A key that passes Django's deployment check: long, varied, not django-insecure-.
PRODUCTION_KEY = "pX7#qL2!vR9@mK4$wN8^tB3&yH6*jD1(zF5)cG0-sA+uE=oI_rT~lY|nU{eW}"


def run_settings() -> dict[str, Any]:
    """The settings module's values in this process's environment: a fresh run of
    sanoma_site/settings.py, as Django does at start (the `load_settings` fixture sets the environment)."""
    return runpy.run_path(str(SETTINGS_FILE))


def manage(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    """`python manage.py <args>` in a fresh process whose environment holds only `environ` (and PATH, HOME)."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update(environ)
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
