"""The front door: every name a company's files need, in one place.

    from runs.authoring import Ctx, define_workflow                      # a workflow
    from runs.authoring import define_connector, op, with_setup, ...     # a connector, its driver and fake
    from runs.authoring import person, group, secret                    # a data file under resources/
    from runs.authoring import SanomaConfig, define_collection, wakeup   # sanoma_config.py

Plain Python: importing it loads no Django model and needs no database, so a workflow file can be
read, linted and outlined anywhere. The engine's own types stay importable from their modules
(`runs.config.workflows.Approved`, `connectors.resources.Observed`, `runs.policies.PolicyCall`,
...) but are not part of what an author needs.

The names, by what they are for:

- workflows: `define_workflow`, `Ctx` (annotate `run(ctx: Ctx, input: MyInput)`), and the triggers
  `Schedule(cron=..., timezone=...)` and `Every("15m")`;
- connectors: `define_connector`, `op`, `Retry`, `Limit` (a rate and concurrency across workers),
  `VendorInfo`, `define_resource`, and the halves
  attached with `with_setup`: `define_driver` (its functions get a `CallContext`) and
  `define_fake`;
- the config: `SanomaConfig`, `define_collection` (the company's own records), `SPEND_STEPS` (the
  scenario steps that say what was spent, for `SanomaConfig(steps=...)`);
- Python policies (instead of Cedar files): `define_policy`, with `allow`, `deny`, `approve`;
- data files and sanoma's own declarations: `person`, `group`, `local` (this machine as a deploy
  target), `secret` (a value kept out of the repo), and `wakeup` (in `sanoma_config.py`'s `wakeups`);
- errors: `SanomaError` (what a workflow catches; `error_code(err)` is its code, e.g.
  `"wait_timed_out"`) and `DriverError` (what a driver or a fake raises when the vendor says no).
"""
from typing import TYPE_CHECKING

from connectors.drivers import CallContext, define_driver
from connectors.errors import DriverError, SanomaError, error_code
from connectors.fakes import define_fake
from connectors.limits import Limit
from connectors.operations import Retry, VendorInfo, define_connector, op, with_setup
from connectors.resources import define_resource
from runs.collections.definition import define_collection
from runs.config.resolution import SanomaConfig
from runs.config.workflows import Every, Schedule, define_workflow
from runs.ctx import Ctx
from runs.declarations import group, local, person, secret, wakeup
from runs.policies.python_policies import allow, approve, define_policy, deny

if TYPE_CHECKING:  # loaded on first use at run time: see __getattr__
    from runs.spend.steps import SPEND_STEPS

__all__ = [
    # workflows
    "Ctx",
    "Every",
    "Schedule",
    "define_workflow",
    # connectors, their drivers and fakes
    "CallContext",
    "Limit",
    "Retry",
    "VendorInfo",
    "define_connector",
    "define_driver",
    "define_fake",
    "define_resource",
    "op",
    "with_setup",
    # the config
    "SanomaConfig",
    "define_collection",
    "SPEND_STEPS",
    # Python policies
    "allow",
    "approve",
    "define_policy",
    "deny",
    # data files and sanoma's own declarations
    "group",
    "local",
    "person",
    "secret",
    "wakeup",
    # errors
    "DriverError",
    "SanomaError",
    "error_code",
]


def __getattr__(name: str) -> object:
    # The spend steps read the database: loaded on first use, so the front door imports without Django.
    if name == "SPEND_STEPS":
        from runs.spend.steps import SPEND_STEPS

        return SPEND_STEPS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
