"""The django-q2 task: advance one run by one segment."""
from __future__ import annotations

import os
import socket

from runs.engine.advance import advance


def advance_task(run_id: str) -> str:
    # The id is read per call: django-q2 forks worker processes after this module loads.
    return advance(run_id, worker_id=f"{socket.gethostname()}:{os.getpid()}")
