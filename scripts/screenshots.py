"""Makes the README's pictures of the desk: `docs/screenshots/run-page.png`, `inbox.png`,
`waterfall.png` (a run over time) and `compare.png` (two runs compared).

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--max-kb 150]

The pictures are taken by the desk's browser tests (`runs/tests/test_desk_browser.py` and
`runs/tests/test_desk_journeys_time.py`, real
Chromium against a live server on a throwaway database), which leave them in a temporary folder
when `SANOMA_README_SHOTS` names it; the tests' assertions hold for what is pictured. Each PNG is
then shrunk with pngquant (256 colours) and optipng when they are installed (Debian: `apt-get
install pngquant optipng`) and copied to `--out`. Exits 1, naming the file, when a test fails, a
picture is missing, or one is larger than `--max-kb`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ("runs/tests/test_desk_browser.py", "runs/tests/test_desk_journeys_time.py")
PICTURES = ("run-page", "inbox", "waterfall", "compare")


def take(folder: Path) -> int:
    """Run the desk's browser tests with the README pictures going to `folder`; their exit status."""
    var = folder / "var"
    env = {**os.environ, "SANOMA_README_SHOTS": str(folder), "SANOMA_VAR_DIR": str(var),
           "SANOMA_SCREENSHOT_DIR": str(folder / "all")}
    command = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", "-rs", *TESTS]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def shrink(png: Path) -> list[str]:
    """Shrink `png` in place with what is installed; the tools used."""
    used = []
    if shutil.which("pngquant"):
        subprocess.run(["pngquant", "--force", "--skip-if-larger", "--strip", "--quality=70-95", "--speed", "1",
                        "--output", str(png), "256", str(png)], check=False)
        used.append("pngquant")
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", "-strip", "all", str(png)], check=True)
        used.append("optipng")
    return used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--max-kb", type=int, default=150)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sanoma-shots-") as scratch:
        folder = Path(scratch)
        status = take(folder)
        if status != 0:
            print(f"the desk's browser tests failed (exit {status}): no picture was kept", file=sys.stderr)
            return 1
        missing = [name for name in PICTURES if not (folder / f"{name}.png").is_file()]
        if missing:
            print(f"no picture {', '.join(missing)}: were the browser tests skipped (Chromium, selenium)?",
                  file=sys.stderr)
            return 1
        options.out.mkdir(parents=True, exist_ok=True)
        too_big = []
        for name in PICTURES:
            png = folder / f"{name}.png"
            before = png.stat().st_size
            used = shrink(png)
            after = png.stat().st_size
            target = options.out / png.name
            shutil.copyfile(png, target)
            print(f"{target}: {before // 1024} KB -> {after // 1024} KB ({', '.join(used) or 'not shrunk'})")
            if after > options.max_kb * 1024:
                too_big.append(f"{target} is {after // 1024} KB, more than {options.max_kb} KB")
        for problem in too_big:
            print(problem, file=sys.stderr)
        return 1 if too_big else 0


if __name__ == "__main__":
    sys.exit(main())
