"""Connectors' credentials: the variables a connector's driver needs, their statuses, and the stored
values (encrypted at rest).

- `declared`: a connector's environment model read as variables, and each variable's status;
- `crypto`: Fernet encryption with SANOMA_SECRETS_KEY;
- `runtime`: what a process uses (the engine's hooks, the cache, the watcher);
- `selectors`: reads (statuses, a secret's value, the changes log);
- `services`: writes (set, clear), one transaction each.
"""
