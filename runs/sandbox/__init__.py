"""Sandbox runs: a workflow run against its connectors' fakes, seeded from one of the company's
scenarios, never reaching a real driver.

- `services.start_sandbox`: the scenario's `Given` steps seed fresh fakes, its `When` starts the run
  (as the operator who asks), and the fakes' books are kept with the run (`models.SandboxRun`).
- `fakes.SandboxFakes`: the fakes one advance of a sandbox run calls, loaded from the run's books
  and saved back with each step the engine writes (`runs.engine.segment`).
- `checks.evaluate`: the scenario's `Then` steps against the run's outcome and its fakes, once the
  run has ended, each kept as passed or failed.
"""
