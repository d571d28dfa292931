"""The company's data files: what its vendors should hold, declared in `resources/` and read
without running them. See `changes.datafiles.reader` for the forms a data file may use."""
from changes.datafiles.reader import (
    DataFiles,
    DeclaredResource,
    FileProblem,
    data_files,
    read_datafiles,
    types_of,
)

__all__ = ["DataFiles", "DeclaredResource", "FileProblem", "data_files", "read_datafiles", "types_of"]
