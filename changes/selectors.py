"""Reads of the declared state: what the company's data files declare."""
from __future__ import annotations

from connectors.errors import ConfigError, Problem, ProblemKind
from runs.config.datafiles import DataFiles, read_datafiles
from runs.config.registry import get_config


def declared_resources() -> DataFiles:
    """The data files of this process's config root, read against its connectors' resource types.

    Raises `ConfigError` when the config cannot be resolved, or has no root to read."""
    config = get_config()
    if config.root is None:
        raise ConfigError([Problem("the config has no root folder, so it has no data files",
                                   kind=ProblemKind.ROOT)])
    return read_datafiles(config.root, config.connectors)
