"""`lorabench doctor`'s checks on recorded hosts (tests/data/gpu/hosts/, sources in tests/data/gpu/README.md):
a 2x RX 7900 XTX + iGPU desktop, a Strix Halo APU, the lent H200 (recorded there, with the doctor's own
live verdict beside it) and this CPU-only machine. Each host is judged clean and with the mistake seed 1
or seed 2 actually made injected: the check must turn ✗, name the fix, and block only what it should."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hostdata import GIB, HOSTS, load_host, with_torch

from harness.doctor.facts import DockerFacts, parse_id
from harness.doctor.report import diagnose
from harness.stacks import load_stacks, verify_environment

STACKS = load_stacks()


def by_name(diagnosis) -> dict:
    return {c.name: c for c in diagnosis.checks}


def in_groups(
    facts, text: str = "uid=1000(ana) gid=1000(ana) groups=1000(ana),27(sudo),44(video),109(render)"
):
    return replace(facts, identity=parse_id(text))


# --- 2x RX 7900 XTX + iGPU -----------------------------------------------------------------------------


def test_7900xtx_box_user_outside_render_group_is_blocked_with_usermod(tmp_path: Path) -> None:
    d = diagnose(load_host("2x7900xtx-igpu", tmp_path))
    checks = by_name(d)
    assert d.accelerator == "rocm" and d.exit_status == 2
    assert d.blocking is checks["groups"]
    assert "sudo usermod -aG render,video ana" in checks["groups"].fix and "GID 109" in checks["groups"].fix
    assert checks["device nodes"].status == "fail" and "/dev/kfd" in checks["device nodes"].summary
    assert checks["GPUs torch sees"].summary == "torch sees 0 of 3 GPU(s) on this host"


def test_7900xtx_box_in_its_groups_runs_with_the_igpu_hidden(tmp_path: Path) -> None:
    facts = with_torch(in_groups(load_host("2x7900xtx-igpu", tmp_path)), device_count=3,
                       device_names=("Radeon RX 7900 XTX", "AMD Radeon Graphics", "Radeon RX 7900 XTX"))  # fmt: skip
    d = diagnose(facts)
    checks = by_name(d)
    assert d.exit_status == 0, [c for c in d.checks if c.status == "fail"]
    assert checks["GPU runtime"].summary == "ROCm 7.2.4, torch 2.9.1+rocm7.2.4 (HIP 7.2.26015)"
    assert checks["integrated GPUs"].summary.endswith(
        "will be hidden: lorabench sets HIP_VISIBLE_DEVICES=0,2 at run start"
    )
    assert checks["gfx arch"].summary == "GPUs 0: gfx1100, 2: gfx1100: torch has kernels for them"
    assert checks["device nodes"].status == "ok"


def test_7900xtx_box_with_an_empty_hip_visible_devices_is_blocked(tmp_path: Path) -> None:
    """What compose's `${HIP_VISIBLE_DEVICES:-}` used to hand every container."""
    facts = with_torch(in_groups(load_host("2x7900xtx-igpu", tmp_path)), device_count=3)
    d = diagnose(replace(facts, env={**facts.env, "HIP_VISIBLE_DEVICES": ""}))
    checks = by_name(d)
    assert d.blocking is checks["gfx arch"] and "GPU 1 is gfx1036" in checks["gfx arch"].summary
    assert (
        checks["integrated GPUs"].status == "fail"
        and "unset HIP_VISIBLE_DEVICES" in checks["integrated GPUs"].fix
    )


def test_7900xtx_box_with_the_igpu_listed_is_told_which_devices_to_keep(tmp_path: Path) -> None:
    facts = with_torch(in_groups(load_host("2x7900xtx-igpu", tmp_path)), device_count=2)
    checks = by_name(diagnose(replace(facts, env={"HIP_VISIBLE_DEVICES": "0,1"})))
    assert checks["integrated GPUs"].fix == "export HIP_VISIBLE_DEVICES=0,2"
    assert checks["gfx arch"].status == "fail" and checks["gfx arch"].blocking


# --- Strix Halo APU (published rocminfo) ------------------------------------------------------------


def test_strix_halo_without_gfx1151_kernels_is_told_the_override(tmp_path: Path) -> None:
    d = diagnose(load_host("strix-halo", tmp_path))
    checks = by_name(d)
    assert d.blocking is checks["gfx arch"]
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in checks["gfx arch"].fix
    assert (
        checks["integrated GPUs"].summary
        == "0: gfx1151 (Radeon 8060S Graphics) is the only GPU (an APU): kept visible"
    )
    # The published box: 61.4 GiB of RAM and a 64 GiB GPU pool (a UMA carve-out): the cap is not the problem.
    assert checks["memory"].status == "ok" and "64.0 GiB" in checks["memory"].summary
    assert checks["groups"].status == "ok" and checks["device nodes"].status == "ok"


def test_strix_halo_with_the_override_or_a_gfx1151_torch_can_start(tmp_path: Path) -> None:
    facts = load_host("strix-halo", tmp_path)
    override = diagnose(replace(facts, env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}))
    assert override.exit_status == 0 and "-> gfx1100" in by_name(override)["gfx arch"].summary
    native = diagnose(with_torch(facts, arch_list=(*facts.torch.arch_list, "gfx1151")))
    assert native.exit_status == 0


def test_strix_halo_with_a_low_unified_memory_cap_is_told_the_kernel_parameters(tmp_path: Path) -> None:
    """The same GPU pool on a box whose RAM is 128 GiB: the GPU may use half of it (a constructed variant)."""
    facts = load_host("strix-halo", tmp_path)
    d = diagnose(replace(facts, meminfo={"MemTotal": 128 * GIB, "MemAvailable": 120 * GIB}))
    memory = by_name(d)["memory"]
    assert memory.status == "fail" and not memory.blocking
    assert f"ttm.pages_limit={(120 * GIB) // 4096}" in memory.fix and "amdgpu.gttsize=122880" in memory.fix


# --- the lent H200 (recorded there with this doctor) -------------------------------------------------


def test_h200_replayed_matches_the_doctor_that_ran_on_it(tmp_path: Path) -> None:
    live = {c["name"]: c for c in json.loads((HOSTS / "h200" / "doctor.json").read_text())["checks"]}
    d = diagnose(load_host("h200", tmp_path))
    checks = by_name(d)
    assert d.accelerator == "cuda" and d.exit_status == 0
    for name in ("GPU runtime", "GPUs torch sees", "device nodes", "groups", "gfx arch", "integrated GPUs"):
        assert (checks[name].status, checks[name].summary) == (live[name]["status"], live[name]["summary"]), (
            name
        )
    assert checks["gfx arch"].summary.startswith("sm_90: torch has kernels for it")
    assert checks["memory"].summary.endswith("VRAM 140 GiB")


def test_h200_says_which_mps_server_the_suites_shared_seeds_would_use(tmp_path: Path) -> None:
    """Informational: never blocking, never a failure; each of the three cases named (harness/gpu/mps.py)."""
    facts = load_host("h200", tmp_path)
    none = by_name(diagnose(facts))["CUDA MPS"]
    assert none.status == "skip" and "take turns" in none.summary
    own = by_name(diagnose(replace(facts, mps_control="/usr/bin/nvidia-cuda-mps-control")))["CUDA MPS"]
    assert own.status == "ok" and "a server of its own" in own.summary
    host = replace(facts, mps_control="/usr/bin/nvidia-cuda-mps-control", mps_host_pipe="/tmp/nvidia-mps")
    used = by_name(diagnose(host))["CUDA MPS"]
    assert used.status == "ok" and "the host's daemon (/tmp/nvidia-mps)" in used.summary
    rocm = by_name(diagnose(replace(load_host("strix-halo", tmp_path), mps_control="/x")))["CUDA MPS"]
    assert (rocm.status, rocm.summary) == ("skip", "not a CUDA run")


def test_h200_with_an_empty_cuda_visible_devices_sees_no_gpu_and_is_told_to_unset_it(tmp_path: Path) -> None:
    facts = with_torch(load_host("h200", tmp_path), device_count=0, device_names=())
    d = diagnose(replace(facts, env={"CUDA_VISIBLE_DEVICES": ""}))
    assert d.blocking is by_name(d)["GPUs torch sees"]
    assert "unset CUDA_VISIBLE_DEVICES" in d.blocking.fix


def test_h200_with_a_torch_without_sm90_kernels_is_blocked(tmp_path: Path) -> None:
    d = diagnose(with_torch(load_host("h200", tmp_path), arch_list=("sm_75", "sm_80", "sm_86")))
    assert d.blocking is by_name(d)["gfx arch"] and "compute 9.0" in d.blocking.summary


# --- this CPU-only machine ----------------------------------------------------------------------------


def test_cpu_only_host_can_run_the_cpu_stack(tmp_path: Path) -> None:
    d = diagnose(load_host("cpu-only", tmp_path))
    assert d.accelerator == "cpu" and d.exit_status == 0
    skipped = {c.name: c.summary for c in d.checks if c.status == "skip"}
    assert skipped.keys() >= {"device nodes", "groups", "gfx arch", "GPUs torch sees", "integrated GPUs"}
    assert skipped["device nodes"] == "CPU run: no GPU device nodes needed"  # each says why it skipped
    assert skipped["integrated GPUs"] == "not a ROCm run"


def test_rocm_image_on_a_cpu_only_host_names_the_cpu_and_nvidia_profiles(tmp_path: Path) -> None:
    facts = load_host("cpu-only", tmp_path)
    facts = with_torch(
        replace(facts, in_container=True, env={"LORABENCH_REQUIRE_GPU": "rocm"}), hip="7.2.26015"
    )
    d = diagnose(facts)
    assert d.blocking is by_name(d)["device nodes"] and d.blocking.summary == "/dev/kfd is missing"
    assert "--device /dev/kfd" in d.blocking.fix
    on_host = diagnose(replace(facts, in_container=False))
    assert (
        "docker compose --profile cpu run --rm smoke-cpu" in on_host.blocking.fix
        and "--profile nvidia" in on_host.blocking.fix
    )


# --- host checks: disk, stack, Docker images -----------------------------------------------------------


def test_disk_below_one_gib_blocks_and_below_twenty_warns(tmp_path: Path) -> None:
    facts = load_host("cpu-only", tmp_path)
    full = by_name(diagnose(replace(facts, disks={"results": ("/srv/results", GIB // 2)})))["free disk"]
    assert full.status == "fail" and full.blocking and "/srv/results" in full.fix
    low = by_name(diagnose(replace(facts, disks={"HF cache": ("/srv/hf", 5 * GIB)})))["free disk"]
    assert low.status == "fail" and not low.blocking


def test_stack_that_differs_from_its_lockfile_blocks_naming_the_package(tmp_path: Path) -> None:
    stack = STACKS["cpu"]
    lock = tmp_path / "lockfiles"
    lock.mkdir()
    pins = (Path("lockfiles") / stack.lockfile).read_text()
    (lock / stack.lockfile).write_text(pins)
    clean = verify_environment(stack, directory=lock)
    facts = load_host("cpu-only", tmp_path)
    assert by_name(diagnose(facts, stack=stack, stack_problems=clean))["stack vs lockfile"].status == "ok"
    (lock / stack.lockfile).write_text(pins.replace("tabulate==0.10.0", "tabulate==0.9.9"))
    broken = by_name(diagnose(facts, stack=stack, stack_problems=verify_environment(stack, directory=lock)))
    assert broken["stack vs lockfile"].blocking and "tabulate" in broken["stack vs lockfile"].summary


def test_images_built_on_a_stand_in_base_are_named(tmp_path: Path) -> None:
    facts = load_host("cpu-only", tmp_path)
    pinned = {"id": "sha256:" + "a" * 64, "base": STACKS["cpu"].base_image}
    good = DockerFacts("28.2.2", "2.40.3", {"lorabench:cpu": pinned})
    assert by_name(diagnose(replace(facts, docker=good), stacks=STACKS))["pinned images"].status == "ok"
    stand_in = DockerFacts(
        "28.2.2", "2.40.3", {"lorabench:cpu": {**pinned, "base": "lorabench-base:bookworm-py3.11"}}
    )
    images = by_name(diagnose(replace(facts, docker=stand_in), stacks=STACKS))["pinned images"]
    # Named, not ✗: an image on a stand-in base is no fault of the host (issue 36).
    assert images.status == "skip" and "lorabench-base:bookworm-py3.11" in images.summary
    assert "bash scripts/build_image.sh" in images.summary
    no_compose = by_name(diagnose(replace(facts, docker=DockerFacts("28.2.2", None, {}))))[
        "Docker + Compose v2"
    ]
    assert no_compose.status == "fail" and "scripts/docker_engine.sh" in no_compose.fix


def test_published_rocminfo_pools_and_agents_read_as_the_boxes_have_them() -> None:
    from hostdata import DATA

    from harness.doctor.facts import rocminfo_pools
    from harness.gpu.visibility import gpu_agents, parse_rocminfo

    xtx = (DATA / "rocminfo-7900xtx-published.txt").read_text()
    assert [a["Marketing Name"] for a in gpu_agents(parse_rocminfo(xtx))] == ["Radeon RX 7900 XTX"]
    assert rocminfo_pools(xtx) == [25149440 * 1024]  # 24 GiB of VRAM
    halo = (DATA / "rocminfo-strix-halo-published.txt").read_text()
    assert [a["Device Type"] for a in parse_rocminfo(halo)] == ["CPU", "GPU", "DSP"]  # the NPU is no GPU
    assert rocminfo_pools(halo) == [64 * GIB]


# --- what the last line and the advice promise (issue 36) -------------------------------------------


def test_a_timed_run_can_start_only_when_the_guard_looked(tmp_path: Path) -> None:
    import io

    from harness.doctor.report import render
    from harness.guard.verdict import GuardVerdict, Reading

    facts = load_host("cpu-only", tmp_path)
    quiet = GuardVerdict.from_readings([Reading("cpu_other", 0.1, "cores", 0.5, True, "quiet")])

    def last_line(**kwargs) -> str:
        out = io.StringIO()
        render(diagnose(facts, **kwargs), out)
        return out.getvalue().splitlines()[-1]

    assert last_line(guard=quiet) == "lorabench doctor: a timed run can start"
    not_looked = last_line(guard=None)  # bench's gate and --no-guard: the guard was not asked
    assert "timed run can start" not in not_looked and "not looked at" in not_looked
    assert last_line(guard=None, timed=False) == "lorabench doctor: an untimed run can start"


def test_a_busy_machine_is_told_options_that_exist(tmp_path: Path) -> None:
    from harness.cli import build_parser
    from harness.guard.verdict import GuardVerdict, Reading

    busy = GuardVerdict.from_readings(
        [Reading("cpu_other", 1.7, "cores", 0.5, False, "1.7 cores busy — a job?")]
    )
    guard = by_name(diagnose(load_host("cpu-only", tmp_path), guard=busy))["quiet machine (guard)"]
    assert guard.status == "fail" and guard.blocking and "--allow-noisy" not in guard.summary
    assert "lorabench run --timed --allow-noisy" in guard.fix
    assert "lorabench bench -- --lorabench-allow-noisy" in guard.fix
    run_help = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    plugin = (Path(__file__).resolve().parents[2] / "harness/suite/plugin.py").read_text()
    assert "--allow-noisy" in run_help and '"--lorabench-allow-noisy"' in plugin


def test_a_cpu_host_is_told_whether_auto_compiles_its_layers(tmp_path: Path) -> None:
    facts = load_host("cpu-only", tmp_path)
    found = by_name(diagnose(replace(facts, cxx="/usr/bin/g++")))["C++ compiler (CPU runs)"]
    assert found.status == "ok" and "/usr/bin/g++" in found.summary
    missing = by_name(diagnose(replace(facts, cxx=None)))["C++ compiler (CPU runs)"]
    assert missing.status == "fail" and not missing.blocking and "apt install g++" in missing.fix
    # A compiler without Python's headers fails inductor's first kernel: said, with the fix.
    headless = by_name(diagnose(replace(facts, cxx="/usr/bin/g++", python_h=False)))[
        "C++ compiler (CPU runs)"
    ]
    assert headless.status == "fail" and not headless.blocking and "apt install python3-dev" in headless.fix
    # Inside the CPU image (none there) it is said, not failed; a GPU host compiles no layers on its CPU.
    image = by_name(diagnose(replace(facts, cxx=None, in_container=True)))["C++ compiler (CPU runs)"]
    assert image.status == "skip" and "trains eager" in image.summary
    h200 = load_host("h200", tmp_path)
    assert by_name(diagnose(replace(h200, cxx=None)))["C++ compiler (CPU runs)"].status == "skip"
