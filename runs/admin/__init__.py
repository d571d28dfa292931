"""The operator's desk: runs, the approvals inbox, the ledger, starting a run, start permissions.

Every view reads through the selectors and acts through the services (`runs.services`,
`runs.approvals.services`, `runs.approvals.permissions`), so the admin enforces what the API and the commands enforce:
a user who is not an operator sees only the runs they started or were asked to approve.

One module per job; importing them registers their admins with the site (Django's autodiscovery
imports this package):

- `base`: what every app's pages share (`me`, run links, refusals, `ReadOnlyMixin`);
- `common`: JSON display, for the runs pages;
- `runs`: the run list and page (steps, approvals, ledger timeline), cancelling;
- `run_filters`: the run list's filters and search by what a run waits for and by tag;
- `start`: the start-a-run form, built from the workflow's input JSON Schema, and its view;
- `approvals`: the approvals inbox and the decide / withdraw page;
- `ledger`: the append-only ledger records;
- `workflows`: the workflows whose object permissions grant who may start them;
- `versions`: the deploy versions, live, pinned-only or retired, and the runs each holds;
- `collections`: the company's collections and their records, read-only;
- `pauses`: pausing and unpausing connectors, operations and workflows, and the runs each holds;
- `pruned`: the runs retention exported and removed, where a link to one of them leads.
- `runs.limits.admin`: the rate and concurrency limits in force, and operators' changes of them.
"""
# Importing a module registers its admins; this order (runs first) is the site's registry order.
# isort: off
from runs.admin import runs  # noqa: F401
from runs.admin import approvals  # noqa: F401
from runs.admin import ledger  # noqa: F401
from runs.admin import workflows  # noqa: F401
from runs.admin import versions  # noqa: F401
from runs.admin import collections  # noqa: F401
from runs.admin import pauses  # noqa: F401
from runs.admin import pruned  # noqa: F401
from runs.approvals import announce_admin  # noqa: F401
from runs.limits import admin as limits_admin  # noqa: F401
# isort: on
