"""Spend limits: money calls counted toward the sums a policy reads before each money call.

`models` (the spend table and the currency lock), `sums` (what was spent, as `context.spent`),
`services` (the lock, the reservation, the settlement from the ledger), `risk` (the money at risk
in a held call, as the desk shows it), `ledger_check` (the table against the ledger).
"""
