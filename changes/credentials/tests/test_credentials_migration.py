"""A database made before credentials were an app of their own migrates forward with its rows and
its permissions: the tables are the same, and the content types follow the models to `credentials`."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from changes.credentials.models import Credential, CredentialChange
from changes.tests.migrating import as_owner, leaves, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("changes", "0004_resources_page_name"), ("credentials", None)]


def test_an_old_database_keeps_its_credentials_and_their_permissions():
    # Migrating, and the old rows, as the tables' owner (on PostgreSQL the tests run as the runtime).
    with as_owner():
        old = migrate(BEFORE)
        # The database as it was: the models under `changes`, their content types and permissions too.
        OldContentType = old.get_model("contenttypes", "ContentType")
        OldPermission = old.get_model("auth", "Permission")
        OldContentType.objects.filter(app_label="credentials").delete()
        credential_type, _ = OldContentType.objects.get_or_create(app_label="changes", model="credential")
        OldContentType.objects.get_or_create(app_label="changes", model="credentialchange")
        manage, _ = OldPermission.objects.get_or_create(content_type=credential_type, codename="manage_credentials",
                                                        defaults={"name": "Can set and clear connectors' credentials"})
        view, _ = OldPermission.objects.get_or_create(content_type=credential_type, codename="view_credential",
                                                      defaults={"name": "Can view credential"})
        keeper = old.get_model("auth", "User").objects.create(username="keeper", is_staff=True)
        keeper.user_permissions.add(manage)
        auditors = old.get_model("auth", "Group").objects.create(name="auditors")
        auditors.permissions.add(view)
        old.get_model("changes", "Credential").objects.create(
            name="VAULT_TOKEN", ciphertext="gAAAA-not-a-value", key_id="k1", updated_at=timezone.now(),
            updated_by="ada")
        old.get_model("changes", "CredentialChange").objects.create(name="VAULT_TOKEN", action="set", by="ada",
                                                                    at=timezone.now())

        migrate(leaves())
    ContentType.objects.clear_cache()

    assert Credential.objects.get().name == "VAULT_TOKEN"
    assert Credential.objects.get().ciphertext == "gAAAA-not-a-value"
    assert list(CredentialChange.objects.values_list("name", "action", "by")) == [("VAULT_TOKEN", "set", "ada")]
    moved = ContentType.objects.get_for_model(Credential)
    assert (moved.pk, moved.app_label) == (credential_type.pk, "credentials")
    assert ContentType.objects.get_for_model(CredentialChange).app_label == "credentials"
    assert not ContentType.objects.filter(app_label="changes", model__startswith="credential").exists()
    keeper = get_user_model().objects.get(username="keeper")
    assert keeper.has_perm("credentials.manage_credentials")
    assert not keeper.has_perm("changes.manage_credentials")
    assert list(Group.objects.get(name="auditors").permissions.values_list(
        "content_type__app_label", "codename")) == [("credentials", "view_credential")]
