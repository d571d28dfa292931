"""What other apps show with an approval: a link in its inbox row and on its page, and a section of
its page. An app that starts runs of its own (the changes' `change` workflow, whose merge a policy
holds) names a provider in its extension's `approval_extras` (`runs.extensions`); the runs layer
never imports it.

A provider is called with the approval and `full`: False for an inbox row, where it must not read
the database (the inbox costs the same queries for 5 rows and for 50), True for the approval's own
page, where it may read what it needs. It answers None when the approval is not its own.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runs.extensions import providing

if TYPE_CHECKING:  # loaded with the app registry's setup (an app's `ready` registers), before the models
    from runs.models import Approval


@dataclass(frozen=True)
class Extra:
    """What a provider adds: a link (text, URL), and for the page a template included with `context`."""

    link: tuple[str, str] | None = None
    template: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)


Provider = Callable[["Approval", bool], "Extra | None"]

def extras_of(approval: Approval, *, full: bool) -> list[Extra]:
    """What every extension's provider adds to this approval, in the order they were installed."""
    found: list[Extra] = []
    for _, provider in providing("approval_extras"):
        extra = provider(approval, full)
        if extra is not None:
            found.append(extra)
    return found


__all__ = ["Extra", "Provider", "extras_of"]
