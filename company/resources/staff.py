"""The company's people and groups (they become Django users and groups): who runs the shop, who
signs off refunds (finance-lead, as policies/shop.cedar names), who approves access (security),
who operates the runs (operators) and who only looks (viewers). A group carries what its members
may do on the desk: a role (`starter`, `viewer`, `operator`) or permissions (`app_label.codename`).
Everyone here is `staff=True`: they may sign in to the desk."""
from runs.authoring import group, person

staff = group(name="staff", permissions=["starter", "runs.view_run", "runs.view_step", "runs.view_approval",
                                         "runs.view_ledgerrecord", "runs.view_workflowentry"])
"""Start workflows (policies/shop.cedar: staff-may-act lets their runs act) and see the desk's lists."""
finance = group(name="finance")
security = group(name="security")
"""Approves staff access in the shop (policies/shop.cedar: access-needs-security)."""
support = group(name="support")
owners = group(name="owners")
"""Own the company's repo: a change is merged only once one of them approves (policies/changes.cedar)."""
operators = group(name="operators", permissions=["operator", "credentials.manage_credentials", "credentials.view_credential"])  # noqa: E501
"""See every run; cancel, rerun, fork, pause, settle calls in doubt; set the connectors' credentials;
apply the data files (policies/shop.cedar: operators-apply)."""
viewers = group(name="viewers", permissions=["viewer"])
"""See every run on the desk and nothing more: they start nothing and decide nothing."""

admin = person(username="admin", email="admin@acme.example", name="Ada Admin", groups=[operators], staff=True)
"""The site's superuser (the demo makes `admin` one), an operator: the policy lets them apply."""
alice = person(username="alice", email="alice@acme.example", name="Alice Lind", groups=[staff], staff=True)
"""Starts refunds and the other workflows."""
finance_lead = person(username="finance-lead", email="finance-lead@acme.example", name="Fiona Berg",
                      groups=[staff, finance], staff=True)
"""Approves refunds (policies/shop.cedar holds money for them)."""
sam = person(username="sam", email="sam@acme.example", name="Sam Aalto", groups=[staff, security, owners],
             staff=True)
support_lead = person(username="support-lead", email="support-lead@acme.example", name="Sanna Koski",
                      groups=[staff, support], staff=True)
ops = person(username="ops", email="ops@acme.example", name="Otto Salo", groups=[staff, operators], staff=True)
"""Operates the runs: `manage.py ... --as ops`, and the desk's run pages."""
vera = person(username="vera", email="vera@acme.example", name="Vera Niemi", groups=[viewers], staff=True)
"""Sees every run on the desk, changes nothing."""
