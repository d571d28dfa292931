"""How fast the data files are read: a tree of 100 files declaring 1,000 resources in a temp dir.

    .venv/bin/python bench/resources.py [--files 100] [--per-file 10] [--rounds 5]

Each file declares products and staff roles referring to people declared in another file (imported),
so references, imports and the cycle check all take part. Prints files/s and resources/s of the best
round; the target is 1,000 resources in 100 files in under a second.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from changes.datafiles import read_datafiles
from company.vendors.shop import shop


def make_tree(root: Path, files: int, per_file: int) -> None:
    folder = root / "resources"
    folder.mkdir(parents=True)
    people = ["from changes.datafiles import sanoma", "", 'staff = sanoma.group(name="staff")']
    people += [f'p{n} = sanoma.person(username="p{n}", email="p{n}@acme.example", groups=[staff])'
               for n in range(per_file - 1)]
    (folder / "people.py").write_text("\n".join(people) + "\n")
    for f in range(files - 1):
        lines = ['"""Generated."""', "from company.vendors.shop import shop",
                 "from bench_root.resources.people import " + ", ".join(f"p{n}" for n in range(per_file - 1)), ""]
        for r in range(per_file):
            if r % 2:
                lines.append(_role(f, r, per_file - 1) if r == 1 else
                             f'sku_{f}_{r} = shop.product(sku="s{f}-{r}", title="Thing {f}/{r}", price_cents={100 + r},'
                             f' tags=["a", "b"])')
            else:
                lines.append(f'item_{f}_{r} = shop.product(sku="i{f}-{r}", title="Item", price_cents={200 + r}, '
                             f'currency="EUR")')
        (folder / f"f{f:03}.py").write_text("\n".join(lines) + "\n")


ROLES = ("support", "finance", "admin", "viewer")


def _role(f: int, r: int, people: int) -> str:
    """A staff role: a reference to a person while the (person, role) pairs last, then a literal user."""
    if f < people * len(ROLES):
        return f'role_{f}_{r} = shop.staff_role(user=p{f % people}, role="{ROLES[f // people]}")'
    return f'role_{f}_{r} = shop.staff_role(user="u{f}", role="support")'


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench_root"
        make_tree(root, args.files, args.per_file)
        best = float("inf")
        result = None
        for _ in range(args.rounds):
            start = time.perf_counter()
            result = read_datafiles(root, [shop])
            best = min(best, time.perf_counter() - start)
        assert result is not None
        if result.problems:
            raise SystemExit("the generated tree has problems:\n" + "\n".join(map(str, result.problems[:5])))
        files, resources = len(result.files), len(result.resources)
        print(f"read {files} files, {resources} resources in {best * 1000:.1f} ms (best of {args.rounds}): "
              f"{files / best:,.0f} files/s, {resources / best:,.0f} resources/s")


if __name__ == "__main__":
    main()
