"""The fakes a sandbox run calls, and where their books live between advances.

Every fake is made fresh by its connector's own maker over a state file in a folder of this
advance's own, the file written from the run's books first (`SandboxFakes.load`), and read back
into them as each step is written (`save`): the books travel with the run's row, so a run that
suspends on one worker resumes on another with its fakes as it left them. The `data` vendor (the
company's collections) is a fake too: a sandbox run never writes the company's real records.

A connector with no fake gets a driver that refuses every call, naming the operation: a sandbox run
never falls back to a real driver.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from connectors.drivers import CallContext, Driver
from connectors.errors import ErrorCode, SanomaError
from runs.collections.definition import DATA_VENDOR
from runs.collections.fake import data_fake
from runs.config.resolution import ResolvedConfig

# The error code of a call a sandbox run cannot make (its vendor has no fake): as for an
# operation with no driver at all, since in a sandbox a fake is the only driver there is.
NO_FAKE = ErrorCode.NO_DRIVER


def base_config(config: ResolvedConfig) -> ResolvedConfig:
    """The config a sandbox's was made from (itself, for any other): what reads it once and keeps
    what it read (its scenarios, its step library) reads that one."""
    return getattr(config, "sandbox_base", config)


def no_fake_driver(vendor: str, op_ids: list[str]) -> Driver:
    """A driver for a vendor with no fake: every call is refused (never retried), naming it."""

    def refuse(op_id: str) -> Any:
        def call(payload: BaseModel, context: CallContext) -> Any:
            raise SanomaError(
                f"{op_id} cannot be called in a sandbox run: vendor {vendor} has no fake, and a sandbox run "
                "never calls a real driver. Give the connector a fake (with_setup(connector, fake=...))",
                code=NO_FAKE, data={"op": op_id, "vendor": vendor})

        call.__name__ = f"sandbox_refuses_{op_id.replace('.', '_').replace('-', '_')}"
        return call

    return Driver(vendor=vendor, functions={op_id: refuse(op_id) for op_id in op_ids})


class SandboxFakes:
    """One set of fakes over one folder: made from books, read back into books."""

    def __init__(self, config: ResolvedConfig, books: Mapping[str, Any] | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sanoma-sandbox-"))
        self.fakes: dict[str, Any] = {}
        self.missing: dict[str, list[str]] = {}
        self._written: dict[str, str] = {}
        books = books or {}
        for connector in config.connectors:
            vendor = connector.vendor
            path = self.folder / f"{vendor}.json"
            if vendor in books:
                text = json.dumps(books[vendor], separators=(",", ":"))
                path.write_text(text, encoding="utf-8")
                self._written[vendor] = text
            if vendor == DATA_VENDOR:
                self.fakes[vendor] = data_fake(connector, list(config.collections.values()), path)
            elif connector.fake is not None:
                self.fakes[vendor] = connector.fake(path)
            else:
                self.missing[vendor] = sorted(connector.operations)
        # Operations of vendors the extensions add (the declared state's, ...) that have no connector fake here.
        vendors = {op.vendor for op in config.ops.values()}
        for vendor in sorted(vendors - set(self.fakes) - set(self.missing)):
            self.missing[vendor] = sorted(op_id for op_id, op in config.ops.items() if op.vendor == vendor)

    def drivers(self) -> dict[str, Driver]:
        """Every operation's driver: its vendor's fake, or the refusal."""
        out: dict[str, Driver] = {}
        for fake in self.fakes.values():
            for op_id in fake.driver.functions:
                out[op_id] = fake.driver
        for vendor, op_ids in self.missing.items():
            refusing = no_fake_driver(vendor, op_ids)
            for op_id in op_ids:
                out[op_id] = refusing
        return out

    def config(self, config: ResolvedConfig) -> ResolvedConfig:
        """`config` with these fakes for drivers (and as its fakes), nothing else changed."""
        made = dataclasses.replace(config, drivers=self.drivers(), fakes=dict(self.fakes))
        extended_by = getattr(config, "extended_by", None)
        if extended_by is not None:
            made.extended_by = extended_by  # type: ignore[attr-defined]
        made.sandbox_base = base_config(config)  # type: ignore[attr-defined]  # what it was made from
        return made

    def books(self) -> dict[str, Any]:
        """Each fake's book as its file holds it now (a fake never called has none yet)."""
        out: dict[str, Any] = {}
        for vendor in self.fakes:
            path = self.folder / f"{vendor}.json"
            if path.is_file():
                out[vendor] = json.loads(path.read_text(encoding="utf-8"))
        return out

    def changed(self) -> tuple[dict[str, str], dict[str, Any]] | None:
        """The files' texts and the books, when any file differs from what was loaded or last
        saved (`saved`); else None."""
        texts = {}
        for vendor in self.fakes:
            path = self.folder / f"{vendor}.json"
            if path.is_file():
                texts[vendor] = path.read_text(encoding="utf-8")
        if texts == self._written:
            return None
        return texts, {vendor: json.loads(text) for vendor, text in texts.items()}

    def saved(self, texts: dict[str, str]) -> None:
        """These texts are in the run's row now (their transaction committed)."""
        self._written = texts

    def calls_seen(self) -> dict[str, int]:
        return {vendor: len(fake.calls) for vendor, fake in self.fakes.items()}

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
