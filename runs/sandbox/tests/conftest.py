from collections.abc import Iterator
from pathlib import Path

import pytest

from company.resources import staff as company_staff
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.seed import seed_declared
from runs.tests.conftest import alice, engine_for  # noqa: F401  (the engine's fixtures, shared)

COMPANY = Path(__file__).resolve().parents[3] / "company"


@pytest.fixture
def company(db) -> Iterator[ResolvedConfig]:
    """The example company on its REAL drivers (no fakes asked for), with the demo's people: a call
    that reached the shop's driver would fail, having no SHOP_API_URL."""
    config = load_config(COMPANY)
    set_config(config)
    seed_declared(vars(company_staff).values())
    try:
        yield config
    finally:
        set_config(None)


@pytest.fixture
def company_on_fakes(db, tmp_path) -> Iterator[ResolvedConfig]:
    """The example company with its own fakes as its drivers (as the demo runs it), so its ordinary
    runs go as far as a sandbox run does."""
    config = load_config(COMPANY, fakes="instance", fake_dir=tmp_path / "fakes")
    set_config(config)
    seed_declared(vars(company_staff).values())
    try:
        yield config
    finally:
        set_config(None)
