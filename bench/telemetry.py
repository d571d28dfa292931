"""What metrics and traces cost a step. Prints figures; not a test.

Usage (PostgreSQL only; the database named is DROPPED and created afresh, so give it its own name):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_telemetry .venv/bin/python bench/telemetry.py
    ... bench/telemetry.py --quick       # smaller batches

The engine's step as bench/engine.py's (b) measures it (runs of 10 calls on an in-memory fake,
advanced in this process with `runs.engine.advance.advance`), in three modes, rounds alternating
(the order turns each round, so a machine that slows down or speeds up is shared):

  none     SANOMA_METRICS off, tracing off
  metrics  metrics on (in multi-process mode, files under <SANOMA_VAR_DIR>/metrics, as a worker
           writes them), tracing off: the default
  tracing  metrics on and tracing on, spans batched and sent over OTLP/HTTP to a local receiver
           (a separate process that answers 200 to every POST, so only the sending side is counted)

For each: wall and CPU (this process) per step, the medians over rounds, and each mode's cost over
`none` as the median of the per-round ratios. Aim: metrics on, tracing off, under 3 % over none.
The machine may be shared: CPU time is the steadier figure.
"""
from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from urllib.parse import urlparse

from engine_bench.common import bench_database_url, bench_parser, ms
from engine_bench.in_process import CPU_SPENT, advance_all, start_runs
from engine_bench.setup import prepare

MODES = ("none", "metrics", "tracing")

RECEIVER = """
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def receiver() -> tuple[subprocess.Popen, int]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    ends = time.monotonic() + 30
    while time.monotonic() < ends:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("the local OTLP receiver did not listen")


def set_mode(mode: str, endpoint: str) -> None:
    from django.conf import settings

    from runs.telemetry import metrics, tracing

    settings.SANOMA_METRICS = mode != "none"
    metrics.reread_setting()
    if mode == "tracing" and not tracing.ON:
        settings.SANOMA_OTLP_ENDPOINT = endpoint
        tracing.configure(instrument=True)
    elif mode != "tracing" and tracing.ON:
        tracing.shutdown()


def fired_per_call_step(times: int = 20000) -> float:
    """CPU seconds of what metrics fire for one call step, timed alone (steadier than the steps on a
    busy machine): the step counted, the policy's decision, the attempt timed and the call settled."""
    from runs.telemetry import metrics

    op = type("Op", (), {"vendor": "bench", "id": "bench.step.do", "effect": "read"})()
    started = time.process_time()
    for i in range(times):
        if i % 10 == 0:
            metrics.flush()  # what a ten-step segment's end writes, shared by its steps
        metrics.step_written("steps", "call")
        metrics.policy_decided("allow")
        metrics.call_attempted(op, 0.001)
        metrics.call_settled(op, "ok")
    metrics.flush()
    return (time.process_time() - started) / times


def main() -> None:
    parser = bench_parser("telemetry.py", __doc__, "sanoma_bench_telemetry")
    parser.add_argument("--quick", action="store_true", help="smaller batches")
    parser.add_argument("--rounds", type=int, help="rounds (default 15; --quick 6)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    url = bench_database_url("telemetry.py", "sanoma_bench_telemetry")
    # Many short rounds: the median of per-round ratios shrugs off a burst of load better than few long ones.
    runs, steps = (20, 10) if args.quick else (30, 10)
    rounds = args.rounds or (6 if args.quick else 15)
    config, _env, _var = prepare(url)
    process, port = receiver()
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    load = os.getloadavg()
    print(f"bench database {urlparse(url).path.lstrip('/')}; python {sys.version.split()[0]}; {os.cpu_count()} cores; "
          f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    try:
        set_mode("none", endpoint)
        advance_all(config, start_runs(config, "warm", runs, steps))  # connections, caches, imports
        for r in range(rounds):
            order = MODES[r % 3:] + MODES[:r % 3]
            for mode in order:
                set_mode(mode, endpoint)
                ids = start_runs(config, f"t{r}-{mode}", runs, steps)
                seconds = advance_all(config, ids)
                wall[mode].append(seconds / (runs * steps))
                cpu[mode].append(CPU_SPENT[0] / (runs * steps))
        set_mode("none", endpoint)
    finally:
        process.terminate()
        process.wait(timeout=10)
    print(f"{runs} runs x {steps} steps a mode a round, {rounds} rounds alternating; load now "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'mode':10} {'wall/step':>10} {'cpu/step':>10} {'wall vs none':>13} {'cpu vs none':>12}")
    ratios: dict[str, tuple[float, float]] = {}
    for mode in MODES:
        w = statistics.median(wall[mode])
        c = statistics.median(cpu[mode])
        rw = statistics.median(a / b for a, b in zip(wall[mode], wall["none"], strict=True)) - 1
        rc = statistics.median(a / b for a, b in zip(cpu[mode], cpu["none"], strict=True)) - 1
        ratios[mode] = (rw, rc)
        print(f"{mode:10} {ms(w):>10} {ms(c):>10} {rw:>+12.1%} {rc:>+11.1%}")
    for mode in MODES:
        print(f"  {mode} rounds, wall: {', '.join(ms(v) for v in wall[mode])}; "
              f"cpu: {', '.join(ms(v) for v in cpu[mode])}")
    set_mode("metrics", endpoint)
    fired = fired_per_call_step()
    print(f"what metrics fire for one call step, timed alone: {fired * 1e6:.1f} us CPU "
          f"({fired / statistics.median(cpu['none']):.1%} of a step's CPU without them)")
    verdict = "MET" if ratios["metrics"][1] < 0.03 else "MISSED"
    print(f"\naim: metrics on, tracing off, under 3 % CPU over none  {verdict}  {ratios['metrics'][1]:+.1%} "
          f"(wall {ratios['metrics'][0]:+.1%})")
    print(f"tracing on (OTLP to a local receiver): {ratios['tracing'][1]:+.1%} CPU, {ratios['tracing'][0]:+.1%} wall")


if __name__ == "__main__":
    main()
