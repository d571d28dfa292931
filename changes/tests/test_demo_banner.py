"""What the demo's banner says."""
from __future__ import annotations

from pathlib import Path

from changes.management.commands.demo import Command
from runs.authoring import SanomaConfig
from runs.testing import resolve_on_fakes
from runs.tests.fixtures import acme


def test_the_demo_banner_links_start_with_these_apps_only_when_configured(capsys):
    with_link = resolve_on_fakes(SanomaConfig(connectors=[acme], demo={"start": "https://apps.example.com/start"}))
    command = Command()
    command._banner(with_link, 8000, [])
    without = resolve_on_fakes(SanomaConfig(connectors=[acme]))
    command._banner(without, 8000, [])
    out = capsys.readouterr().out
    assert out.count("Start with these apps: https://apps.example.com/start") == 1


def test_the_demo_banner_says_how_to_change_the_company_when_it_runs_from_its_repo(capsys):
    command = Command()
    command.repo = Path("/srv/demo/company.git")
    command._banner(resolve_on_fakes(SanomaConfig(connectors=[acme])), 8000, [])
    out = capsys.readouterr().out
    assert "git clone /srv/demo/company.git" in out
    assert "manage.py change open --branch my-change" in out
