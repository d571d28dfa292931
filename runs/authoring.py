"""What a company's files import: plain Python, no database needed to read them."""
from runs.config.resolution import SanomaConfig
from runs.config.workflows import Approved, NoInput, define_workflow
from connectors.errors import error_code

__all__ = ["Approved", "NoInput", "SanomaConfig", "define_workflow", "error_code"]
