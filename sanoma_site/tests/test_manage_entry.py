"""`./manage.py ...`, as the docs write it, runs in the project's virtualenv whatever Python `env` finds."""
import os
import subprocess
import sys
from pathlib import Path

import django
import pytest

pytestmark = pytest.mark.process

PROJECT = Path(__file__).resolve().parents[2]


def test_dot_slash_manage_py_runs_in_the_project_virtualenv() -> None:
    # A PATH without the virtualenv's bin: `#!/usr/bin/env python3` finds the machine's Python.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    done = subprocess.run([str(PROJECT / "manage.py"), "version"], cwd=PROJECT, capture_output=True, text=True,
                          env={**os.environ, "PATH": path}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == django.get_version()
