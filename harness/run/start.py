"""Where a run starts: on this host (harness.run.parent) or across several (harness.run.nodes), as the
setup's `nodes` says. `lorabench run` and the suite start every run here."""

from __future__ import annotations

from pathlib import Path

from harness.config import SetupConfig
from harness.results import RunRecord
from harness.run.nodes import run_on_nodes
from harness.run.parent import RunOptions, run_setup


def run_on_hosts(setup: SetupConfig, options: RunOptions) -> tuple[RunRecord, Path]:
    return run_on_nodes(setup, options) if setup.nodes > 1 else run_setup(setup, options)
