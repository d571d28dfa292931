"""Step expressions are Cucumber Expressions, read and matched by the `cucumber-expressions` package
(the one behave's cucumber matcher is built on).

In a step's text `{name}` is a parameter: its type's regex says what it matches and its transformer
turns the matched text into the value the step gets. `(s)` is optional text (`item(s)`), `a/b`
are alternative words (`pass/passes`), and `\\` escapes `{`, `}`, `(`, `)`, `/`, `\\` or a space.
Everything else matches itself, and an expression matches a step's whole text.

What the library adds on top of the package:

- `step_types(*types)`: the package's registry of built-in types (`{int}`, `{float}`, `{word}`,
  `{string}`, `{}` for any text, ...) with the library's own added.
- `compile_expression(source, types)`: the package's expression; a source it refuses raises
  `ExpressionError`, the package's explanation (with the column it points at) and, for an unknown
  parameter type, the types there are.
- `phrase_expression(template)`: an operation's `given`/`expect` phrase, where every `{name}` is a
  field of the operation's input and matches a quoted text or one word.
- `regex_expression(pattern)`: a step set's compiled regex; it must match the whole step, and
  each of its groups is a text value.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from cucumber_expressions.argument import Argument
from cucumber_expressions.errors import CucumberExpressionError, UndefinedParameterTypeError
from cucumber_expressions.expression import CucumberExpression
from cucumber_expressions.parameter_type import ParameterType
from cucumber_expressions.parameter_type_registry import ParameterTypeRegistry
from cucumber_expressions.regular_expression import RegularExpression

# A phrase's `{field}`: a quoted text or one word.
FIELD_REGEX = r'"[^"]*"|\S+'

_INLINE_FLAGS = re.compile(r"^(?:\(\?[aiLmsux]+\))+")
_FLAG_LETTERS = ((re.ASCII, "a"), (re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))

# What a rule matches with: both give `match(text) -> list[Argument] | None` and `regexp`.
StepExpression = CucumberExpression | RegularExpression


class ExpressionError(ValueError):
    """A step expression the package refuses, with its explanation."""


def unquote(text: str) -> str:
    """The text inside matching quotes, with `\\x` read as `x`; other text as it is."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    return text


def parameter_type(name: str, regex: str, transform: Callable[[str], Any] | None = None) -> ParameterType:
    """A parameter type: `regex` (non-capturing groups only) and the function that turns the
    matched text into a value (the text itself when None); it may raise `ScenarioProblem`."""
    return ParameterType(name, regex, str, transform or (lambda text: text),
                         use_for_snippets=False, prefer_for_regexp_match=False)


def step_types(*types: ParameterType) -> ParameterTypeRegistry:
    """The package's built-in parameter types and `types`."""
    registry = ParameterTypeRegistry()
    for kind in types:
        registry.define_parameter_type(kind)
    return registry


def type_names(types: ParameterTypeRegistry) -> str:
    return ", ".join(f"{{{t.name}}}" for t in sorted(types.parameter_types, key=lambda t: t.name))


def compile_expression(source: str, types: Any) -> CucumberExpression:
    """`source` as an expression over the parameter types `types` (a registry); ExpressionError
    when it cannot be read."""
    try:
        return CucumberExpression(source, types)
    except UndefinedParameterTypeError as err:
        # The package's last line asks to register the type: a step can only use the ones there are.
        explanation = str(err).rsplit("\n", 1)[0]
        known = type_names(types) if isinstance(types, ParameterTypeRegistry) else "none"
        raise ExpressionError(f"{explanation}\nThe parameter types are {known}.") from None
    except CucumberExpressionError as err:
        raise ExpressionError(str(err)) from None


class _FieldTypes:
    """The registry a phrase is read with: any `{name}` is a field, a quoted text or one word."""

    def lookup_by_type_name(self, name: str) -> ParameterType:
        return parameter_type(name, FIELD_REGEX, unquote)


def phrase_expression(template: str) -> tuple[CucumberExpression, list[str]]:
    """An operation's phrase as an expression, and the field names it holds, in order."""
    expression = compile_expression(template, _FieldTypes())
    return expression, [kind.name for kind in expression.parameter_types]


class _TextGroups:
    """The registry a step set's regex is read with: no group is typed, each is text."""

    def lookup_by_regexp(self, *args: Any) -> None:
        return None


def regex_expression(pattern: re.Pattern[str]) -> RegularExpression:
    """A step set's compiled regex as an expression that matches a step's whole text and gives
    each group's text. ExpressionError for a named group or a group inside another: the package
    would pass their text out of order or in part."""
    if pattern.groupindex:
        raise ExpressionError(f"/{pattern.pattern}/: name no groups ({', '.join(pattern.groupindex)}); "
                              "the step's function gets each group's text in order")
    # The package matches with the regex's text alone: its flags go in front, inline, where they
    # must stand (pattern.flags holds them, whether given inline or to re.compile).
    flags = "".join(letter for flag, letter in _FLAG_LETTERS if pattern.flags & flag)
    source = _INLINE_FLAGS.sub("", pattern.pattern)
    closing = "\n)" if pattern.flags & re.VERBOSE else ")"  # past a trailing comment
    whole = (f"(?{flags})" if flags else "") + f"(?:{source}{closing}" + r"\Z"
    expression = RegularExpression(whole, _TextGroups())
    if any(group.children for group in expression.tree_regexp.group_builder.children):
        raise ExpressionError(f"/{pattern.pattern}/: a group holds another group; make the inner one (?:...), "
                              "since the step's function gets each group's text")
    return expression


def values(arguments: Sequence[Argument]) -> list[Any]:
    """The values of a match's arguments, each through its type's transformer."""
    return [argument.value for argument in arguments]
