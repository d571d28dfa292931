"""The company's data files: what its vendors should hold, declared in `resources/` and read
without running them. See `runs.config.datafiles.reader` for the forms a data file may use.

- `results`: what a read answers (`DataFiles`, `DeclaredResource`, `FileProblem`) and which files
  are data files;
- `reader`: the read, and its first phase (statements, imports, names);
- `values`: each declaration's type and values; `references`: imports and references followed, and
  the whole set checked;
- `state`: what the phases share while reading.
"""
from runs.config.datafiles.reader import read_datafiles
from runs.config.datafiles.results import DataFiles, DeclaredResource, FileProblem, data_files, types_of

__all__ = ["DataFiles", "DeclaredResource", "FileProblem", "data_files", "read_datafiles", "types_of"]
