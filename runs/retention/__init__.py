"""Retention: ended runs older than their workflow's `keep` (or the site's default) are exported to
JSON Lines files, one a day, and removed from the database in small batches.

A run's ledger records form one hash chain (`runs.ledger`), so a run is removed whole: its chain
leaves the live table entirely and the live chains left all still start at #0. The export holds the
run, its steps, approvals, messages, tags and every ledger record with its chain fields, then a
`head` line with the chain's length and last hash; `runs_prunedrun` keeps the same head for each
removed run. The ledger's delete refusal (triggers on both databases) lets through only the records
of a run whose head is recorded there, and the head is recorded only after the export was written,
read back and verified. `manage.py ledger verify --export FILE` checks an export offline.
"""
