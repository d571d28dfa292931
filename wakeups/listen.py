"""PostgreSQL LISTEN through psycopg 3: a connection of its own that waits for NOTIFYs.

Channels: `sanoma_runnable` (a run became runnable: sent in the transaction that enqueues it, so
delivered when it commits), `sanoma_deadline` (a run suspended with a wake time: a trigger on the
runs table) and `sanoma_wakeup` (a worker registered a deadline).
"""
from __future__ import annotations

import os
import select
from collections.abc import Sequence
from typing import Any

from django.db import connections

from runs.engine.dispatch import RUNNABLE_CHANNEL

RUNNABLE = RUNNABLE_CHANNEL  # the channel every enqueue notifies
DEADLINE = "sanoma_deadline"


def listens(alias: str = "default") -> bool:
    return connections[alias].vendor == "postgresql"


class Listener:
    """LISTEN on `channels`; `wait(timeout)` returns the notifications received (maybe none). A
    byte written to `wake_fd`'s pipe (a signal, through `signal.set_wakeup_fd`) ends a wait too."""

    def __init__(self, channels: Sequence[str], *, alias: str = "default", wake_fd: int | None = None) -> None:
        import psycopg  # here, not at the top: a worker on SQLite (no LISTEN) never imports it

        params: dict[str, Any] = dict(connections[alias].get_connection_params())
        for key in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(key, None)
        self.conn = psycopg.connect(autocommit=True, **params)
        for channel in channels:
            self.conn.execute(f"LISTEN {channel}")
        self.wake_fd = wake_fd

    def wait(self, timeout: float) -> list[tuple[str, str]]:
        fds = [self.conn.fileno()] + ([self.wake_fd] if self.wake_fd is not None else [])
        ready, _, _ = select.select(fds, [], [], max(timeout, 0.0))
        if self.wake_fd is not None and self.wake_fd in ready:
            try:
                os.read(self.wake_fd, 512)
            except BlockingIOError:
                pass
        return [(n.channel, n.payload) for n in self.conn.notifies(timeout=0, stop_after=1000)]

    def close(self) -> None:
        self.conn.close()
