"""The measures `bench/engine.py` runs, a module each: the database and (a) the bare insert, (b)/(e)
the engine in this process, (c)/(f) a real worker, (d) DBOS, (g) a step's anatomy, (h) the hash chain,
(i)/(j) collection puts and messages. See the script's docstring for what each measures."""
