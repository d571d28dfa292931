"""Placing a ctx call made at run time at its outline node, from the frame that made it.

A call expression is known by where it ends: (line, UTF-8 byte column), what `ast` gives and what
a frame's instruction positions give. A call made directly in `run` (or in a lambda or function
defined in it) is keyed by that one position. A call made inside a helper (a function of the same
file that `run` calls with ctx) is keyed by the chain of positions that led there: the helper call
in `run`, the helper calls in the helpers between, then the call itself. At run time the chain is
read back up the frames: from the frame that called ctx to the frame running the helper itself
(a lambda or a comprehension inside it runs in a frame of its own, a ctx.all member under
ctx.all's frame), to the frame that called the helper, and so on until a frame outside every
helper. That is a few frame hops and one dict look-up, and it depends only on where the code is.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import CodeType, FrameType

from runs.config.outline.model import CallSite

Position = tuple[int, int]  # where a call expression ends: line, UTF-8 byte column

# How a code object of the workflow's file stands to the helpers.
_OUTSIDE, _OWN, _INNER, _OTHER_FILE = 0, 1, 2, 3
# How far up a helper's frame may be from a frame running code nested in it (ctx.all's frame between).
_MAX_HOPS = 16


class CallSites:
    """The ctx calls of one outline: `by_end` those outside helpers, keyed by where each call
    expression ends; `by_chain` those inside helpers, keyed by the chain of positions (see the module).
    `helpers` are the (name, first line, last line) of the helpers the outline draws."""

    def __init__(self, file: str, sites: Mapping[Position, CallSite], lines: frozenset[int],
                 chained: Mapping[tuple[Position, ...], CallSite] | None = None,
                 helpers: tuple[tuple[str, int, int], ...] = ()) -> None:
        self.file = file
        self.by_end = dict(sites)
        self.by_chain = dict(chained or {})
        self.lines = lines
        self.helpers = helpers
        self._codes: dict[CodeType, tuple[tuple[tuple[int | None, ...], ...], int]] = {}

    def __len__(self) -> int:
        return len(self.by_end) + len(self.by_chain)

    def __iter__(self) -> Iterator[CallSite]:
        yield from self.by_end.values()
        yield from self.by_chain.values()

    def has_line(self, filename: str, line: int) -> bool:
        """A call of the outline spans this line of this file (the coarse check, without a frame)."""
        return filename == self.file and line in self.lines

    def at(self, frame: FrameType) -> CallSite | None:
        """The outline's call that `frame` is making right now, or None."""
        end, role = self._end(frame)
        if end is None or role == _OTHER_FILE:
            return None
        if role == _OUTSIDE:
            return self.by_end.get(end)
        chain = [end]
        current: FrameType | None = frame
        while role != _OUTSIDE:
            hops = 0
            while role != _OWN:  # up to the frame running the helper itself
                assert current is not None
                current = current.f_back
                hops += 1
                if current is None or hops > _MAX_HOPS:
                    return None
                role = self._role(current.f_code)
                if role == _OUTSIDE:
                    return None
            assert current is not None
            current = current.f_back  # the frame that called the helper: in this file, at a helper call
            if current is None:
                return None
            end, role = self._end(current)
            if end is None or role == _OTHER_FILE:
                return None
            chain.append(end)
        return self.by_chain.get(tuple(reversed(chain)))

    # -- one frame

    def _code(self, code: CodeType) -> tuple[tuple[tuple[int | None, ...], ...], int]:
        known = self._codes.get(code)
        if known is None:
            role = _OTHER_FILE
            if code.co_filename == self.file:
                role = _OUTSIDE
                first = code.co_firstlineno
                for name, start, stop in self.helpers:
                    if start <= first <= stop:
                        role = _OWN if first == start and code.co_name == name else _INNER
                        break
            known = (tuple(code.co_positions()) if role != _OTHER_FILE else (), role)
            self._codes[code] = known
        return known

    def _role(self, code: CodeType) -> int:
        return self._code(code)[1]

    def _end(self, frame: FrameType) -> tuple[Position | None, int]:
        """Where the call expression `frame` is executing ends, and how its code stands to the helpers."""
        positions, role = self._code(frame.f_code)
        if role == _OTHER_FILE:
            return None, role
        index = frame.f_lasti // 2
        if 0 <= index < len(positions):
            _, end_line, _, end_col = positions[index]
            if end_line is not None and end_col is not None:
                return (end_line, end_col), role
        return None, role
