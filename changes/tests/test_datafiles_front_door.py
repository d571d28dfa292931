"""Data files take sanoma's own constructors from the front door (`runs.authoring`), as they take
them from `changes.datafiles.sanoma`: the same functions, read the same way."""
from __future__ import annotations

import textwrap
from pathlib import Path

import changes.datafiles.sanoma as old_home
import runs.authoring
from runs.config.datafiles import read_datafiles


def root_with(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "peopleco"
    (root / "resources").mkdir(parents=True)
    (root / "resources" / "people.py").write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def test_the_front_doors_constructors_are_the_data_files_own():
    for name in ("person", "group", "local", "secret"):
        assert getattr(runs.authoring, name) is getattr(old_home, name), name


def test_a_data_file_importing_from_the_front_door_is_read_like_one_importing_sanoma(tmp_path):
    root = root_with(tmp_path, """
        from runs.authoring import group, local, person, secret as hidden

        ops = group(name="ops")
        ada = person(username="ada", email="ada@x.example", groups=[ops])
        live = local(name="live", branch="main")
    """)
    read = read_datafiles(root, [])
    assert list(read.problems) == []
    assert [(r.type, r.name) for r in read.resources] == [("sanoma.group", "ops"), ("sanoma.person", "ada"),
                                                          ("sanoma.local", "live")]
    ada = next(r for r in read.resources if r.name == "ada")
    assert ada.values["groups"][0].id == "resources/people.py#ops"


def test_anything_else_from_the_front_door_is_refused_naming_what_a_data_file_takes(tmp_path):
    root = root_with(tmp_path, """
        from runs.authoring import define_workflow, group

        ops = group(name="ops")
    """)
    read = read_datafiles(root, [])
    assert [str(p) for p in read.problems] == [
        "resources/people.py:1:28: `from runs.authoring import define_workflow`: a data file is read, not run; "
        "from runs.authoring it takes only group, local, person, secret"]
    assert [r.name for r in read.resources] == ["ops"]
