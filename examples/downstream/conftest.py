"""The project's conftest: nothing rlconform needs (its plugin loads from its entry point); it
only makes the project's package importable when the tests run from a checkout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
