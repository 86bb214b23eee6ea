"""Timed phases are offline by construction: the trainer child gets these variables, so nothing
in it can start a download (fetch first, with `lorabench fetch`)."""

from __future__ import annotations


def offline_env() -> dict[str, str]:
    """Variables to merge into the timed child's environment."""
    return {
        "HF_HUB_OFFLINE": "1",  # huggingface_hub: cache only, never the network
        "HF_DATASETS_OFFLINE": "1",  # datasets: cache only
        "TRANSFORMERS_OFFLINE": "1",  # transformers < 5 read this one
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
        "WANDB_MODE": "offline",  # TRL reports to wandb when it is installed
        "DO_NOT_TRACK": "1",  # honoured by several libraries' usage statistics
    }
