"""The docs cannot lie: every page's marked blocks run as the page says (docs_pages.py), and the
reference pages name every error code, command and setting there is.

The pages' commands run on a SQLite database of their own, so each page runs once per `./test`: on
one of its two suites, about half the pages on each (scripts/suite_lanes.py, SPLIT_SUITE_TESTS; the
other suite would run the very same commands again). Run on its own, pytest runs every page.
"""
from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from connectors.errors import all_codes
from sanoma_site.tests.docs_pages import DOCS, PROJECT, DocsError, matches, pages_with_tests, parse_page, run_page


def page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


def fails(path: Path, tmp_path: Path) -> str:
    with pytest.raises(DocsError) as caught:
        run_page(path, Path(tempfile.mkdtemp(dir=tmp_path)))
    return str(caught.value)


# ---- the pages themselves -------------------------------------------------------------------------

@pytest.mark.parametrize("doc", pages_with_tests(), ids=lambda p: str(p.relative_to(DOCS)))
def test_the_page_runs_as_written(doc: Path, tmp_path: Path) -> None:
    run_page(doc, tmp_path)


def test_the_pages_with_tested_blocks_are_found() -> None:
    # The settings profiles' `check --deploy` examples are tested; losing them would test nothing.
    assert DOCS / "guides" / "deploying" / "index.md" in pages_with_tests()
    assert [b.action for b in parse_page(DOCS / "guides" / "deploying" / "index.md")] == ["shell", "shell"]


def test_every_error_code_is_in_the_error_codes_page() -> None:
    text = (DOCS / "reference" / "error-codes.md").read_text()
    assert all_codes(), "the apps registered their codes"
    assert [code for code in all_codes() if f"`{code}`" not in text] == []


def test_every_command_is_in_the_commands_page() -> None:
    text = (DOCS / "reference" / "commands.md").read_text()
    commands = sorted(p.stem for app in ("runs", "changes", "changes/credentials", "changes/lifecycle", "wakeups",
                                         "connectors", "features", "sanoma_site")
                      for p in (PROJECT / app / "management" / "commands").glob("[!_]*.py"))
    assert commands, "no management commands found"
    assert [name for name in commands if f"`{name}" not in text] == []


def test_every_setting_is_in_the_settings_page() -> None:
    import re

    source = (PROJECT / "sanoma_site" / "settings.py").read_text()
    names = sorted(set(re.findall(r'"((?:SANOMA|DJANGO|DATABASE)_[A-Z_]+)"', source)))
    text = (DOCS / "reference" / "settings.md").read_text()
    assert names and [name for name in names if f"`{name}`" not in text] == []


def test_the_demo_guide_lists_every_workflow_of_the_example_company() -> None:
    import re

    from runs.config.resolution import load_config

    config = load_config(PROJECT / "company", fakes="instance", fake_dir=None)
    own = sorted(name for name, w in config.workflows.items() if name not in ("call", "drift", "apply", "change"))
    text = (DOCS / "guides" / "demo.md").read_text()
    listed = re.findall(r"^\| `([a-z.-]+)` \| ", text.split("## The company's workflows")[1].split("\n## ")[0], re.M)
    assert sorted(listed) == own


def test_the_readme_is_one_screen_and_its_links_lead_somewhere() -> None:
    import re

    readme = (PROJECT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 80
    assert "./demo" in lines[2] and "./test" in lines[3]  # the two commands come first
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local and [t for t in local if not (PROJECT / t).exists()] == []


# ---- the machinery: each test shows a way a page can fail -----------------------------------------

def test_a_transcript_passes_when_each_command_prints_what_the_page_shows(tmp_path: Path) -> None:
    run_page(page(tmp_path, """
<!-- docs-test: shell -->
```console
$ echo hello; echo "a long line of text"
hello
a long ... text
$ printf 'one\\ntwo\\nthree\\n'
one
...
three
$ true
```
"""), tmp_path / "run")


def test_output_that_differs_fails_naming_the_page_line_and_both_texts(tmp_path: Path) -> None:
    path = page(tmp_path, "# A page\n\n<!-- docs-test: shell -->\n```console\n$ echo hello\ngoodbye\n```\n")
    message = fails(path, tmp_path)
    assert f"{path}:3: $ echo hello" in message
    assert "--- the page shows:\ngoodbye\n--- it printed:\nhello" in message


def test_a_command_that_fails_fails_the_page_with_its_output(tmp_path: Path) -> None:
    message = fails(page(tmp_path, "<!-- docs-test: shell -->\n```console\n$ echo broken >&2; exit 3\n```\n"),
                    tmp_path)
    assert "exited 3, the page expects 0" in message and "broken" in message


def test_status_says_which_exit_status_the_page_expects(tmp_path: Path) -> None:
    run_page(page(tmp_path, "<!-- docs-test: shell status=2 -->\n```console\n$ exit 2\n```\n"), tmp_path / "run")
    assert "exited 0, the page expects 2" in fails(
        page(tmp_path, "<!-- docs-test: shell status=2 -->\n```console\n$ true\n```\n"), tmp_path)


def test_the_folder_and_exported_variables_carry_from_block_to_block(tmp_path: Path) -> None:
    run_page(page(tmp_path, """
<!-- docs-test: shell -->
```console
$ export GREETING=hi
$ mkdir -p acme/workflows && cd acme
```

<!-- docs-test: write workflows/hello.txt -->
```text
written by the page
```

<!-- docs-test: shell -->
```console
$ echo "$GREETING from $(basename "$PWD")"; cat workflows/hello.txt
hi from acme
written by the page
```
"""), tmp_path / "run")


def test_the_folder_looks_like_a_checkout_and_has_a_database_of_its_own(tmp_path: Path) -> None:
    run_page(page(tmp_path, """
<!-- docs-test: shell -->
```console
$ test -f manage.py && test -x .venv/bin/python && test -d features/steps && echo "$SANOMA_VAR_DIR" \
    "${DATABASE_URL:-none}"
.../page/var none
```
"""), tmp_path / "run")


def test_write_takes_its_path_from_the_fence_title(tmp_path: Path) -> None:
    run_page(page(tmp_path, """
<!-- docs-test: write -->
```python title="company/workflows/hello.py"
GREETING = "hello"
```

<!-- docs-test: python -->
```python
from pathlib import Path
print(Path("company/workflows/hello.py").read_text().strip())
```

<!-- docs-test: output -->
```text
GREETING = "hello"
```
"""), tmp_path / "run")


def test_python_output_that_differs_fails(tmp_path: Path) -> None:
    message = fails(page(tmp_path, "<!-- docs-test: python -->\n```python\nprint(1 + 1)\n```\n\n"
                                   "<!-- docs-test: output -->\n```text\n3\n```\n"), tmp_path)
    assert "--- the page shows:\n3\n--- it printed:\n2" in message


def test_a_script_block_stops_at_its_first_failing_command(tmp_path: Path) -> None:
    message = fails(page(tmp_path, "<!-- docs-test: shell -->\n```bash\nfalse\necho not reached\n```\n"), tmp_path)
    assert "exited 1, the page expects 0" in message and "--- it printed" not in message


def test_a_hidden_block_runs_and_shows_nothing(tmp_path: Path) -> None:
    path = page(tmp_path, """
<!-- docs-test: shell
    mkdir -p made-out-of-sight
-->

<!-- docs-test: shell -->
```console
$ ls
features
made-out-of-sight
manage.py
```
""")
    assert [b.hidden for b in parse_page(path)] == [True, False]
    run_page(path, tmp_path / "run")


def test_a_background_block_runs_until_the_page_ends(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    run_page(page(tmp_path, f"""
<!-- docs-test: background ready="listening" -->
```bash
echo $$ > {pid_file}
echo listening
exec sleep 300
```

<!-- docs-test: shell -->
```console
$ kill -0 "$(cat {pid_file})" && echo alive
alive
```
"""), tmp_path / "run")
    pid = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the background block's process was left running")


def test_a_background_block_that_never_gets_ready_fails(tmp_path: Path) -> None:
    message = fails(page(tmp_path, "<!-- docs-test: background ready=up timeout=1 -->\n```bash\nsleep 30\n```\n"),
                    tmp_path)
    assert "waited for 'up' and did not print it within 1 s" in message


@pytest.mark.parametrize(("directive", "problem"), [
    ("<!-- docs-test: shel -->\n```\nls\n```\n", "docs-test: shel is not an action"),
    ("<!-- docs-test: shell stauts=1 -->\n```\nls\n```\n", "unknown option stauts"),
    ("<!-- docs-test: shell status=one -->\n```\nls\n```\n", "status=one is not a number"),
    ("<!-- docs-test: shell -->\n\nSome text.\n\n```\nls\n```\n", "is not followed by a fenced block"),
    ("<!-- docs-test: write -->\n```python\nx = 1\n```\n", "write needs a PATH"),
    ("<!-- docs-test: output -->\n```\nhello\n```\n", "output follows a shell script or a python block"),
])
def test_a_wrong_directive_is_refused_naming_its_line(tmp_path: Path, directive: str, problem: str) -> None:
    path = page(tmp_path, "# Title\n\n" + directive)
    with pytest.raises(DocsError, match=f"{path}:3: .*{problem}"):
        parse_page(path)


def test_dots_match_any_lines_or_any_text_within_a_line() -> None:
    assert matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert matches("a\n...\nd\n", "a\nd\n")
    assert matches("x ... z", "x yyy z\n")
    assert not matches("a\nd\n", "a\nb\nd\n")
    assert not matches("x ... z", "x y\nz\n")
