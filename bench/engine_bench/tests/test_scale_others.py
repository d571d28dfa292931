"""bench/scale.py runs the history and parked-runs benches on databases of their own, with their own
arguments, and passes their output and failure on."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import scale


def test_another_script_gets_its_own_database_and_arguments(tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "probe.py").write_text(
        "import os, sys\nprint('url', os.environ['DATABASE_URL'])\nprint('args', sys.argv[1:])\n"
        "print('root', os.environ.get('SANOMA_ROOT_PROBE', '-'))\nsys.exit(3 if '--fail' in sys.argv else 0)\n")
    os.environ["SANOMA_ROOT_PROBE"] = "set after scale.py started"
    try:
        code = scale.run_other("probe.py", "postgresql://u@h:5432/sanoma_bench_x", "parked",
                               "--sizes 0,10 --note 'two words'", folder=tmp_path)
    finally:
        del os.environ["SANOMA_ROOT_PROBE"]
    out = capfd.readouterr().out
    assert code == 0
    assert "url postgresql://u@h:5432/sanoma_bench_x_parked" in out
    assert "args ['--sizes', '0,10', '--note', 'two words']" in out
    assert "root -" in out  # the environment scale.py started with, not what the bench set since
    assert scale.run_other("probe.py", "postgresql://u@h:5432/db", "history", "--fail", folder=tmp_path) == 3


def test_a_script_not_here_is_skipped(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert scale.run_other("absent.py", "postgresql://u@h:5432/db", "history", folder=tmp_path) == 0
    assert "absent.py: not here (yet); skipped" in capfd.readouterr().out
