"""behave hooks that run the config's scenarios under behave-django (`manage.py behave`).

`features/environment.py` imports these hooks; `features/steps/` registers `sanoma_step` as the one
behave step, which hands each step to the scenario's `ScenarioWorld`. What they do:

- before_all: load the company config (`settings.SANOMA_ROOT`) on instance fakes and install it;
  when behave was given no paths (or only the features folder), add the feature files of the
  config's `scenarios/` and `apps/<app>/scenarios/` to the run (behave's `--include`/`--exclude`
  still apply, matched against each file's path from the config root as well as from the working
  folder: `-i ^scenarios/refund`); read every feature as scenarios. A config whose scenario steps are broken (an
  operation phrase naming a field its input lacks) fails the whole run here.
- before_feature / before_scenario: a file or scenario that cannot be read fails with its problem,
  naming `file:line`, before anything runs.
- django_ready (behave-django: the test database is ready): fresh fakes and clock, the people the
  scenario names.
- before_step: which step behave is on. after_scenario: the clock back.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from behave.parser import ParserError, parse_file
from django.conf import settings
from django.test.utils import override_settings

from features.library.errors import ScenarioProblem
from features.library.loader import LoadResult, compile_features, scenario_files
from features.library.world import ScenarioWorld
from runs.config.paths import display_path, root_path
from runs.config.registry import set_config
from runs.config.resolution import load_config

# Retries of idempotent calls wait (1 s, 2 s by default); a scenario does not wait on the wall clock.
SCENARIO_SETTINGS = {"SANOMA_RETRY_DELAYS": (0.0, 0.0)}


class Session:
    """What the hooks share for the whole behave run."""

    def __init__(self, config: Any, result: LoadResult) -> None:
        self.config = config
        self.result = result
        self.unreadable: list[ScenarioProblem] = []  # files behave cannot run at all


def _path_of(item: Any) -> Path:
    return Path(getattr(item, "filename", item)).resolve()


def _example_root() -> Path:
    return (Path(settings.BASE_DIR) / "company").resolve()


def before_all(context: Any) -> None:
    context.sanoma_settings = override_settings(**SCENARIO_SETTINGS)
    context.sanoma_settings.enable()
    config = load_config(settings.SANOMA_ROOT, fakes="instance")
    set_config(config)
    runner = context._runner
    own_dir = Path(runner.base_dir).resolve()
    result = LoadResult()
    session = Session(config, result)
    given = [_path_of(p) for p in (context.config.paths or [])]
    if all(p == own_dir for p in given):
        known = {_path_of(f) for f in runner.features}
        for path in scenario_files(config):
            shown = display_path(path)
            if path.resolve() in known or _left_out(context.config, path, config.root):
                continue
            try:
                feature = parse_file(shown)
            except ParserError as err:
                feature = ScenarioProblem(f"is not Gherkin: {getattr(err, 'reason', None) or err}", file=shown,
                                          line=getattr(err, "line", None))
            if feature is None:
                feature = ScenarioProblem('is empty: start it with "Feature:" and add a scenario', file=shown, line=1)
            if isinstance(feature, ScenarioProblem):
                result.problems.append(feature)
                session.unreadable.append(feature)
                continue
            runner.features.append(feature)
    # The runtime's own features are written for the example company; another root leaves them out.
    if config.root is None or Path(config.root).resolve() != _example_root():
        own = [f for f in runner.features if own_dir in _path_of(f).parents]
        if own:
            runner.features[:] = [f for f in runner.features if f not in own]
            print(f"sanoma: the runtime's own features ({len(own)} files in {display_path(own_dir)}) run on the "
                  f"example company; left out for {config.root}")
    context.sanoma = session
    if not runner.features and not session.unreadable:
        raise ScenarioProblem(_nothing_chosen(context.config, config))
    compile_features(runner.features, config, result=result)


def _nothing_chosen(options: Any, config: Any) -> str:
    """Why no feature runs: what was asked, and the feature files there are to choose from."""
    asked = [f"--include {options.include_re.pattern!r}" if options.include_re is not None else "",
             f"--exclude {options.exclude_re.pattern!r}" if options.exclude_re is not None else "",
             f"--name {' '.join(repr(n) for n in options.name)}" if getattr(options, "name", None) else ""]
    files = [root_path(path, config.root) for path in scenario_files(config)]
    there = (f"the feature files of {config.root} are " + ", ".join(files)) if files else \
        f"{config.root} has no feature file under scenarios/ or apps/<app>/scenarios/"
    return (f"no feature file matches what was asked ({' '.join(a for a in asked if a) or 'no paths'}), so no "
            f"scenario would run: {there}. --include matches part of a file's path from the config root "
            "(-i ^scenarios/refund) or from the working folder")


def _left_out(options: Any, path: Path, root: Path | None) -> bool:
    """behave's `--include`/`--exclude` (`-i`/`-e`) on a config feature file: matched against its path
    from the config root (`scenarios/refund.feature`, as scenarios name their file) and against its
    path as shown (from the working folder); included when the include pattern matches either,
    excluded when the exclude pattern does."""
    names = [root_path(path, root), display_path(path)]
    if options.include_re is not None and not any(options.include_re.search(name) for name in names):
        return True
    return options.exclude_re is not None and any(options.exclude_re.search(name) for name in names)


def before_feature(context: Any, feature: Any) -> None:
    problem = context.sanoma.result.file_problems.get(display_path(feature.filename))
    if problem is not None:
        raise problem


def before_scenario(context: Any, scenario: Any) -> None:
    session: Session = context.sanoma
    found = session.result.for_model(scenario)
    if found is None:
        raise ScenarioProblem("was not read as a scenario", file=display_path(scenario.filename), line=scenario.line)
    if isinstance(found, ScenarioProblem):
        raise found
    context.sanoma_world = ScenarioWorld(session.config, found)
    context.sanoma_steps = list(scenario.all_steps)


def django_ready(context: Any) -> None:
    world = getattr(context, "sanoma_world", None)
    if world is not None:
        world.prepare()


def before_step(context: Any, step: Any) -> None:
    steps = getattr(context, "sanoma_steps", [])
    context.sanoma_index = next((i for i, s in enumerate(steps) if s is step), None)


def after_scenario(context: Any, scenario: Any) -> None:
    world = getattr(context, "sanoma_world", None)
    if world is not None:
        world.finish()


def after_all(context: Any) -> None:
    set_config(None)
    override = getattr(context, "sanoma_settings", None)
    if override is not None:
        override.disable()
    session: Session | None = getattr(context, "sanoma", None)
    if session is not None and session.unreadable:
        unreadable = "\n".join(str(p) for p in session.unreadable)
        raise ScenarioProblem(f"these feature files could not be read:\n{unreadable}")


def sanoma_step(context: Any) -> None:
    """The one behave step: run the scenario's step at this position."""
    world: ScenarioWorld | None = getattr(context, "sanoma_world", None)
    index = getattr(context, "sanoma_index", None)
    if world is None or index is None:
        raise AssertionError("this step is outside a scenario sanoma read (see the error above)")
    world.execute(index, text=context.text, table=context.table)
