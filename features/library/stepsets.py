"""Step sets: the steps a connector (`with_setup(connector, steps=...)`) or the config
(`SanomaConfig(steps=[...])`) adds to scenarios, beside the generic ones and the operations' phrases.

A step set is a `StepSet`:

    from features.library import StepSet

    shop_steps = StepSet("shop")

    @shop_steps.given("the shop is closed")
    def closed(world):
        world.fake("shop").update(lambda state: state.update(closed=True))

    @shop_steps.then("{int} refund(s) were made")
    def refunds(world, count):
        assert len(world.fake("shop").state["refunds"]) == count

or a plain list of `(keyword, pattern, function)` tuples. `keyword` is "given", "when", "then"
or "step" (any keyword); `pattern` is a Cucumber Expression (see `features.library.expressions`:
the library's types `{op}`, `{workflow}`, `{who}`, `{vendor}`, `{value}`, `{duration}`, the
package's `{string}`, `{int}`, `{float}`, `{word}`, `{}` ..., optional `(text)`, alternatives
`a/b`) or a compiled `re.Pattern` that must match the whole step and whose groups (unnamed, none
inside another) are passed as text.
The function runs at the step's turn as `function(world, *values)`; `world` is the running
scenario (`features.library.world.ScenarioWorld`: `config`, `fake(vendor)`, `run`, `records()`,
`text` and `table` of the current step). A raised AssertionError fails the step with its message.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

KEYWORDS = {"given": "given", "when": "when", "then": "then", "step": "any", "any": "any"}


@dataclass(frozen=True)
class StepDefinition:
    kind: str  # given | when | then | any
    pattern: str | re.Pattern[str]
    function: Callable[..., Any]
    takes: str | None = None  # "a JSON doc string", ... when the step needs one; shown in listings


class StepSet:
    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a step set needs a name, shown when steps are listed")
        self.name = name
        self.definitions: list[StepDefinition] = []

    def __repr__(self) -> str:
        return f"<StepSet {self.name} ({len(self.definitions)} steps)>"

    def __iter__(self) -> Iterator[StepDefinition]:
        return iter(self.definitions)

    def add(self, keyword: str, pattern: str | re.Pattern[str], function: Callable[..., Any], *,
            takes: str | None = None) -> Callable[..., Any]:
        kind = KEYWORDS.get(str(keyword).lower())
        if kind is None:
            raise ValueError(f"step set {self.name}: keyword {keyword!r} must be given, when, then or step")
        if not isinstance(pattern, (str, re.Pattern)) or (isinstance(pattern, str) and not pattern.strip()):
            raise ValueError(f"step set {self.name}: a step's pattern must be a non-empty string or a compiled regex")
        if not callable(function):
            raise TypeError(f"step set {self.name}: {pattern!r} needs a function(world, *values)")
        self.definitions.append(StepDefinition(kind=kind, pattern=pattern, function=function, takes=takes))
        return function

    def _decorator(self, keyword: str, pattern: str | re.Pattern[str], takes: str | None) -> Callable[..., Any]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            return self.add(keyword, pattern, function, takes=takes)

        return register

    def given(self, pattern: str | re.Pattern[str], *, takes: str | None = None) -> Callable[..., Any]:
        return self._decorator("given", pattern, takes)

    def when(self, pattern: str | re.Pattern[str], *, takes: str | None = None) -> Callable[..., Any]:
        return self._decorator("when", pattern, takes)

    def then(self, pattern: str | re.Pattern[str], *, takes: str | None = None) -> Callable[..., Any]:
        return self._decorator("then", pattern, takes)

    def step(self, pattern: str | re.Pattern[str], *, takes: str | None = None) -> Callable[..., Any]:
        return self._decorator("step", pattern, takes)


def as_step_set(entry: Any, default_name: str) -> StepSet:
    """A config's or connector's `steps` entry as a StepSet; ValueError/TypeError when it is none."""
    if isinstance(entry, StepSet):
        return entry
    if isinstance(entry, (list, tuple)):
        made = StepSet(default_name)
        for item in entry:
            if not (isinstance(item, (list, tuple)) and len(item) == 3):
                raise ValueError(f"{default_name}: each step is (keyword, pattern, function); got {item!r}")
            made.add(*item)
        return made
    raise TypeError(f"{default_name}: steps must be a StepSet or a list of (keyword, pattern, function); got {entry!r}")
