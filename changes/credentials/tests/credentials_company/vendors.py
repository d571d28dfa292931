"""Two connectors with declared environments and drivers that report what they were given."""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from connectors import CallContext, define_connector, define_driver, op, with_setup
from connectors.fakes import define_fake


class VaultEnvironment(BaseModel):
    VAULT_URL: str = Field(description="the vault's API base URL")
    VAULT_TOKEN: str = Field(min_length=8, description="a vault token with read scope")
    VAULT_REGION: str = Field(default="eu", description="the vault's region")
    VAULT_FLAKY: str | None = Field(default=None, description="a setting whose check may throw")

    @field_validator("VAULT_URL")
    @classmethod
    def _https(cls, value: str) -> str:
        if not value.startswith("https://"):
            raise ValueError(f"must be an https:// URL, not {value}")  # a careless check: repeats the value
        return value

    @field_validator("VAULT_FLAKY")
    @classmethod
    def _flaky(cls, value: str | None) -> str | None:
        if value == "boom":
            raise RuntimeError("the check itself broke")
        return value


class MailerEnvironment(BaseModel):
    MAILER_KEY: str = Field(description="the mailer's API key")


class Nothing(BaseModel):
    pass


class Seen(BaseModel):
    names: list[str]
    digest: str  # of every value given, in name order: tells values apart without holding one


def seen(secrets: Mapping[str, str]) -> dict:
    joined = "\x00".join(f"{k}={secrets[k]}" for k in sorted(secrets))
    return {"names": sorted(secrets), "digest": hashlib.sha256(joined.encode()).hexdigest()[:16]}


vault = define_connector(
    "vault",
    {"secret": {"peek": op(effect="read", input=Nothing, output=Seen, idempotent=True,
                           description="What the driver was given")}},
    environment=VaultEnvironment,
)
mailer = define_connector(
    "mailer",
    {"mail": {"peek": op(effect="read", input=Nothing, output=Seen, idempotent=True,
                         description="What the driver was given")}},
    environment=MailerEnvironment,
)


def _peek(i: Nothing, c: CallContext) -> dict:
    return seen(c.secrets)


def _fake_peek(state: dict, i: Nothing, c: CallContext) -> dict:
    return {"names": ["(fake)"], "digest": ""}


def vault_driver():
    return define_driver(vault, {"secret": {"peek": _peek}})


def vault_fake(file: Path | None = None):
    return define_fake(vault, initial=dict, ops={"secret": {"peek": _fake_peek}}, file=file)


def mailer_driver():
    return define_driver(mailer, {"mail": {"peek": _peek}})


def mailer_fake(file: Path | None = None):
    return define_fake(mailer, initial=dict, ops={"mail": {"peek": _fake_peek}}, file=file)


vault = with_setup(vault, driver=vault_driver, fake=vault_fake)
mailer = with_setup(mailer, driver=mailer_driver, fake=mailer_fake)
