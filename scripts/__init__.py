"""Scripts of ./test and ./demo; scripts/suite_lanes.py is imported by the root conftest."""
