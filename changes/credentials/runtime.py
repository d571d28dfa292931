"""The credentials as a process uses them: the engine's hooks, a cache of the decrypted values, and the
watcher that keeps it fresh.

Imported by `changes.apps` before Django's models are loaded, so the tables are reached through the
app registry (`apps.get_model`) when first needed, never at import time.

- The provider (`provide(vendor)`) gives a driver its connector's declared names only: the process's
  environment first (a stored value never replaces one), then the stored value, then the default.
- Stored values are decrypted once and cached. In a worker (`keep_fresh`, inherited by the cluster's
  forked processes) a thread keeps the cache fresh: on PostgreSQL it LISTENs on `sanoma_credentials`
  (every set and clear NOTIFYs it when it commits); on SQLite it polls the store's version (the
  newest change's id) every POLL_SECONDS. A reload that changes what a driver gets is logged:
  `credentials reloaded for shop (1 variable)`. Elsewhere (the site, commands, tests) the cache is
  checked against the store's version at most every CHECK_SECONDS, and this process's own set or clear
  drops it at once.
"""
from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.apps import apps
from django.db import connections
from django.db.models import Count, Max

from changes.credentials.crypto import DecryptionFailed, decrypt
from changes.credentials.declared import Unreadable, evaluate, variables
from connectors.operations import Connector
from runs.config.registry import get_config

log = logging.getLogger("sanoma.credentials")

CHANNEL = "sanoma_credentials"
POLL_SECONDS = 0.5
CHECK_SECONDS = 1.0
LISTEN_WAIT_SECONDS = 5.0

Stored = dict[str, str | Unreadable]


def read_stored() -> Stored:
    """Every stored value, decrypted (one that cannot be is `Unreadable`, saying why)."""
    credential = apps.get_model("credentials", "Credential")
    stored: Stored = {}
    for name, ciphertext, key in credential.objects.values_list("name", "ciphertext", "key_id"):
        try:
            stored[name] = decrypt(ciphertext, key)
        except DecryptionFailed as err:
            stored[name] = Unreadable(str(err))
    return stored


def store_version() -> tuple[int, int]:
    """Changes when anything is set or cleared: (how many changes, the newest change's id)."""
    change = apps.get_model("credentials", "CredentialChange")
    got = change.objects.aggregate(n=Count("id"), newest=Max("id"))
    return int(got["n"] or 0), int(got["newest"] or 0)


def effective(connector: Connector, *, environ: Mapping[str, str], stored: Mapping[str, str | Unreadable]
              ) -> dict[str, str]:
    """What `connector`'s driver gets: its declared names only, environment, then stored, then default."""
    values: dict[str, str] = {}
    for variable in variables(connector):
        from_env = environ.get(variable.name, "")
        from_store = stored.get(variable.name)
        if from_env != "":
            values[variable.name] = from_env
        elif isinstance(from_store, str):
            values[variable.name] = from_store
        elif variable.default is not None:
            values[variable.name] = variable.default
    return values


def _connectors() -> list[Connector]:
    return [c for c in get_config().connectors if isinstance(c, Connector) and c.environment is not None]


class _Cache:
    """This process's decrypted values; refreshed by the watcher (a worker) or on a version check."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.pid = os.getpid()
        self.values: Stored | None = None
        self.version: tuple[int, int] | None = None
        self.checked_at = 0.0
        self.watching = False  # set in a worker by keep_fresh, and so in the processes it forks
        self.thread: threading.Thread | None = None

    def _forked(self) -> None:
        """After a fork: the parent's values may be stale and its thread did not come along."""
        if self.pid != os.getpid():
            self.pid = os.getpid()
            self.values, self.version, self.thread = None, None, None

    def current(self) -> Stored:
        with self.lock:
            self._forked()
            if self.watching:
                self._start_watcher()
                if self.values is None:
                    self.reload()
            elif self.values is None or time.monotonic() - self.checked_at > CHECK_SECONDS:
                version = store_version()
                self.checked_at = time.monotonic()
                if self.values is None or version != self.version:
                    self.reload(version=version)
            assert self.values is not None
            return self.values

    def invalidate(self) -> None:
        with self.lock:
            self.values, self.version = None, None

    def reload(self, *, version: tuple[int, int] | None = None) -> None:
        """Read the store again; log each connector whose driver now gets something else."""
        with self.lock:
            before = self.values
            self.version = version if version is not None else store_version()
            self.values = read_stored()
            self.checked_at = time.monotonic()
            if before is None:
                return
            environ = dict(os.environ)
            for connector in _connectors():
                old = effective(connector, environ=environ, stored=before)
                new = effective(connector, environ=environ, stored=self.values)
                changed = [name for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]
                kept = [v.name for v in variables(connector)
                        if environ.get(v.name) and before.get(v.name) != self.values.get(v.name)]
                for name in kept:
                    log.info("%s changed in the store; this process's environment sets it, so it is kept", name)
                if changed:
                    log.info("credentials reloaded for %s (%d variable%s)", connector.vendor, len(changed),
                             "" if len(changed) == 1 else "s")

    def _start_watcher(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        self.thread = threading.Thread(target=_watch, name="sanoma-credentials", daemon=True)
        self.thread.start()


_cache = _Cache()
# Set to end the watcher thread (a test session ending, so its database can be dropped).
_stopping = threading.Event()


def _listen() -> None:
    """PostgreSQL: wait for NOTIFYs on CHANNEL on a connection of its own; reload on each batch."""
    import psycopg  # here, not at the top: a process on SQLite never imports it

    params: dict[str, Any] = dict(connections["default"].get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(autocommit=True, **params) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        _cache.reload()  # whatever changed before LISTEN took hold
        while not _stopping.is_set():
            select.select([conn.fileno()], [], [], LISTEN_WAIT_SECONDS)
            if list(conn.notifies(timeout=0, stop_after=1000)):
                _cache.reload()


def _poll() -> None:
    """SQLite (no NOTIFY): compare the store's version every POLL_SECONDS."""
    while not _stopping.is_set():
        version = store_version()
        if version != _cache.version:
            _cache.reload(version=version)
        _stopping.wait(POLL_SECONDS)


def _watch() -> None:
    while not _stopping.is_set():
        try:
            if connections["default"].vendor == "postgresql":
                _listen()
            else:
                _poll()
        except Exception:  # a database hiccup must not end the watching
            log.exception("watching the credentials failed; trying again in 1 s")
            connections.close_all()
            _stopping.wait(1.0)
    connections.close_all()


# ---- the engine's hooks (runs.engine.secrets) ---------------------------------------------------


def provide(vendor: str) -> dict[str, str]:
    """`CallContext.secrets` for `vendor`'s driver: its declared names only."""
    try:
        connector = next((c for c in _connectors() if c.vendor == vendor), None)
    except Exception:  # this process's config cannot be resolved: no declared names to give
        log.exception("the config could not be resolved; %s's driver gets no secrets", vendor)
        return {}
    if connector is None:
        return {}
    try:
        stored = _cache.current()
    except Exception:  # the store cannot be read now: the environment and defaults still hold
        log.exception("the stored credentials could not be read; %s's driver gets its environment only", vendor)
        stored = _cache.values or {}
    return effective(connector, environ=os.environ, stored=stored)


def startup_check(connectors: Sequence[Connector]) -> list[str]:
    """One line for each missing or invalid variable of `connectors` (the stored values read afresh)."""
    declaring = [c for c in connectors if c.environment is not None]
    if not declaring:
        return []
    stored = read_stored()
    return [status.describe() for connector in declaring
            for status in evaluate(connector, environ=os.environ, stored=stored)
            if status.status in ("missing", "invalid")]


def stop_watching(*, within: float = LISTEN_WAIT_SECONDS * 2) -> None:
    """End this process's watcher thread and its database connection (when a test session ends)."""
    _stopping.set()
    thread = _cache.thread
    if thread is not None:
        thread.join(timeout=within)


def keep_fresh() -> None:
    """Watch the store in this process and in those it forks (a thread starts on a process's first use)."""
    with _cache.lock:
        _cache.watching = True


def invalidate() -> None:
    """Forget the cached values: the next use reads the store (after this process set or cleared one)."""
    _cache.invalidate()


def cached_values() -> Stored:
    """The cached, decrypted stored values (read when stale)."""
    return _cache.current()
