"""How fast the data files are read, and drift and apply over them: a tree of 100 files declaring
1,000 resources in a temp dir.

    .venv/bin/python bench/resources.py [--files 100] [--per-file 10] [--rounds 5] [--read-only]

Each file declares products and staff roles referring to people declared in another file (imported),
so references, imports and the cycle check all take part. Prints files/s and resources/s of the best
round; the target is 1,000 resources in 100 files in under a second.

Then (unless --read-only) the wall time of a `drift` run and of an `apply` run over the same tree,
on the shop's in-memory fake and the engine as it is: one worker, this process advancing the run
(`changes.services.follow(here=True)`, the in-process drain the tests use, no django-q),
on a fresh SQLite database in the temp dir (or the database DATABASE_URL names: its tables are
migrated, not dropped). The first drift finds nearly everything gone, apply creates it all (every
call checkpointed and in the ledger; the policy allows all), and a second drift must find it all
clean; the aim is a drift of 1,000 resources under 10 s.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from company.vendors.shop import shop
from runs.config.datafiles import read_datafiles

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")


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


def drift_and_apply(root: Path, tmp: Path) -> None:
    """The wall time of drift, apply, and drift again over `root`, on fakes, advanced in this process."""
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.setdefault("SANOMA_VAR_DIR", str(tmp / "var"))
    os.environ["SANOMA_LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(root.parent))  # the data files import bench_root.resources.people
    import django

    django.setup()
    from django.core.management import call_command

    from changes import services
    from runs.config.registry import set_config
    from runs.config.resolution import SanomaConfig, resolve_config
    from runs.models import Step
    from runs.testing import make_user

    call_command("migrate", verbosity=0)
    config = resolve_config(SanomaConfig(app_name="bench", connectors=[shop], root=root), fakes="instance",
                            app_version="bench")
    set_config(config)
    make_user("bench", perms=["runs.start_workflow"])

    def timed_drift(label: str) -> dict:
        start = time.perf_counter()
        run, report = services.drift(by="bench", here=True, config=config, timeout=3600)
        took = time.perf_counter() - start
        steps = Step.objects.filter(run_id=run.id).count()
        print(f"drift ({label}): {took:.2f} s for {len(report['resources'])} resources, {steps} steps "
              f"({len(report['resources']) / took:,.0f} resources/s); {report['summary']}")
        return report

    first = timed_drift("first")
    start = time.perf_counter()
    run = services.start("apply", by="bench", config=config)
    followed = services.follow(run, here=True, config=config, timeout=3600)
    took = time.perf_counter() - start
    if not followed.ended:
        raise SystemExit(f"apply did not end: {followed.run.status} {followed.waiting}")
    out = services.report(followed.run)
    steps = Step.objects.filter(run_id=run.id).count()
    changes = len(out["changes"])
    print(f"apply: {took:.2f} s for {changes} changes over {len(first['resources'])} resources, {steps} steps "
          f"({changes / took:,.0f} changes/s); {out['summary']}")
    if out["summary"]["failed"] or out["summary"]["skipped"]:
        raise SystemExit("apply failed changes: " + "; ".join(
            f"{c['resource']}: {c['error']['message']}" for c in out["changes"] if c.get("error"))[:2000])
    if os.environ.get("BENCH_PROFILE"):
        import cProfile
        import pstats
        profile = cProfile.Profile()
        profile.enable()
        settled = timed_drift("after apply")
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    else:
        settled = timed_drift("after apply")
    if settled["summary"]["clean"] != len(settled["resources"]):
        raise SystemExit(f"after apply the drift is not clean: {settled['summary']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--read-only", action="store_true", help="time the reading only (no database)")
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
        if not args.read_only:
            drift_and_apply(root, Path(tmp))


if __name__ == "__main__":
    main()
