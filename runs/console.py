"""Who is at the console: what a command records when no `--as USER` names someone."""
from __future__ import annotations

import getpass


def console_login() -> str:
    """The console's login name (`unknown` in a container without a passwd entry)."""
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return "unknown"
