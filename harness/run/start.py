"""Where a run starts: on this host (harness.run.parent) or across several (harness.run.nodes), as the
setup's `nodes` says. `lorabench run` and the suite start every run here."""

from __future__ import annotations

from pathlib import Path

from harness.config import SetupConfig
from harness.results import RunRecord
from harness.run.nodes import Nodes
from harness.run.parent import OneHost
from harness.run.supervisor import RunOptions, supervise


def run_on_hosts(setup: SetupConfig, options: RunOptions) -> tuple[RunRecord, Path]:
    return supervise(Nodes() if setup.nodes > 1 else OneHost(), setup, options)
