"""The error codes' one registry, whole once every app is ready: each domain declares its codes beside
the code that raises them, and each code is declared once."""
from __future__ import annotations

from changes.credentials.api import STATUS_OF_CODE as CREDENTIALS_STATUS
from changes.credentials.errors import CredentialCode
from changes.errors import StateCode
from changes.lifecycle.errors import RemoteCode
from connectors.errors import KNOWN_CODES, ErrorCode, all_codes, code_domains
from runs.api.base import STATUS_OF_CODE
from runs.errors import RunCode


def test_each_code_is_declared_once_by_the_domain_that_raises_it():
    assert set(code_domains()) == {ErrorCode, RunCode, RemoteCode, CredentialCode, StateCode}
    values = [member.value for enum in code_domains() for member in enum]
    assert len(values) == len(set(values)) == len(all_codes()) == 42
    assert set(KNOWN_CODES) == set(values)
    assert all_codes()["merge_conflict"] is RemoteCode.MERGE_CONFLICT


def test_every_code_the_api_answers_with_a_status_is_registered():
    assert set(STATUS_OF_CODE) | set(CREDENTIALS_STATUS) <= set(all_codes())
