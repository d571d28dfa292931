"""How long a Cedar policy decision takes: `.venv/bin/python bench/policy_check.py`.

Two policy sets:
1. The example company's own (`company/policies/`), asked what its workflows ask: staff running the
   shop's workflows (reads, refunds held for finance, shipments, notices, notes, a merge), run after
   run, each run with its own id and inputs. Aim: p95 under 100 us for `decide()`, which keeps each
   policy version's decisions by what its rules read (`runs.policies.cedar.memo`).
2. A 60-rule set built in a temp dir (permits by effect and group, @approve forbids, plain forbids,
   input conditions, target rules) over a few thousand varied calls (most never seen twice):
   `decide()`, Cedar's evaluation alone (`evaluate()`: the pre-parsed set, nothing kept), and the
   same decisions made by re-parsing the policy text on every call. Aim: evaluation p95 under 1 ms.
Figures are wall time in this process, one thread; a loaded machine shows its load in the p95.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cedarpy  # noqa: E402

from runs.policies import ApprovalView, PolicyCall, RunInfo, load_cedar_policy  # noqa: E402
from runs.policies.cedar.policy import _ERROR_POLICY, CedarPolicy, Evaluation  # noqa: E402

VENDORS = {
    "shop": {"order": {"refund": "money", "note": "write", "read": "read", "cancel": "write"},
             "customer": {"email": "send", "read": "read"}},
    "stripe": {"charge": {"create": "money", "capture": "money"}, "payout": {"create": "money"}},
    "bluesky": {"post": {"create": "publish", "delete": "write"}},
    "mail": {"message": {"send": "send"}},
    "github": {"repo": {"invite": "access", "read": "read"}, "issue": {"create": "write"}},
    "okta": {"user": {"grant": "access", "revoke": "access"}},
}
OPS = [(f"{v}.{r}.{n}", eff) for v, rs in VENDORS.items() for r, ns in rs.items() for n, eff in ns.items()]
EFFECTS = sorted({eff for _, eff in OPS})
GROUPS = ["finance", "support", "marketing", "engineering", "security", "ops", "sales", "legal"]
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]


def policy_files() -> dict[str, str]:
    """60 rules across four files."""
    permits, holds, forbids, targets = [], [], [], []
    # 1. permits by effect and group (20)
    by_group = {
        "finance": ["money", "read", "send"], "support": ["write", "read", "send"],
        "marketing": ["publish", "send", "read"], "engineering": ["write", "read", "access"],
        "security": ["access", "read"], "ops": ["write", "read", "money"],
        "sales": ["read", "send"], "legal": ["read"],
    }
    for group, effects in by_group.items():
        for eff in effects:
            permits.append(f'permit(principal in Group::"{group}", action in Action::"{eff}", resource);')
    permits = permits[:20]
    # 2. @approve forbids with input conditions (20)
    for i in range(20):
        op, eff = OPS[i % len(OPS)]
        approver = f"group:{GROUPS[i % len(GROUPS)]}" if i % 2 else PEOPLE[i % len(PEOPLE)]
        cond = [
            f"context.input has amount && context.input.amount > {100 * (i + 1)}",
            f'context.input has channel && context.input.channel == "public-{i}"',
            f'context.workflow == "wf-{i % 5}" && context.input has count && context.input.count >= {i}',
            f'context.input has tags && context.input.tags.contains("risky-{i % 4}")',
        ][i % 4]
        holds.append(
            f'@id("hold-{i}")\n@approve("{approver}")\n@title("{op} needs a second look")\n'
            f'@covers("{OPS[(i + 1) % len(OPS)][0]}")\n'
            f'forbid(principal, action == Action::"{op}", resource)\nwhen {{ {cond} }};'
        )
    # 3. plain forbids (12)
    for i in range(12):
        op, eff = OPS[(i * 3) % len(OPS)]
        cond = [
            f"context.input has amount && context.input.amount > {10000 + i * 1000}",
            f'principal == User::"{PEOPLE[i % len(PEOPLE)]}" && context.input has blocked && context.input.blocked',
            'context.input has country && ["kp", "ir", "sy"].contains(context.input.country)',
        ][i % 3]
        forbids.append(
            f'@reason("rule {i}: not allowed")\n'
            f'forbid(principal, action == Action::"{op}", resource)\nwhen {{ {cond} }};'
        )
    # 4. target rules (8)
    for i in range(8):
        if i % 2:
            targets.append(
                f'@reason("order/{i} is in dispute")\nforbid(principal, action, resource == Target::"order/{i}");'
            )
        else:
            op, eff = OPS[i]
            targets.append(
                f'permit(principal, action, resource in Operation::"{op}") '
                f'when {{ context has target && context.target like "team-{i}/*" }};'
            )
    files = {
        "10-permits.cedar": "\n\n".join(permits) + "\n",
        "20-holds.cedar": "\n\n".join(holds) + "\n",
        "30-forbids.cedar": "\n\n".join(forbids) + "\n",
        "40-targets.cedar": "\n\n".join(targets) + "\n",
    }
    count = sum(len(x) for x in (permits, holds, forbids, targets))
    assert count == 60, count
    return files


def calls(n: int, seed: int = 7) -> list[PolicyCall]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        op_id, effect = rng.choice(OPS)
        vendor, resource, name = op_id.split(".")
        payload = {
            "amount": rng.choice([5, 50, 150, 900, 2500, 15000, 12.5]),
            "channel": f"public-{rng.randrange(20)}",
            "count": rng.randrange(30),
            "tags": rng.sample(["risky-0", "risky-1", "risky-2", "risky-3", "ok", "new"], 2),
            "country": rng.choice(["fi", "se", "kp", "us"]),
            "blocked": rng.random() < 0.1,
            "note": None,
            "customer": {"id": rng.randrange(1000), "tier": rng.choice(["gold", "silver"])},
        }
        payload = {k: v for k, v in payload.items() if rng.random() < 0.7}
        approvals = tuple(
            ApprovalView(f"approval-{j + 1}", "approved",
                         rng.choice(PEOPLE + [f"group:{g}" for g in GROUPS]),
                         (op_id,) if rng.random() < 0.7 else ())
            for j in range(rng.randrange(4))
        )
        out.append(PolicyCall(
            op={"id": op_id, "vendor": vendor, "resource": resource, "name": name, "effect": effect},
            effect=effect,
            target=rng.choice([None, None, f"order/{rng.randrange(10)}", f"team-{rng.randrange(8)}/x"]),
            input=payload,
            actor=rng.choice(PEOPLE),
            groups=tuple(rng.sample(GROUPS, rng.randrange(0, 3))),
            run=RunInfo(f"run-{i}", f"wf-{rng.randrange(5)}", approvals),
        ))
    return out


class ReparsingPolicy(CedarPolicy):
    """The same decisions, but the policy text is handed to Cedar (and parsed) on every call
    (timed through `evaluate`, so nothing is kept)."""

    def _evaluate(
        self, request: dict[str, Any], entities: list[dict[str, Any]], removed: frozenset[str]
    ) -> Evaluation:
        kept = [r for r in self.rules if r.id not in removed]
        result = cedarpy.is_authorized(request, "\n".join(r.source for r in kept), entities)
        ids = {f"policy{i}": r.id for i, r in enumerate(kept)}
        errors = []
        for text in result.diagnostics.errors:
            m = _ERROR_POLICY.search(text)
            errors.append((ids.get(m.group(1), m.group(1)), m.group(2)) if m else ("", text))
        return Evaluation(result.allowed, tuple(ids[p] for p in result.diagnostics.reasons), tuple(errors))


COMPANY = ROOT / "company" / "policies"
# (op id, effect, workflow, input): what the example company's workflows ask, with varied inputs.
COMPANY_CALLS = [
    ("shop.order.get", "read", "refund", lambda r: {"order": f"{1000 + r.randrange(500)}"}),
    ("shop.order.refund", "money", "refund", lambda r: {"order": f"{1000 + r.randrange(500)}",
                                                        "amount": r.choice([5, 12.5, 80, 450])}),
    ("data.notes.put", "write", "refund", lambda r: {"key": f"n{r.randrange(10_000)}", "text": "refunded"}),
    ("shop.refund.list", "read", "refunds_report", lambda r: {"since": "2026-01-01"}),
    ("shop.shipment.book", "write", "ship", lambda r: {"order": f"{1000 + r.randrange(500)}", "carrier": "dhl"}),
    ("shop.shipment.find", "read", "await_shipment", lambda r: {"order": f"{1000 + r.randrange(500)}"}),
    ("shop.customer.notify", "send", "follow_up", lambda r: {"to": f"c{r.randrange(900)}@example.com"}),
    ("shop.product.price", "publish", "reprice", lambda r: {"sku": r.choice(["mug", "tee", "cap"]),
                                                             "cents": r.randrange(500, 5000)}),
    ("sanoma.change.merge", "write", "change", lambda r: {"change": r.randrange(100)}),
]
STAFF = [("ada", ("staff",)), ("ben", ("staff", "finance")), ("cy", ("staff", "security")), ("dee", ())]


def company_calls(runs: int, seed: int = 11) -> list[PolicyCall]:
    """Each run asks its workflow's calls in turn, as one staff member, with its own id and inputs."""
    rng = random.Random(seed)
    out = []
    for i in range(runs):
        op_id, effect, workflow, make_input = rng.choice(COMPANY_CALLS)
        actor, groups = rng.choice(STAFF)
        vendor, resource, name = op_id.split(".")
        for _ in range(rng.randrange(1, 6)):
            out.append(PolicyCall(
                op={"id": op_id, "vendor": vendor, "resource": resource, "name": name, "effect": effect},
                effect=effect, target=None, input=make_input(rng), actor=actor, groups=groups,
                run=RunInfo(f"run-{i}", workflow, ()),
            ))
    return out


def timed(decide: Any, work: list[PolicyCall]) -> tuple[list[float], dict[str, int]]:
    times: list[float] = []
    kinds: dict[str, int] = {}
    for call in work:
        start = time.perf_counter_ns()
        decision = decide(call)
        times.append((time.perf_counter_ns() - start) / 1000)
        kinds[decision.kind] = kinds.get(decision.kind, 0) + 1
    return times, kinds


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def row(label: str, values: list[float]) -> str:
    return f"{label:<40}{pct(values, 50):>10.1f}{pct(values, 95):>10.1f}{pct(values, 99):>10.1f}{max(values):>10.1f}"


HEADER = f"{'path':<40}{'p50 us':>10}{'p95 us':>10}{'p99 us':>10}{'max us':>10}"


def company(runs: int) -> tuple[float, bool]:
    """The example company's policies: the p95 of `decide()`, and whether it agrees with Cedar."""
    policy = load_cedar_policy(COMPANY)
    if policy is None:
        raise SystemExit(f"no Cedar policy in {COMPANY}")
    work = company_calls(runs)
    kept, kinds = timed(policy.decide, work)
    evaluated, _ = timed(policy.evaluate, work)
    agree = all(policy.decide(c) == policy.evaluate(c) for c in work[:500])
    decisions = policy.decisions
    print(f"\n1. the example company's policies: {len(policy.rules)} rules, {len(work)} calls of {runs} runs "
          f"(version {policy.version})")
    print(f"decisions: {', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}; kept {len(decisions)}, "
          f"found kept {decisions.hits} of {decisions.hits + decisions.misses}; agrees with Cedar: {agree}")
    print(HEADER)
    print(row("decide (decisions kept per version)", kept))
    print(row("evaluate (Cedar every call)", evaluated))
    return pct(kept, 95), agree


def varied(n: int) -> tuple[float, bool]:
    """The 60-rule set over varied calls: the p95 of Cedar's evaluation, and whether the paths agree."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "policies"
        directory.mkdir()
        for name, text in policy_files().items():
            (directory / name).write_text(text)
        t0 = time.perf_counter()
        policy = load_cedar_policy(directory)
        if policy is None:
            raise SystemExit(f"no Cedar policy loaded from {directory}")
        load_ms = (time.perf_counter() - t0) * 1000
        naive = ReparsingPolicy(list(policy.rules), version=policy.version)

    work = calls(n)
    timed(policy.evaluate, work[:200])  # warm up both paths (first-call setup, lifted-set cache)
    timed(naive.evaluate, work[:200])
    fast, kinds = timed(policy.evaluate, work)
    kept, _ = timed(policy.decide, work)
    slow, slow_kinds = timed(naive.evaluate, work)
    agree = all(policy.decide(c) == policy.evaluate(c) == naive.evaluate(c) for c in work[:500])
    decisions = policy.decisions
    print(f"\n2. a 60-rule set: {len(policy.rules)} rules in 4 files, {len(work)} varied calls "
          f"(loaded in {load_ms:.1f} ms, version {policy.version})")
    print(f"decisions: {', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}"
          f"{'' if slow_kinds == kinds else '  (re-parse path differs!)'}; found kept {decisions.hits} of "
          f"{decisions.hits + decisions.misses}; paths agree: {agree}")
    print(HEADER)
    for label, values in (("decide (decisions kept per version)", kept), ("evaluate (pre-parsed set)", fast),
                          ("re-parse text every call", slow)):
        print(row(label, values))
    print(f"pre-parsed over re-parsed, at p50: {pct(slow, 50) / pct(fast, 50):.1f}x")
    return pct(fast, 95), agree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4000, help="varied calls of the 60-rule set")
    parser.add_argument("--runs", type=int, default=2000, help="runs of the example company")
    args = parser.parse_args()
    company_p95, company_agree = company(args.runs)
    varied_p95, varied_agree = varied(args.calls)
    print()
    aims = [("the example company's decision p95 < 100 us", company_p95 < 100, company_p95),
            ("a 60-rule evaluation p95 < 1000 us", varied_p95 < 1000, varied_p95)]
    for aim, met, value in aims:
        print(f"aim: {aim:<46} {'MET' if met else 'MISSED':<7} {value:.1f} us")
    return 0 if all(met for _, met, _ in aims) and company_agree and varied_agree else 1


if __name__ == "__main__":
    sys.exit(main())
