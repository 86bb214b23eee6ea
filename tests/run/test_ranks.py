"""What a DDP run collects from every rank (peak VRAM per card, load windows), through a real gloo group."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from harness.run.ranks import gathered, load_windows


def _rank(rank: int, store: str, results: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        values = gathered((rank * 10.0, rank * 10.0 + 4.0))
        Path(results, f"rank-{rank}.txt").write_text(repr(values))
    finally:
        dist.destroy_process_group()


def test_every_rank_gets_every_ranks_value_in_rank_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # loopback: the sandbox may have no other interface
    mp.spawn(_rank, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=2, join=True)
    expected = repr([(0.0, 4.0), (10.0, 14.0)])
    assert (tmp_path / "rank-0.txt").read_text() == expected
    assert (tmp_path / "rank-1.txt").read_text() == expected


def test_outside_ddp_it_is_this_process_value_alone() -> None:
    assert not dist.is_initialized()
    assert gathered(7) == [7]


def test_load_windows_count_from_the_first_start() -> None:
    assert load_windows([(1000.5, 1004.6), (1004.6, 1008.76)]) == [[0.0, 4.1], [4.1, 8.26]]
    assert load_windows([(1004.6, 1008.7), (1000.5, 1004.6)]) == [[4.1, 8.2], [0.0, 4.1]]  # rank order kept
    with pytest.raises(ValueError):
        load_windows([])
