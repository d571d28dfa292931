import sys
from pathlib import Path

# The project root, so `connectors` and `runs.policies` import however pytest is started.
ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
