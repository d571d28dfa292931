"""How far a change got (its row's `state`), apart from the model so the app's setup can name them."""
from __future__ import annotations

from django.db import models


class ChangeState(models.TextChoices):
    OPENED = "opened", "opened"
    CHECKING = "checking", "checking"
    CHECKS_FAILED = "checks_failed", "checks failed"
    CHECKS_PASSED = "checks_passed", "checks passed"
    MERGED = "merged", "merged"
    DEPLOYED = "deployed", "deployed"


__all__ = ["ChangeState"]
