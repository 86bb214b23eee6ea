"""The type of every path a command takes: an empty argument (`--results ""`, a script's unset variable) is
refused by the parser, since `Path("")` is ".", the folder you stand in, never what was meant."""

from __future__ import annotations

import argparse
from pathlib import Path


def given_path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty path (read as '.', the folder you stand in); give a file or folder"
        )
    return Path(text)
