"""Staggered loading is per host: on several nodes each node's ranks load one after another, while nodes
load at once (their RAM is their own)."""

from __future__ import annotations

import pytest

from harness.results import RankInfo, RunRecord, Timings
from harness.suite import claims


def record(windows: dict[int, list[list[float]]]) -> RunRecord:
    ranks = [
        RankInfo(rank=i, local_rank=j, node=node, hostname=f"box{node}", device="cuda:0", load_window=w)
        for i, (node, j, w) in enumerate(
            (n, j, w) for n, ws in sorted(windows.items()) for j, w in enumerate(ws)
        )
    ]
    return RunRecord(
        run_id="r", status="ok", created="2026-12-01T00:00:00+00:00", experiment="exp_c", setup_name="s", seed=1,
        stack="cpu", host="h", fingerprint="f", setup={}, provenance={}, ranks=ranks,
        timings=Timings(load_windows=[r.load_window for r in ranks]),
    )  # fmt: skip


def test_each_node_staggers_its_own_ranks() -> None:
    # Both nodes load at 0 s: fine, other hosts. Within each node the second rank waits for the first.
    both = record({0: [[0.0, 4.0], [4.1, 8.0]], 1: [[0.0, 3.9], [4.0, 7.8]]})
    assert claims.check_loads_staggered(both).status == "pass"
    overlapping = record({0: [[0.0, 4.0], [4.1, 8.0]], 1: [[0.0, 3.9], [2.0, 6.0]]})
    outcome = claims.check_loads_staggered(overlapping)
    assert outcome.status == "fail" and "[0.00, 3.90] s and [2.00, 6.00] s" in outcome.measured


def test_one_rank_per_node_has_nothing_to_stagger() -> None:
    outcome = claims.check_loads_staggered(record({0: [[0.0, 4.0]], 1: [[0.0, 4.1]]}))
    assert outcome.status == "not evaluable" and "one rank per node" in outcome.measured


def test_one_node_keeps_its_old_judgment() -> None:
    assert claims.check_loads_staggered(record({0: [[0.0, 4.0], [4.1, 8.0]]})).status == "pass"
    assert claims.check_loads_staggered(record({0: [[0.0, 4.0], [3.0, 8.0]]})).status == "fail"
    with pytest.raises(claims.NotEvaluable):
        claims.require(claims.check_loads_staggered(record({0: [[0.0, 4.0]]})))
