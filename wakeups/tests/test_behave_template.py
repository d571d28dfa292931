"""`manage.py behave` clones its test database from a template keyed by the migrations: a migration
edited or added gives another key, so a template made before it is never used."""
from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

import wakeups
from runs.management.commands.behave import _migrations_key


@pytest.fixture
def migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of wakeups' migrations as a package of its own, standing in for them."""
    package = tmp_path / "template_key_migrations"
    shutil.copytree(Path(wakeups.__file__).parent / "migrations", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [m for m in sys.modules if m.startswith("template_key_migrations")]:
        del sys.modules[name]


def test_the_key_changes_with_a_migration_edited_or_added(migrations: Path) -> None:
    with override_settings(MIGRATION_MODULES={"wakeups": "template_key_migrations"}):
        before = _migrations_key("sqlite", "")
        assert _migrations_key("sqlite", "") == before  # the same files: the same template
        first = sorted(migrations.glob("0*.py"))[0]
        first.write_text(first.read_text() + "\n# edited\n")
        edited = _migrations_key("sqlite", "")
        (migrations / "9999_added.py").write_text(
            "from django.db import migrations\n\n\nclass Migration(migrations.Migration):\n"
            f"    dependencies = [(\"wakeups\", \"{sorted(migrations.glob('0*.py'))[-1].stem}\")]\n"
            "    operations = []\n")
        added = _migrations_key("sqlite", "")
    assert len({before, edited, added}) == 3
    assert _migrations_key("sqlite", "") != added  # the real migrations again


def test_the_key_is_the_engines_and_the_owners() -> None:
    assert len({_migrations_key("sqlite", ""), _migrations_key("postgresql", "postgres"),
                _migrations_key("postgresql", "sanoma")}) == 3
