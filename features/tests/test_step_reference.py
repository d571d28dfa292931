"""The reference page of the scenario steps lists exactly the steps the library has: it is checked
against a real `StepLibrary`, so a step added, changed or removed without the page fails here."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from features.library.library import StepLibrary
from features.library.reference import BEGIN, END, built_in_steps
from features.tests.support import PROJECT, make_root
from runs.config.resolution import load_config

PAGE = PROJECT / "docs" / "reference" / "scenario-steps.md"


def test_the_reference_page_lists_the_library_steps(tmp_path: Path):
    config = load_config(make_root(tmp_path, {}), fakes="instance")
    expected = built_in_steps(StepLibrary(dataclasses.replace(config, connectors=[], steps=[])))
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"{PAGE} lacks the markers around the steps' table"
    shown = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert shown == expected, f"{PAGE} is out of date: put this between its markers instead:\n{expected}"
