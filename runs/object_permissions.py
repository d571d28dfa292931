"""Direct foreign-key object permissions (django-guardian) on runs, approvals and workflows: indexed joins
instead of generic keys. Imported by `runs.models`, so Django registers them with the app."""
from __future__ import annotations

from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from runs.models import Approval, Run, WorkflowEntry


class RunUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Run, on_delete=models.CASCADE)


class RunGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Run, on_delete=models.CASCADE)


class ApprovalUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Approval, on_delete=models.CASCADE)


class ApprovalGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Approval, on_delete=models.CASCADE)


class WorkflowEntryUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(WorkflowEntry, on_delete=models.CASCADE)


class WorkflowEntryGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(WorkflowEntry, on_delete=models.CASCADE)
