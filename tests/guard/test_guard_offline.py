"""Timed phases are offline by construction: with offline_env, hub calls never try the network."""

from __future__ import annotations

import subprocess
from pathlib import Path

from guardlib import PYTHON, child_env

from harness.guard import offline_env

# Asks the hub for a file that is not cached, and prints the error's type.
HUB_CALL = """
from huggingface_hub import hf_hub_download
try:
    hf_hub_download("HuggingFaceTB/SmolLM2-135M", "config.json")
except Exception as exc:
    print(type(exc).__name__, type(exc.__cause__).__name__)
"""


def test_offline_variables() -> None:
    env = offline_env()
    assert env["HF_HUB_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"


def test_hub_call_in_a_child_never_tries_the_network(hermetic: list[str], tmp_path: Path) -> None:
    # Run where there is no network at all, so nothing could leave even if the variables failed;
    # OfflineModeIsEnabled (not a connection error) shows the library never tried.
    done = subprocess.run(
        ["unshare", "--net", PYTHON, "-c", HUB_CALL],
        capture_output=True,
        text=True,
        env=child_env(HF_HOME=str(tmp_path / "hf"), **offline_env()),
        timeout=60,
    )
    assert done.stdout.split() == ["LocalEntryNotFoundError", "OfflineModeIsEnabled"], (
        done.stdout + done.stderr
    )
