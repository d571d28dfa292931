"""A small Cucumber-expression dialect for scenario steps.

`{name}` is a parameter (its type gives the regex and turns the matched text into a value),
`(text)` is optional text (`call(s)`), `a/b` between spaces are alternative words (`pass/passes`),
and `\\` escapes the next character. Everything else matches itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


@dataclass(frozen=True)
class ParameterType:
    """A `{name}` in a step: the regex it matches (no capturing groups) and how the matched text
    becomes a value. `transform` raises `ScenarioProblem` for a value it refuses."""

    name: str
    regex: str
    transform: Callable[[str], Any] = lambda text: text  # noqa: E731


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        body = text[1:-1]
        return re.sub(r"\\(.)", r"\1", body)
    return text


def _int(text: str) -> int:
    return int(text)


def _float(text: str) -> float:
    return float(text)


STRING = ParameterType("string", r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', _unquote)
BUILTIN_TYPES: dict[str, ParameterType] = {
    "string": STRING,
    "int": ParameterType("int", r"-?\d+", _int),
    "float": ParameterType("float", r"-?\d+(?:\.\d+)?", _float),
    "word": ParameterType("word", r"[^\s]+"),
}
# A phrase's `{field}`: a quoted string or one word.
FIELD_REGEX = r'"[^"]*"|\S+'


@dataclass(frozen=True)
class Expression:
    source: str
    regex: re.Pattern[str]
    parameters: tuple[ParameterType, ...]

    def match(self, text: str) -> list[str] | None:
        """The texts the parameters matched, or None."""
        found = self.regex.fullmatch(text)
        if found is None:
            return None
        return list(found.groups())

    def values(self, texts: Sequence[str]) -> list[Any]:
        return [p.transform(t) for p, t in zip(self.parameters, texts)]


def compile_expression(source: str, types: Mapping[str, ParameterType]) -> Expression:
    """The expression as an anchored regex. Raises ValueError for an unknown `{type}` or an
    unbalanced brace or parenthesis."""
    parts: list[str] = []
    params: list[ParameterType] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\" and i + 1 < n:
            parts.append(re.escape(source[i + 1]))
            i += 2
            continue
        if c == "{":
            end = source.find("}", i)
            if end < 0:
                raise ValueError(f"{source!r}: a {{ without its }}")
            name = source[i + 1 : end].strip()
            kind = types.get(name)
            if kind is None:
                known = ", ".join("{%s}" % t for t in sorted(types))
                raise ValueError(f"{source!r}: no parameter type {{{name}}}; the types are {known}")
            parts.append(f"({kind.regex})")
            params.append(kind)
            i = end + 1
            continue
        if c == "(":
            end = source.find(")", i)
            if end < 0:
                raise ValueError(f"{source!r}: a ( without its )")
            parts.append(f"(?:{re.escape(source[i + 1 : end])})?")
            i = end + 1
            continue
        if c == "/" or (not c.isspace() and _word_with_alternatives(source, i)):
            word_end = i
            while word_end < n and not source[word_end].isspace() and source[word_end] not in "{}()\\":
                word_end += 1
            words = source[i:word_end].split("/")
            parts.append("(?:" + "|".join(re.escape(w) for w in words) + ")")
            i = word_end
            continue
        parts.append(re.escape(c))
        i += 1
    return Expression(source=source, regex=re.compile("".join(parts), re.DOTALL), parameters=tuple(params))


def _word_with_alternatives(source: str, start: int) -> bool:
    """True at the start of a plain word holding a `/` (`pass/passes`)."""
    if start > 0 and not source[start - 1].isspace():
        return False
    end = start
    while end < len(source) and not source[end].isspace():
        if source[end] in "{}()\\":
            return False
        end += 1
    return "/" in source[start:end]


def unquote(text: str) -> str:
    return _unquote(text)
