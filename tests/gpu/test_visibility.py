"""iGPU hiding over recorded rocminfo output (see tests/data/gpu/README.md for the samples' source)."""

from __future__ import annotations

from pathlib import Path

from harness.gpu.visibility import describe_hidden, gpu_agents, hidden_integrated_gpus, parse_rocminfo

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def agents(name: str) -> list[dict[str, str]]:
    return parse_rocminfo((DATA / name).read_text())


def test_parser_reads_top_level_fields_not_isa_names() -> None:
    parsed = agents("rocminfo-7900xtx-igpu.txt")
    assert [a["Device Type"] for a in parsed] == ["CPU", "GPU", "GPU"]
    assert [a["Name"] for a in gpu_agents(parsed)] == ["gfx1100", "gfx1036"]


def test_desktop_igpu_is_hidden_behind_the_discrete_card() -> None:
    assert hidden_integrated_gpus(agents("rocminfo-7900xtx-igpu.txt")) == "0"
    assert "1:gfx1036" in (describe_hidden(agents("rocminfo-7900xtx-igpu.txt")) or "")


def test_igpu_between_two_cards_keeps_both_cards() -> None:
    assert hidden_integrated_gpus(agents("rocminfo-2x7900xtx-igpu.txt")) == "0,2"


def test_strix_halo_apu_is_the_main_gpu_and_stays_visible() -> None:
    parsed = agents("rocminfo-strix-halo.txt")
    assert [a["Name"] for a in gpu_agents(parsed)] == ["gfx1151"]
    assert hidden_integrated_gpus(parsed) is None
    assert describe_hidden(parsed) is None
