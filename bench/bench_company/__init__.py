"""The bench's own config root (`bench/engine.py`): one trivial vendor op, workflows of N calls.

Its fake stays in memory even when `SANOMA_FAKES=instance` hands it a file: the bench measures
the engine, not a JSON file rewritten on every call.
"""
