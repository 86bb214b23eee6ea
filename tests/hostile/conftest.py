"""The hostile tables' fixtures (helpers live in `hostilelib`, a uniquely named module)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The real SmolLM2 GGUF the preset ships (cases cut it short to make a truncated download)."""
    from harness.errors import UserError
    from harness.models import preset_gguf

    try:
        return preset_gguf("smollm2-135m")
    except UserError as exc:
        pytest.skip(str(exc))
