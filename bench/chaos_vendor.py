"""The chaos harness's fake vendor: a small HTTP server, out of every worker's process.

It takes effects as a vendor does and keeps what it took, so the harness can count them after any
crash: every request it received (kind, idempotency key, whether it was an effect or a repeat) and
every effect (its key, its reference). Three kinds of the same write (see
`bench/chaos_company/vendor.py`):

- POST /honoured/post: deduplicates on the Idempotency-Key header. The check and the effect are
  one step under a lock, so two requests with the same key in flight at once make one effect; the
  second gets the first's reply back (a repeat).
- POST /ignored/charge and POST /reconciled/charge: the key is ignored, every request is an effect.
- POST /reconciled/find: whether a reconciled charge with this `ref` exists, and its reply.

Like a real vendor it takes its time: a short random wait before the effect and after it (a worker
killed in between leaves an effect it has not recorded), and now and then a long wait before the
effect (`slow_share`, `slow_seconds`), so a frozen worker's call can still land late: the harness
sees those in flight (`slow_in_flight`, with the requesting worker's pid) and may freeze that worker.
"""
from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KINDS = ("honoured", "ignored", "reconciled")


@dataclass
class Ledger:
    """What the vendor received and did, under one lock."""

    effects: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)  # honoured: key -> first reply
    # Slow requests not yet taken: id -> kind, key, the requesting worker's pid, when it lands.
    pending: dict[int, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, kind: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if kind == "honoured" and key in self.replies:
                self.requests.append({"kind": kind, "key": key, "outcome": "repeat", "at": time.time()})
                return self.replies[key]
            entry_id = f"{kind[0]}{len(self.effects) + 1}"
            reply = {"entry_id": entry_id, "ref": str(body.get("ref", ""))}
            self.effects.append({"entry_id": entry_id, "kind": kind, "key": key, "ref": reply["ref"],
                                 "run": body.get("run"), "attempt": body.get("attempt"), "at": time.time()})
            self.requests.append({"kind": kind, "key": key, "outcome": "effect", "at": time.time()})
            if kind == "honoured":
                self.replies[key] = reply
            return reply

    def slow_in_flight(self) -> list[dict[str, Any]]:
        """The slow requests whose effect has not landed yet (a worker frozen now has a call in flight)."""
        with self.lock:
            return [dict(request, id=n) for n, request in self.pending.items()]

    def find(self, ref: str) -> dict[str, Any]:
        with self.lock:
            for effect in self.effects:
                if effect["kind"] == "reconciled" and effect["ref"] == ref:
                    return {"happened": True, "output": {"entry_id": effect["entry_id"], "ref": ref}}
            return {"happened": False, "output": None}

    def effects_of(self, key: str) -> list[dict[str, Any]]:
        with self.lock:
            return [effect for effect in self.effects if effect["key"] == key]

    def figures(self) -> dict[str, dict[str, int]]:
        """Per kind: requests, effects, keys, keys with more than one effect, and re-sends (requests
        whose key the vendor had already received)."""
        with self.lock:
            out: dict[str, dict[str, int]] = {}
            for kind in KINDS:
                requests = [r for r in self.requests if r["kind"] == kind]
                effects = Counter(e["key"] for e in self.effects if e["kind"] == kind)
                keys = {r["key"] for r in requests}
                out[kind] = {
                    "requests": len(requests),
                    "effects": sum(effects.values()),
                    "keys": len(keys),
                    "resends": len(requests) - len(keys),
                    "duplicate_keys": sum(1 for n in effects.values() if n > 1),
                    "duplicate_effects": sum(n - 1 for n in effects.values() if n > 1),
                }
            return out


class VendorServer:
    """The vendor on 127.0.0.1:<free port>, served by threads of this process."""

    def __init__(self, *, seed: int, slow_share: float = 0.05, slow_seconds: tuple[float, float] = (4.0, 7.0)) -> None:
        self.ledger = Ledger()
        self.random = random.Random(seed)
        self.random_lock = threading.Lock()
        self.slow_share = slow_share
        self.slow_seconds = slow_seconds
        vendor = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._answer(400, {"error": "not JSON"})
                key = self.headers.get("Idempotency-Key", "")
                path = self.path.rstrip("/")
                if path == "/reconciled/find":
                    return self._answer(200, vendor.ledger.find(str(body.get("ref", ""))))
                kind = {"/honoured/post": "honoured", "/ignored/charge": "ignored",
                        "/reconciled/charge": "reconciled"}.get(path)
                if kind is None:
                    return self._answer(404, {"error": f"no {path}"})
                before, after = vendor.delays()
                slow = before >= vendor.slow_seconds[0]
                if slow:
                    with vendor.ledger.lock:
                        ticket = id(self)
                        vendor.ledger.pending[ticket] = {"kind": kind, "key": key, "pid": body.get("pid"),
                                                         "lands_at": time.time() + before}
                time.sleep(before)
                if slow:
                    with vendor.ledger.lock:
                        vendor.ledger.pending.pop(ticket, None)
                reply = vendor.ledger.take(kind, key, body)
                time.sleep(after)
                self._answer(200, reply)

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the worker that asked is gone; the effect stands

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="chaos-vendor", daemon=True)

    def delays(self) -> tuple[float, float]:
        with self.random_lock:
            if self.random.random() < self.slow_share:
                return self.random.uniform(*self.slow_seconds), self.random.uniform(0, 0.3)
            return self.random.uniform(0, 0.05), self.random.uniform(0, 0.3)

    def start(self) -> VendorServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
