"""How the desk says when something happens: the largest unit that fits, counted to the nearest."""
from __future__ import annotations

from datetime import timedelta

import pytest

from runs.display import relative
from runs.engine import clock

NBSP = "\u00a0"


@pytest.mark.parametrize(("offset", "said"), [
    (timedelta(seconds=-30), f"in 1{NBSP}minute"),  # still to come: "just now" is only said of the past
    (timedelta(seconds=-50), f"in 1{NBSP}minute"),
    (timedelta(seconds=30), "just now"),
    (timedelta(minutes=3, seconds=10), f"3{NBSP}minutes ago"),
    (timedelta(seconds=90), f"2{NBSP}minutes ago"),
    (timedelta(hours=2, minutes=1), f"2{NBSP}hours ago"),
    (timedelta(hours=-47, minutes=-59), f"in 2{NBSP}days"),  # a 48-hour wait is not "in 1 day"
    (timedelta(hours=-25), f"in 1{NBSP}day"),
    (timedelta(days=-10), f"in 1{NBSP}week"),
    (timedelta(days=45), f"2{NBSP}months ago"),
])
def test_a_moment_is_said_in_its_largest_unit_to_the_nearest_whole_one(offset, said):
    assert relative(clock.now() - offset) == said
