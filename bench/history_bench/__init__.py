"""The workflows and helpers of `bench/scale_history.py`."""
