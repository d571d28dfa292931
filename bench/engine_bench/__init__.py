"""The measures `bench/engine.py` runs, a module each: the database and (a) the bare insert, (b)/(e)
the engine in this process, (c)/(f) a real worker, (d) DBOS, (g) a step's anatomy, (h) the hash chain,
(i)/(j) collection puts and messages; and bench/scale.py's worker series (`scaling`) and claim
under a long read (`long_read`), with what both share (`figures`, `setup`). See the scripts'
docstrings for what each measures."""
