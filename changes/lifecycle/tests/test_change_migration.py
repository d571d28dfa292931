"""A database made before the life of a change was an app of its own migrates forward with its
change rows and its permissions: the table is the same, and the content type follows the model to
`lifecycle`."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from changes.lifecycle.models import ChangeRun
from changes.tests.migrating import as_owner, leaves, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("changes", "0004_resources_page_name"), ("lifecycle", None)]


def test_an_old_database_keeps_its_changes_and_their_permissions():
    # Migrating, and the old rows, as the tables' owner (on PostgreSQL the tests run as the runtime).
    with as_owner():
        old = migrate(BEFORE)
        OldContentType = old.get_model("contenttypes", "ContentType")
        OldPermission = old.get_model("auth", "Permission")
        OldContentType.objects.filter(app_label="lifecycle").delete()
        change_type, _ = OldContentType.objects.get_or_create(app_label="changes", model="changerun")
        view, _ = OldPermission.objects.get_or_create(content_type=change_type, codename="view_changerun",
                                                      defaults={"name": "Can view change"})
        reader = old.get_model("auth", "User").objects.create(username="reader", is_staff=True)
        reader.user_permissions.add(view)
        now = timezone.now()
        old.get_model("changes", "ChangeRun").objects.create(
            run_id="change-1", repo_url="/srv/repo.git", branch="price", title="A new price", opened_by="ada",
            opened_at=now, change_code="c0de", state="merged", updated_at=now)

        migrate(leaves())
    ContentType.objects.clear_cache()

    assert list(ChangeRun.objects.values_list("run_id", "branch", "state")) == [("change-1", "price", "merged")]
    moved = ContentType.objects.get_for_model(ChangeRun)
    assert (moved.pk, moved.app_label) == (change_type.pk, "lifecycle")
    assert not ContentType.objects.filter(app_label="changes", model="changerun").exists()
    reader = get_user_model().objects.get(username="reader")
    assert reader.has_perm("lifecycle.view_changerun")
