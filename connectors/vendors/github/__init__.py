"""GitHub: an organization's repositories, their branch protections and its teams' memberships, as
resource types a company declares in its `resources/` files.

Its connector (`connector.py`), resource types (`resources.py`), the models of its other
operations (`models.py`), its driver (`driver.py`, over the GitHub client `api.py` the change
workflow's GitHub remote uses too) and its fake (`fake.py`, the driver against GitHub emulated by
`emulator.py`). A company uses it by listing `github` in its `sanoma_config.py`.
"""
from __future__ import annotations

from connectors.operations import with_setup
from connectors.vendors.github.connector import LOGO, GitHubEnvironment, github
from connectors.vendors.github.driver import make_driver
from connectors.vendors.github.fake import make_fake
from connectors.vendors.github.resources import (
    BranchProtectionFields,
    RepositoryFields,
    TeamMembershipFields,
    branch_protection,
    repository,
    team_membership,
)

# The halves attach to `github` itself: every module importing it sees them.
with_setup(github, driver=make_driver, fake=make_fake)

__all__ = [
    "LOGO",
    "BranchProtectionFields",
    "GitHubEnvironment",
    "RepositoryFields",
    "TeamMembershipFields",
    "branch_protection",
    "github",
    "make_driver",
    "make_fake",
    "repository",
    "team_membership",
]
