from pydantic import BaseModel, Field

from company.vendors.shop import shop
from connectors.vendors.bluesky import bluesky
from connectors.vendors.ghost import ghost
from connectors.vendors.github import github
from connectors.vendors.resend import resend
from connectors.vendors.slack import slack, slack_channel
from connectors.vendors.stripe import stripe
from runs.authoring import SPEND_STEPS, SanomaConfig, define_collection, wakeup


class CustomerNote(BaseModel):
    """What the company remembers about an order it dealt with: one note per order."""

    order_id: str = Field(min_length=1)
    customer: str
    text: str
    refund_id: str = ""
    refunded_cents: int = 0


# The company's own records, on its database: `ctx.data.notes.get/list/put/delete`, keyed by order.
notes = define_collection("notes", record=CustomerNote, key="order_id", title="Customer notes, one per order")

# Each approval asked is announced in Slack's #approvals, with a link to decide it in the desk.
# SPEND_STEPS: the scenario steps of the refund budget (scenarios/budget.feature).
# GitHub: the company's organization (GITHUB_ORG, `acme` on the fake) and its teams, where engineers
# are onboarded (workflows/onboard_engineer.py); its real driver reads GITHUB_TOKEN and GITHUB_ORG.
config = SanomaConfig(app_name="acme", connectors=[shop, stripe, ghost, bluesky, resend, slack, github],
                      collections=[notes],
                      announce_approvals=slack_channel("#approvals"), steps=SPEND_STEPS)

# What starts the worker again after it stops itself when idle (`manage.py worker --stop-when-idle`):
# the built-in wakeup, served by `manage.py supervise` (or a systemd timer: `manage.py wakeup systemd`).
wakeups = [wakeup(host="supervisor")]
