"""`manage.py <any command> | head`: when the reader closes the pipe early, every command ends
quietly with exit 0, not only the ones that watch for it; a broken pipe of the command's own work
(a socket, a child process) is still its failure."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def manage(*args: str) -> subprocess.Popen:
    env = {**os.environ, "SANOMA_METRICS": "false"}
    return subprocess.Popen([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_command_whose_reader_leaves_early_exits_quietly():
    # far more than a pipe holds
    proc = manage("shell", "--no-imports", "-c", "for i in range(200_000): print('line', i)")
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == "line 0\n"
    proc.stdout.close()  # what `head -n 1` does
    assert (proc.wait(timeout=120), proc.stderr.read()) == (0, "")


def test_a_broken_pipe_of_the_commands_own_work_is_still_its_failure():
    proc = manage("shell", "--no-imports", "-c", "raise BrokenPipeError(32, 'the vendor closed the socket')")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "BrokenPipeError" in err and "the vendor closed the socket" in err
