"""The codes a change's remote, its checks and its webhooks put on an error (registered with
`connectors.errors`'s list on import)."""
from __future__ import annotations

from enum import StrEnum

from connectors.errors import register_codes


@register_codes
class RemoteCode(StrEnum):
    """The repository's remote, a change's checks and the remote's webhooks."""

    BRANCH_NOT_FOUND = "branch_not_found"  # the remote has no such branch (or pull request)
    MERGE_CONFLICT = "merge_conflict"  # the branch does not merge cleanly: data.files names the files
    HEAD_CHANGED = "head_changed"  # the branch moved since its checks: nothing was merged
    NOT_MERGEABLE = "not_mergeable"  # the remote refuses the merge (closed, required reviews or checks)
    CHECKS_FAILED = "checks_failed"  # a change's checks failed on its head
    WEBHOOK_NOT_CONFIGURED = "webhook_not_configured"  # a webhook came, and the site has no secret to check it
    BAD_SIGNATURE = "bad_signature"  # a webhook's signature does not match its body and the site's secret
