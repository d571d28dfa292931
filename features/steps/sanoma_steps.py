"""The one behave step: every step text goes to sanoma's step library, which matched it when the
scenario was read (so an unknown or ambiguous step fails before the scenario runs, naming its
file and line and listing the steps there are). Add steps with step sets, not behave decorators:
see `features.library.stepsets`."""
from behave import step, use_step_matcher

from features.library.behave_support import sanoma_step

use_step_matcher("re")
step(r".*")(sanoma_step)
use_step_matcher("parse")
