#!/usr/bin/env python3
"""Django's command-line utility for sanoma."""
import os
import sys
from pathlib import Path


def _in_project_venv() -> None:
    """`./manage.py` run by a Python without Django: go on in the project's virtualenv (made by
    `./demo` or `./test`), so the docs' `./manage.py ...` and `.venv/bin/python manage.py ...` are the
    same command."""
    try:
        import django  # noqa: F401
    except ImportError:
        venv = Path(__file__).resolve().parent / ".venv"
        venv_python = venv / "bin" / "python"
        if venv_python.is_file() and Path(sys.prefix).resolve() != venv.resolve():
            os.execv(str(venv_python), [str(venv_python), *sys.argv])
        sys.exit("Django is not installed for this Python, and there is no .venv here yet: run ./demo or "
                 "./test once (they make .venv), then ./manage.py again")


def main() -> None:
    _in_project_venv()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
