"""What the demo's banner says."""
from __future__ import annotations

from pathlib import Path

from runs.authoring import SanomaConfig
from runs.seed import DeclaredPerson as DemoPerson
from runs.testing import resolve_on_fakes
from runs.tests.fixtures import acme
from sanoma_site.management.commands.demo import Command


def test_the_demo_banner_links_start_with_these_apps_only_when_configured(capsys):
    with_link = resolve_on_fakes(SanomaConfig(connectors=[acme], demo={"start": "https://apps.example.com/start"}))
    command = Command()
    command._banner(with_link, 8000, [], [], [])
    without = resolve_on_fakes(SanomaConfig(connectors=[acme]))
    command._banner(without, 8000, [], [], [])
    out = capsys.readouterr().out
    assert out.count("Start with these apps: https://apps.example.com/start") == 1


def test_the_demo_banner_says_how_to_change_the_company_when_it_runs_from_its_repo(capsys):
    command = Command()
    command.repo = Path("/srv/demo/company.git")
    command._banner(resolve_on_fakes(SanomaConfig(connectors=[acme])), 8000, [], [], [])
    out = capsys.readouterr().out
    assert "git clone /srv/demo/company.git" in out
    assert "manage.py change open --branch my-change" in out


def test_the_demo_banner_says_who_to_sign_in_as_with_their_groups_and_the_secrets_it_made_up(capsys):
    people = [DemoPerson("admin", ("operators",), True, True),
              DemoPerson("finance-lead", ("staff", "finance"), True, False),
              DemoPerson("vera", ("viewers",), True, False)]
    Command()._banner(resolve_on_fakes(SanomaConfig(connectors=[acme])), 8000, [], people, ["SHOP_WEBHOOK_SECRET"])
    lines = capsys.readouterr().out.splitlines()
    assert "(sign in as one of these; the password is the username)" in lines[2]
    assert [line.split(None, 1) for line in lines[3:6]] == [
        ["admin", "superuser, operators"], ["finance-lead", "staff, finance"], ["vera", "viewers"]]
    assert "  secrets: SHOP_WEBHOOK_SECRET (a made-up value each, for this demo)" in lines


def test_the_demo_banner_says_when_the_worker_reloads_and_where_the_versions_are(capsys):
    config = resolve_on_fakes(SanomaConfig(connectors=[acme]))
    Command()._banner(config, 8000, [], [], [], reload=True)
    reloading = capsys.readouterr().out
    assert "reload:  the worker starts again on every edit under" in reloading
    assert "versions: http://127.0.0.1:8000/admin/runs/appversion/" in reloading
    Command()._banner(config, 8000, [], [], [])
    assert "reload:" not in capsys.readouterr().out


def test_the_demo_banner_says_what_another_terminal_exports_to_read_this_demo(capsys, settings, tmp_path,
                                                                              monkeypatch):
    settings.VAR_DIR = tmp_path / "var"
    settings.SANOMA_ROOT = tmp_path / "var" / "demo" / "company"
    settings.SANOMA_SITE_URL = "http://127.0.0.1:8742"
    monkeypatch.setenv("SHOP_WEBHOOK_SECRET", "made up")
    # Its address (a run advanced there announces links to this desk) and the made-up secrets.
    said = (f"another terminal: export SANOMA_VAR_DIR={tmp_path / 'var'} SANOMA_FAKES=instance "
            f"SANOMA_ROOT={tmp_path / 'var' / 'demo' / 'company'} SANOMA_SITE_URL=http://127.0.0.1:8742 "
            "SHOP_WEBHOOK_SECRET='made up'")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    Command()._banner(resolve_on_fakes(SanomaConfig(connectors=[acme])), 8000, [], [], ["SHOP_WEBHOOK_SECRET"])
    [line] = [line for line in capsys.readouterr().out.splitlines() if "another terminal" in line]
    assert line.strip() == said
    # On a database of its own, the banner names the variable, never its value (it holds a password).
    monkeypatch.setenv("DATABASE_URL", "postgresql://sanoma:secret@db.example/sanoma")
    Command()._banner(resolve_on_fakes(SanomaConfig(connectors=[acme])), 8000, [], [], ["SHOP_WEBHOOK_SECRET"])
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if "another terminal" in line]
    assert line.strip() == said + "   (and this demo's DATABASE_URL)" and "secret@" not in out
