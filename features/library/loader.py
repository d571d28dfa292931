"""Reading feature files as scenarios.

Feature files live in the config root's `scenarios/` and each `apps/<app>/scenarios/` (any depth);
each scenario is named by its title, and a file by its path from the root. `load_scenarios(config)`
reads them all and returns the scenarios and the problems (each naming `file:line`); it reads
again only when a file was added, removed or changed (name, mtime, size). `compile_features`
does the same for features behave has already parsed.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from behave.model import ScenarioOutline, ScenarioOutlineBuilder
from behave.parser import ParserError, parse_file

from features.library import model as m
from features.library.errors import ScenarioProblem
from features.library.expressions import values as argument_values
from features.library.inputs import Maker
from features.library.library import Draft, StepLibrary
from features.library.titles import literal_titles
from runs.config.paths import display_path, root_path

SETUP_ACTIONS = (m.Seed, m.Fault, m.Person, m.Starter, m.SetState)


def scenario_files(config: Any) -> list[Path]:
    """Every `.feature` file under the config's scenario folders, sorted by path."""
    files: list[Path] = []
    for folder in getattr(config, "scenarios", []) or []:
        files += sorted(p for p in Path(folder).rglob("*.feature") if p.is_file())
    return files


@dataclass
class LoadResult:
    scenarios: list[m.Scenario] = field(default_factory=list)
    problems: list[ScenarioProblem] = field(default_factory=list)
    # behave model (by id) -> its scenario, or the problem that keeps it from running
    _by_model: dict[int, m.Scenario | ScenarioProblem] = field(default_factory=dict, repr=False)
    # feature file (as displayed) -> a problem with the whole file
    file_problems: dict[str, ScenarioProblem] = field(default_factory=dict)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [{"file": p.file, "line": p.line, "message": str(p)} for p in self.problems]

    def for_model(self, scenario: Any) -> m.Scenario | ScenarioProblem | None:
        return self._by_model.get(id(scenario))

    def named(self, name: str) -> m.Scenario | None:
        return next((s for s in self.scenarios if s.name == name), None)


# -- names ----------------------------------------------------------------------------------------


def name_scenarios(feature: Any) -> list[Any]:
    """The feature's scenarios, outline rows included, each renamed the way behave names it: a row
    takes the outline's title with its placeholders filled, and " (line N)" when rows share it."""
    out: list[Any] = []
    for item in feature.walk_scenarios(with_outlines=True):
        if isinstance(item, ScenarioOutline):
            rows = item.scenarios
            names = [ScenarioOutlineBuilder.render_template(item.name, getattr(r, "_row", None)) for r in rows]
            for row, name in zip(rows, names, strict=True):
                row.name = f"{name} (line {row.line})" if names.count(name) > 1 else name
            continue
        out.append(item)
    return out


def scenario_text(lines: list[str], start: int, end: int) -> str:
    chunk = lines[start - 1 : end]
    while chunk and not chunk[-1].strip():
        chunk.pop()
    return "\n".join(chunk)


# -- one scenario ---------------------------------------------------------------------------------


def compile_scenario(
    model_scenario: Any, library: StepLibrary, *, file: str, location: str, text: str = ""
) -> m.Scenario:
    """The scenario behave parsed, read against the step library; raises ScenarioProblem."""
    name = model_scenario.name
    draft = Draft(name=name, library=library, maker=Maker(name))
    steps: list[m.ScenarioStep] = []
    for step in model_scenario.all_steps:
        kind = step.step_type
        if kind not in ("given", "when", "then"):
            raise ScenarioProblem(f'"{step.name}" needs a Given, When or Then before it', line=step.line)
        rule, arguments = library.match(step)
        try:
            values = argument_values(arguments)
            has_argument = step.text is not None or step.table is not None
            if has_argument and rule.takes is None and not rule.optional_argument:
                raise ScenarioProblem(
                    f'"{step.name}" takes no doc string or table; '
                    + ("did you mean \"... with\"?" if rule.source.endswith(("runs", "was called")) else "remove it")
                )
            action = rule.apply(draft, values, step)
        except ScenarioProblem as problem:
            problem.line = problem.line or step.line
            raise
        if isinstance(action, SETUP_ACTIONS) and draft.workflow is not None:
            raise ScenarioProblem(
                f'"{step.keyword} {step.name}" comes after the When (line {draft.runs_line}), so it would change '
                "nothing the run sees: move it above the When",
                line=step.line,
            )
        op = getattr(action, "op", None)
        steps.append(m.ScenarioStep(text=step.name, kind=kind, keyword=step.keyword, line=step.line, action=action,
                                    op=op, source=rule.source))
    if draft.workflow is None:
        example = next(iter(sorted(library.workflows)), "<workflow>")
        raise ScenarioProblem(
            f'scenario "{name}" has no When: say which workflow runs, such as "When {example} runs" '
            f'or "When {example} runs with" and a table',
            line=model_scenario.line,
        )
    definition = library.workflows[draft.workflow]
    return m.Scenario(
        name=name,
        file=file,
        location=location,
        line=model_scenario.line,
        workflow=draft.workflow,
        text=text,
        steps=steps,
        input=draft.input or {},
        approvals=literal_titles(definition, getattr(library.config, "policy", None)),
        tags=tuple(getattr(model_scenario, "effective_tags", ()) or ()),
        model=model_scenario,
    )


# -- many ------------------------------------------------------------------------------------------


def compile_features(features: Iterable[Any], config: Any, *, result: LoadResult | None = None) -> LoadResult:
    """Read behave-parsed features as scenarios. Raises ScenarioConfigError when the config's steps
    are broken (no scenario can be read); every other problem is in the result."""
    library = StepLibrary.of(config)
    result = result or LoadResult()
    seen: dict[str, m.Scenario] = {s.name: s for s in result.scenarios}
    root = getattr(config, "root", None)
    for feature in features:
        location = display_path(feature.filename)
        file = root_path(feature.filename, root)
        try:
            lines = Path(feature.filename).read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        scenarios = name_scenarios(feature)
        if not scenarios:
            problem = ScenarioProblem(
                'has no scenarios: add at least one "Scenario:" with its steps', file=location, line=feature.line or 1
            )
            result.problems.append(problem)
            result.file_problems[location] = problem
            continue
        starts = sorted({s.line for s in feature.walk_scenarios(with_outlines=True)})
        for model_scenario in scenarios:
            template = model_scenario if getattr(model_scenario, "_row", None) is None else model_scenario.parent
            start = getattr(template, "line", model_scenario.line)
            later = [n for n in starts if n > start]
            text = scenario_text(lines, start, (later[0] - 1) if later else len(lines))
            try:
                scenario = compile_scenario(model_scenario, library, file=file, location=location, text=text)
                other = seen.get(scenario.name)
                if other is not None:
                    raise ScenarioProblem(
                        f'a second scenario named "{scenario.name}" (the first is at {other.where}); '
                        "give each its own name",
                        line=model_scenario.line,
                    )
            except ScenarioProblem as problem:
                problem.at(location, problem.line or model_scenario.line)
                result.problems.append(problem)
                result._by_model[id(model_scenario)] = problem
                continue
            seen[scenario.name] = scenario
            result.scenarios.append(scenario)
            result._by_model[id(model_scenario)] = scenario
    return result


_cache_lock = threading.Lock()
_cache: weakref.WeakKeyDictionary[Any, tuple[tuple, LoadResult]] = weakref.WeakKeyDictionary()


def parse_features(files: Iterable[Path], result: LoadResult) -> list[Any]:
    features = []
    for path in files:
        try:
            feature = parse_file(str(path))
        except ParserError as err:
            line = getattr(err, "line", None)
            reason = getattr(err, "reason", None) or str(err)
            shown = display_path(path)
            problem = ScenarioProblem(f"is not Gherkin: {reason}", file=shown, line=line)
            result.problems.append(problem)
            result.file_problems[shown] = problem
            continue
        if feature is None:  # an empty file
            shown = display_path(path)
            problem = ScenarioProblem('is empty: start it with "Feature:" and add a scenario', file=shown, line=1)
            result.problems.append(problem)
            result.file_problems[shown] = problem
            continue
        features.append(feature)
    return features


def load_scenarios(config: Any, files: Iterable[Path] | None = None) -> LoadResult:
    """Every scenario of the config (or of `files`), with the problems found; cached per config
    until a file is added, removed or changed."""
    paths = list(files) if files is not None else scenario_files(config)
    signature = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths if p.exists())
    with _cache_lock:
        cached = _cache.get(config)
        if cached is not None and cached[0] == signature:
            return cached[1]
    result = LoadResult()
    features = parse_features(paths, result)
    compile_features(features, config, result=result)
    with _cache_lock:
        _cache[config] = (signature, result)
    return result
