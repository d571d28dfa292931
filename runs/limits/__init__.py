"""Rate and concurrency limits across every worker, through the database (`connectors.limits` declares them).

- `models`: the rate cursors, the concurrency slots, the reserved slots of waiting calls, and the
  operators' overrides;
- `services`: reserving a call's time, taking and giving back a slot, a vendor's `Retry-After`
  pushing a limit, and changing a limit at run time (`set_override`, `reset`);
- `selectors`: the limits in force (declared, overridden) and their current use;
- `gate`: what a call does before its driver is invoked: waits a moment in place, or suspends the run.
"""

# What a run waiting for a limit shows (`waiting_for`): "rate limit of stripe", "concurrency limit of
# stripe.refund.create for account acct_1"; the runs list's `waiting_for=limit` finds both kinds.
RATE_WAIT = "rate limit of"
SLOT_WAIT = "concurrency limit of"
