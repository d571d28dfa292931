"""Step expressions (Cucumber Expressions through the `cucumber-expressions` package): every step
form features/README.md lists matches the rule it should, with the values its step gets; optional
text, alternatives and escapes; operation phrases and step sets; expressions the library refuses."""
from __future__ import annotations

import dataclasses
import re
from datetime import timedelta

import pytest

from connectors.operations import Phrases
from features.library import ScenarioConfigError, ScenarioProblem, StepLibrary, StepSet
from features.library.expressions import (
    ExpressionError,
    compile_expression,
    phrase_expression,
    regex_expression,
    step_types,
    values,
)
from features.library.library import StepText
from features.tests.support import make_root
from runs.config.resolution import load_config


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return load_config(make_root(tmp_path_factory.mktemp("expressions"), {}), fakes="instance")


@pytest.fixture(scope="module")
def library(config):
    """The generic steps and the desk's phrases, without the desk's step set."""
    return StepLibrary(dataclasses.replace(config, connectors=[], steps=[]))


def matched(library, kind, text):
    rule, arguments = library.match(StepText(name=text, step_type=kind))
    return rule.source, values(arguments)


# (keyword, step text, the expression it matches, the values its step gets)
FORMS = [
    ("given", "desk.ticket.open was called with", "{op} was called with", ["desk.ticket.open"]),
    ("given", "desk.ticket.open fails once", "{op} fails once", ["desk.ticket.open"]),
    ("given", "desk.ticket.close is rate limited once", "{op} is rate limited once", ["desk.ticket.close"]),
    ("given", "desk.ticket.open loses its reply once", "{op} loses its reply once", ["desk.ticket.open"]),
    ("given", 'sam is in group "security"', "{who} is in group {string}", ["sam", "security"]),
    ("given", 'sam is in groups "staff, support"', "{who} is in groups {string}", ["sam", "staff, support"]),
    ("given", "the run is started by walk-in", "the run is started by {who}", ["walk-in"]),
    ("given", "the desk's state at \"tickets\" is", "(the ){vendor}'s state at {string} is", ["desk", "tickets"]),
    ("given", "desk's state at 'tickets' is", "(the ){vendor}'s state at {string} is", ["desk", "tickets"]),
    ("given", "the desk's state at \"tickets.0.title\" is paper jam",
     "(the ){vendor}'s state at {string} is {value}", ["desk", "tickets.0.title", "paper jam"]),
    ("given", "the desk's state at \"count\" is 5", "(the ){vendor}'s state at {string} is {value}",
     ["desk", "count", 5]),
    ("when", "triage runs", "{workflow} runs", ["triage"]),
    ("when", "two-approvals runs with", "{workflow} runs with", ["two-approvals"]),
    ("given", '"Final check" is approved by boss', "{string} is approved by {who}", ["Final check", "boss"]),
    ("when", '"approval-2" is rejected by lawyer', "{string} is rejected by {who}", ["approval-2", "lawyer"]),
    ("then", '"Final check" is approved by boss with note "fine"',
     "{string} is approved by {who} with note {string}", ["Final check", "boss", "fine"]),
    ("given", "'Legal review' is rejected by lawyer with note 'say \\'no\\''",
     "{string} is rejected by {who} with note {string}", ["Legal review", "lawyer", "say 'no'"]),
    ("when", "2 days pass", "{duration} pass/passes", [timedelta(days=2)]),
    ("when", "1 day passes", "{duration} pass/passes", [timedelta(days=1)]),
    ("then", "an hour passes", "{duration} pass/passes", [timedelta(hours=1)]),
    ("given", "90 seconds pass", "{duration} pass/passes", [timedelta(seconds=90)]),
    ("when", "1.5 weeks pass", "{duration} pass/passes", [timedelta(weeks=1.5)]),
    ("then", "desk.ticket.open was called with", "{op} was called with", ["desk.ticket.open"]),
    ("then", "desk.ticket.open was called", "{op} was called", ["desk.ticket.open"]),
    ("then", "desk.ticket.close was not called", "{op} was not called", ["desk.ticket.close"]),
    ("then", "the run succeeds", "the run succeeds", []),
    ("then", "the run fails", "the run fails", []),
    ("then", 'the run fails with "policy_denied"', "the run fails with {string}", ["policy_denied"]),
    ("then", "the run is waiting", "the run is waiting", []),
    ("then", "the run's output contains", "the run's output contains", []),
    ("then", 'the ledger shows "sleep.started"', "the ledger shows {string}", ["sleep.started"]),
    ("then", 'the ledger shows "op.called" 1 time', "the ledger shows {string} {int} time(s)", ["op.called", 1]),
    ("then", 'the ledger shows "op.called" 3 times', "the ledger shows {string} {int} time(s)", ["op.called", 3]),
    ("then", 'the ledger does not show "sleep.started"', "the ledger does not show {string}", ["sleep.started"]),
    ("then", 'the ledger shows "op.called" with', "the ledger shows {string} with", ["op.called"]),
    ("then", "the ledger shows, in order:", "the ledger shows, in order:", []),
    ("then", "the desk's state at \"tickets\" is", "(the ){vendor}'s state at {string} is", ["desk", "tickets"]),
    ("then", 'the desk\'s state at "tickets.0.closed" is true', "(the ){vendor}'s state at {string} is {value}",
     ["desk", "tickets.0.closed", True]),
    ("then", 'the desk\'s state at "tickets" has 1 item', "(the ){vendor}'s state at {string} has {int} item(s)",
     ["desk", "tickets", 1]),
    ("then", 'desk\'s state at "tickets" has 0 items', "(the ){vendor}'s state at {string} has {int} item(s)",
     ["desk", "tickets", 0]),
    ("then", "the desk's state contains", "(the ){vendor}'s state contains", ["desk"]),
    ("then", "desk.ticket.open reached the vendor 1 time", "{op} reached the vendor {int} time(s)",
     ["desk.ticket.open", 1]),
    ("then", "desk.ticket.open reached the vendor 2 times", "{op} reached the vendor {int} time(s)",
     ["desk.ticket.open", 2]),
    # the desk's phrases: `{title}` is a quoted text or one word
    ("given", "a ticket printer is open", "a ticket {title} is open", ["printer"]),
    ("given", 'a ticket "paper jam" is open', "a ticket {title} is open", ["paper jam"]),
    ("then", "ticket 007 was opened", "ticket {title} was opened", ["007"]),
]


@pytest.mark.parametrize(("kind", "text", "source", "expected"), FORMS, ids=[f"{k} {t}" for k, t, _, _ in FORMS])
def test_every_step_form_matches_its_rule(library, kind, text, source, expected):
    assert matched(library, kind, text) == (source, expected)


@pytest.mark.parametrize(("kind", "text"), [
    ("when", "2 days passed"),  # neither alternative
    ("then", 'the ledger shows "op.called" 3 timez'),
    ("then", "the ledger shows, in order"),  # the colon is part of the step
    ("then", "desk.ticket.open was called twice"),
    ("given", "the run succeeds"),  # a Then step under Given
    ("then", "the  run succeeds"),  # spaces are text too
    ("given", "a ticket paper jam is open"),  # a field of two words needs quotes
])
def test_near_misses_match_no_step(library, kind, text):
    with pytest.raises(ScenarioProblem) as caught:
        library.match(StepText(name=text, step_type=kind))
    assert str(caught.value).startswith(f'no step matches "{kind.capitalize()} {text}"\nThe steps there are:')


def test_a_type_refuses_a_value_when_the_step_is_read(library):
    source, _ = matched(library, "given", "desk.ticket.close fails once")
    rule, arguments = library.match(StepText(name="desk.ticket.burn fails once", step_type="given"))
    assert rule.source == source == "{op} fails once"
    with pytest.raises(ScenarioProblem, match='no operation "desk.ticket.burn"; the config has desk.ticket.close, '
                                              "desk.ticket.open"):
        values(arguments)
    _, arguments = library.match(StepText(name="group:staff is in group \"staff\"", step_type="given"))
    with pytest.raises(ScenarioProblem, match="group:staff is a group; a scenario acts as a person"):
        values(arguments)


def test_optional_text_and_alternatives():
    expression = compile_expression("{int} day(s) pass/passes", step_types())
    assert values(expression.match("1 day passes")) == [1]
    assert values(expression.match("3 days pass")) == [3]
    assert expression.match("3 dayss pass") is None
    assert expression.match("3 weeks pass") is None
    assert expression.match("3 days pass by") is None  # the whole text, not a prefix
    either = compile_expression("{int} ticket(s) is/are open", step_types())
    assert [values(either.match(t)) for t in ("1 ticket is open", "2 tickets are open")] == [[1], [2]]
    # optional text may hold a space; alternatives are words, between spaces
    state = compile_expression("(the )shop's order(s) is/are paid", step_types())
    assert [state.match(t) for t in ("the shop's order is paid", "shop's orders are paid")] == [[], []]
    assert [state.match(t) for t in ("the  shop's order is paid", "the shop's order is/are paid",
                                     "the shop's order paid")] == [None, None, None]


def test_escapes_make_special_characters_text():
    expression = compile_expression(r"costs \{x\} \(in cents\) a\/b {string}", step_types())
    assert values(expression.match('costs {x} (in cents) a/b "a \\"b\\""')) == ['a "b"']
    assert expression.match('costs x in cents a "q"') is None


def test_the_builtin_types_of_the_package():
    types = step_types()
    found = compile_expression("{word} {float} {} {int}", types).match("mug 2.5 any text at all -3")
    assert values(found) == ["mug", 2.5, "any text at all", -3]


@pytest.mark.parametrize(("source", "problem"), [
    ("{nope} happens", "Undefined parameter type 'nope'."),
    ("the (shop is closed", "The '(' does not have a matching ')'."),
    ("the {int is", "The '{' does not have a matching '}'."),
    ("a () b", "An optional must contain some text."),
    ("a (day {int}) b", "An optional may not contain a parameter type."),
    ("pass/ now", "Alternative may not be empty."),
    (r"a \q", "Only the characters '{', '}', '(', ')', '\\', '/' and whitespace can be escaped."),
])
def test_a_bad_expression_is_refused_with_where_and_why(source, problem):
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source, step_types())
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("This Cucumber Expression has a problem at column ")
    assert lines[2] == source and "^" in lines[3]
    assert problem in lines


def test_an_unknown_type_lists_the_types_there_are(library):
    with pytest.raises(ExpressionError) as caught:
        compile_expression("{person} waits", library.types)
    message = str(caught.value)
    assert "Undefined parameter type 'person'." in message and "register" not in message, message
    listing = message.splitlines()[-1]
    assert listing.startswith("The parameter types are {}, ") and listing.endswith(".")
    for name in ("op", "workflow", "who", "vendor", "string", "int", "value", "duration"):
        assert f"{{{name}}}" in listing, listing


def test_a_phrase_holds_its_fields_in_order():
    expression, names = phrase_expression("{customer} was told {subject} at {customer}")
    assert names == ["customer", "subject", "customer"]
    assert values(expression.match('ada@example.com was told "Hi there" at x')) == ["ada@example.com", "Hi there", "x"]
    with pytest.raises(ExpressionError, match="The '{' does not have a matching '}'"):
        phrase_expression("order {order_id exists")


def _with_phrase(config, **phrases):
    op = config.ops["desk.ticket.open"]
    ops = {**config.ops, "desk.ticket.open": dataclasses.replace(op, phrases=Phrases(**phrases))}
    return dataclasses.replace(config, ops=ops, connectors=[], steps=[])


def test_a_phrase_naming_a_field_the_input_lacks_stops_the_library(config):
    with pytest.raises(ScenarioConfigError) as caught:
        StepLibrary(_with_phrase(config, given="a ticket {subject} is open for {owner}",
                                 expect="ticket {title} was opened"))
    assert caught.value.problems == [
        'desk.ticket.open: its given phrase "a ticket {subject} is open for {owner}" names {subject}, which is not '
        "a field of its input (its fields are title, priority, urgent)",
        'desk.ticket.open: its given phrase "a ticket {subject} is open for {owner}" names {owner}, which is not '
        "a field of its input (its fields are title, priority, urgent)",
    ]
    assert str(caught.value).startswith("No scenario can be read: the config's scenario steps are broken:\n- ")


def test_a_phrase_that_cannot_be_read_stops_the_library_and_points_at_the_problem(config):
    with pytest.raises(ScenarioConfigError) as caught:
        StepLibrary(_with_phrase(config, expect="ticket (title) {title} was (opened"))
    message = str(caught.value)
    assert "- desk.ticket.open: its expect phrase cannot be read: " \
        "This Cucumber Expression has a problem at column 28:" in message, message
    # the phrase and the pointer under its unclosed ( stay aligned under the dash
    assert "\n  ticket (title) {title} was (opened\n  " + " " * 27 + "^\n" in message, message


def test_a_phrase_value_follows_its_field_type(config):
    library = StepLibrary(_with_phrase(config, expect="ticket {title} has priority {priority}"))
    rule, arguments = library.match(StepText(name='ticket "paper jam" has priority 3', step_type="then"))
    assert rule.group == "desk.ticket.open" and values(arguments) == ["paper jam", "3"]


def test_step_set_expressions_use_the_library_types(config):
    steps = StepSet("extra")
    steps.then("{workflow} took {duration} for {who}")(lambda world, *v: None)
    steps.step(re.compile(r"(?i)(\d+) tickets? (?:is|are) closed"))(lambda world, n: None)
    steps.given(re.compile(r"(\w+) \s owns \s it  # a comment", re.VERBOSE | re.IGNORECASE))(lambda world, who: None)
    library = StepLibrary(dataclasses.replace(config, connectors=[], steps=[steps]))
    assert matched(library, "then", "triage took 2 hours for kim") == (
        "{workflow} took {duration} for {who}", ["triage", timedelta(hours=2), "kim"])
    # a regex matches the whole step, any keyword; each group is text
    assert matched(library, "given", "3 Tickets ARE closed") == (r"(?i)(\d+) tickets? (?:is|are) closed", ["3"])
    # flags given to re.compile, and a verbose regex ending in a comment
    assert matched(library, "given", "kim OWNS it") == (r"(\w+) \s owns \s it  # a comment", ["kim"])
    with pytest.raises(ScenarioProblem, match="no step matches"):
        library.match(StepText(name="3 tickets are closed today", step_type="then"))


def test_a_regex_with_named_or_nested_groups_is_refused():
    with pytest.raises(ExpressionError, match=r"name no groups \(count\)"):
        regex_expression(re.compile(r"(?P<count>\d+) tickets"))
    with pytest.raises(ExpressionError, match=r"a group holds another group; make the inner one \(\?:\.\.\.\)"):
        regex_expression(re.compile(r"((\d+) tickets) are open"))
    assert values(regex_expression(re.compile(r"((?:\d+) tickets) are (open)?")).match("2 tickets are ")) == [
        "2 tickets", None]


def test_a_step_set_with_a_bad_expression_stops_the_library(config):
    steps = StepSet("broken")
    steps.given("the shop is (closed")(lambda world: None)
    steps.then(re.compile(r"(?P<n>\d+) refunds"))(lambda world, n: None)
    with pytest.raises(ScenarioConfigError) as caught:
        StepLibrary(dataclasses.replace(config, connectors=[], steps=[steps]))
    first, second = caught.value.problems
    assert first.startswith("step set broken: This Cucumber Expression has a problem at column 13:")
    assert "The '(' does not have a matching ')'." in first
    assert second == r"step set broken: /(?P<n>\d+) refunds/: name no groups (n); the step's function gets each " \
        "group's text in order"
