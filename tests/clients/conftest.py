"""The client libraries are tested from their sources, as a newcomer's checkout has them: the
Python one is importable without installing it."""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python" / "src"
if str(PYTHON_CLIENT) not in sys.path:
    sys.path.insert(0, str(PYTHON_CLIENT))
