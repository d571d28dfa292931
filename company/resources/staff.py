"""The company's people and groups (they become Django users and groups): who runs the shop, who
signs off refunds (finance-lead, as policies/shop.cedar names), who approves access (security)."""
from runs.authoring import group, person

staff = group(name="staff")
finance = group(name="finance")
security = group(name="security")
"""Approves staff access in the shop (policies/shop.cedar: access-needs-security)."""
support = group(name="support")
"""Own the company's repo: a change is merged only once one of them approves (policies/changes.cedar)."""
owners = group(name="owners")

alice = person(username="alice", email="alice@acme.example", name="Alice Lind", groups=[staff])
finance_lead = person(username="finance-lead", email="finance-lead@acme.example", name="Fiona Berg",
                      groups=[staff, finance])
sam = person(username="sam", email="sam@acme.example", name="Sam Aalto", groups=[staff, security, owners])
support_lead = person(username="support-lead", email="support-lead@acme.example", name="Sanna Koski",
                      groups=[staff, support])
