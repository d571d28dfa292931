"""What an approval's announcement says: what is asked, who must decide, the money at risk, and
where to decide it (Slack's mrkdwn: `*bold*`, `<url|label>`)."""
from __future__ import annotations

from typing import Any

from django.urls import reverse

from runs.approvals.approver import Approver


def desk_link(approval: Any, desk: str) -> str:
    """The approval's page in the desk under `desk`, the desk's address (`slack_channel(desk=...)`, else
    SANOMA_SITE_URL): absolute, so Slack makes it a link. The system check sanoma.E013 keeps a config
    from announcing without one; an empty `desk` is only a config loaded past the checks."""
    return desk + reverse("admin:runs_approval_change", args=[approval.pk])


def _escaped(text: str) -> str:
    """Text as Slack shows it literally (its three control characters escaped)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def announcement_text(approval: Any, *, summary: str, money: str, desk: str) -> str:
    run = approval.run
    lines = [f"*{_escaped(approval.title)}*: run {_escaped(run.id)} of {_escaped(run.workflow)}, "
             f"started by {_escaped(run.started_by or 'nobody')}"]
    if summary:
        lines.append(f"Asked: {_escaped(summary)}")
    elif approval.op:
        lines.append(f"Asked: {_escaped(approval.op)}")
    lines.append(f"Who decides: {_escaped(Approver.parse(approval.approver).shown)}")
    if money:
        lines.append(f"Money at risk: {_escaped(money)}")
    lines.append(f"<{desk_link(approval, desk)}|Decide in the desk>")
    return "\n".join(lines)
