"""The pre-check before every timed phase: watch the machine for a short window, refuse if noisy."""

from __future__ import annotations

import time

from harness.guard.config import GuardConfig
from harness.guard.hostview import host_view
from harness.guard.readings import excluded_pids, instant_readings, take_snapshot, windowed_readings
from harness.guard.verdict import GuardVerdict


def precheck(config: GuardConfig, *, exclude_pids: set[int] | None = None) -> GuardVerdict:
    """Readings over `config.window_s`; `reason` names the first failed one and the --allow-noisy fix.

    Blocks for the window (3 s by default). Processes in the caller's own tree are never noise.
    """
    before = take_snapshot(config)
    time.sleep(config.window_s)
    after = take_snapshot(config)
    exclude = excluded_pids(after, exclude_pids)
    readings = windowed_readings(before, after, config, exclude) + instant_readings(config, exclude)
    return GuardVerdict.from_readings(readings, host_view=host_view().to_dict())
