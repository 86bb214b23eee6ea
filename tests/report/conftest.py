from __future__ import annotations

import sys
from pathlib import Path

# The record builders live beside the tests; make them importable as `builders`.
sys.path.insert(0, str(Path(__file__).resolve().parent))
