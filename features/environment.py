"""behave's environment for `manage.py behave` (behave-django): the company's scenarios and the
runtime's own features, on the company config with every connector on its fake.

The hooks live in `features.library.behave_support`; see its docstring for what each does.
"""
from features.library.behave_support import (  # noqa: F401  (behave finds hooks by name)
    after_all,
    after_scenario,
    before_all,
    before_feature,
    before_scenario,
    before_step,
    django_ready,
)
