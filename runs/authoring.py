"""What a workflow author imports: plain Python, no database needed to read a workflow file.

    from runs.authoring import SanomaConfig, define_collection, define_workflow

Connector authors import from `connectors`; policy authors from `runs.policies`.
"""
from connectors.errors import ErrorCode, SanomaError, error_code
from runs.collections.definition import Collection, define_collection
from runs.config.resolution import SanomaConfig
from runs.config.workflows import Approved, Every, NoInput, Schedule, define_workflow

__all__ = ["Approved", "Collection", "ErrorCode", "NoInput", "SanomaConfig", "SanomaError", "define_collection",
           "define_workflow", "error_code", "Every", "Schedule"]
