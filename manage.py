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


def _reader_left() -> bool:
    """The program reading this command's output closed it (`manage.py change show X | head`)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def main() -> None:
    _in_project_venv()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
        sys.stdout.flush()  # a reader that left shows here, not as a traceback at the interpreter's exit
    except BrokenPipeError:
        if not _reader_left():
            raise  # a pipe of the command's own work broke: that is its failure
        # The reader has what it wanted: exit 0, quietly, with stdout on /dev/null so the
        # interpreter's own last flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


if __name__ == "__main__":
    main()
