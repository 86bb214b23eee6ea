"""Recorded hosts (tests/data/gpu/hosts/<host>/, sources in tests/data/gpu/README.md) as `HostFacts`,
through the same parsers and KFD reader the live doctor uses. Importable under a name no other test
folder uses."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.doctor.facts import (
    HostFacts,
    TorchFacts,
    parse_id,
    parse_meminfo,
    parse_nvidia_query,
    parse_stat,
)
from harness.gpu.arch import read_kfd_gfx

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
HOSTS = DATA / "hosts"
GIB = 2**30


def load_host(name: str, tmp_path: Path, **changes: Any) -> HostFacts:
    folder = HOSTS / name
    spec = json.loads((folder / "host.json").read_text())
    # KFD's topology tree, built from the recorded properties files, read by harness/gpu/arch.py.
    nodes_dir = tmp_path / "kfd" / "nodes"
    for index, props in enumerate(spec.get("kfd", [])):
        (nodes_dir / str(index)).mkdir(parents=True)
        (nodes_dir / str(index) / "properties").write_text((DATA / "kfd" / props).read_text())
    torch = spec.get("torch") or json.loads((folder / spec["torch_file"]).read_text())
    facts = HostFacts(
        env=spec.get("env", {}),
        identity=parse_id((folder / "id.txt").read_text()),
        nodes=parse_stat((folder / "stat.txt").read_text()),
        rocminfo=(DATA / spec["rocminfo"]).read_text() if "rocminfo" in spec else None,
        kfd_gfx=tuple(read_kfd_gfx(nodes_dir)),
        rocm_version=spec.get("rocm_version"),
        nvidia=parse_nvidia_query((folder / spec["nvidia"]).read_text()) if "nvidia" in spec else None,
        torch=TorchFacts(
            torch["version"],
            torch["hip"],
            torch["cuda"],
            tuple(torch["arch_list"]),
            torch["device_count"],
            tuple(torch["device_names"]),
        ),
        meminfo=parse_meminfo((folder / "meminfo.txt").read_text()),
        disks={"results": ("results", 200 * GIB)},
    )
    return replace(facts, **changes)


def with_torch(facts: HostFacts, **changes: Any) -> HostFacts:
    assert facts.torch is not None
    return replace(facts, torch=replace(facts.torch, **changes))
