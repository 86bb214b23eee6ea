"""`auto` resolves from the host's CPU flags (recorded /proc/cpuinfo texts), and says why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.config import load_setup
from harness.cpuinfo import bf16_flag, cpu_flags, isa_tier, model_name
from harness.runtime import resolve_runtime

CPUINFO = Path(__file__).parent / "data" / "cpuinfo"


def cpuinfo(name: str) -> str:
    return (CPUINFO / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "precision", "attention", "why"),
    [
        ("intel-xeon-amx.txt", "bf16", "eager", "amx_bf16"),
        ("amd-epyc-zen4.txt", "bf16", "eager", "avx512_bf16"),
        ("intel-broadwell-avx2.txt", "fp32", "sdpa", "neither amx_bf16 nor avx512_bf16"),
    ],
)
def test_auto_on_a_cpu_follows_its_bf16_flags(text: str, precision: str, attention: str, why: str) -> None:
    runtime = resolve_runtime("cpu", "auto", "auto", cpuinfo=cpuinfo(text))
    assert (runtime.device, runtime.precision, runtime.attention) == ("cpu", precision, attention)
    assert why in runtime.reasons["precision"]
    assert set(runtime.reasons) == {"precision", "attention"}  # device was given, not auto


def test_no_cpuinfo_means_fp32() -> None:
    # A host that tells nothing (no /proc/cpuinfo) keeps the safe choice.
    assert resolve_runtime("cpu", "auto", "auto", cpuinfo="").precision == "fp32"


def test_given_settings_are_kept_and_carry_no_reason() -> None:
    runtime = resolve_runtime("cpu", "fp32", "eager", cpuinfo=cpuinfo("intel-xeon-amx.txt"))
    assert (runtime.precision, runtime.attention, runtime.reasons) == ("fp32", "eager", {})
    # bf16 asked for by name on a CPU with AMX: auto attention follows the precision.
    assert resolve_runtime("cpu", "bf16", "auto", cpuinfo=cpuinfo("intel-xeon-amx.txt")).attention == "eager"
    assert resolve_runtime("cpu", "fp32", "auto", cpuinfo=cpuinfo("intel-xeon-amx.txt")).attention == "sdpa"


def test_a_gpu_keeps_bf16_and_sdpa_whatever_its_cpu() -> None:
    runtime = resolve_runtime("cuda", "auto", "auto", cpuinfo=cpuinfo("intel-broadwell-avx2.txt"))
    assert (runtime.precision, runtime.attention) == ("bf16", "sdpa")


def test_validation_stays_pure() -> None:
    # The setup keeps "auto": nothing about the host enters validation.
    setup = load_setup(None)
    assert (setup.precision, setup.model.attention) == ("auto", "auto")


def test_cpuinfo_parsing() -> None:
    amx, zen4, avx2 = (
        cpu_flags(cpuinfo(n)) for n in ("intel-xeon-amx.txt", "amd-epyc-zen4.txt", "intel-broadwell-avx2.txt")
    )
    assert [isa_tier(f) for f in (amx, zen4, avx2, frozenset())] == ["amx", "avx512bf16", "avx2", "base"]
    assert [bf16_flag(f) for f in (amx, zen4, avx2)] == ["amx_bf16", "avx512_bf16", None]
    assert model_name(cpuinfo("amd-epyc-zen4.txt")) == "AMD EPYC"
    assert model_name("") is None


@pytest.mark.parametrize(
    ("text", "precision", "attention", "kind"),
    [
        ("amd-epyc-zen4.txt", "bf16", "eager", "avx512bf16"),
        ("intel-broadwell-avx2.txt", "fp32", "sdpa", "avx2"),
    ],
)
def test_a_whole_run_takes_the_path_of_the_cpu_it_is_given(
    text: str, precision: str, attention: str, kind: str, tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Both runtime paths run here whatever this CI runner's CPU is (Intel or AMD, bf16 in hardware or
    not): the CPU is forced through $LORABENCH_CPUINFO_FILE, and the record says which path ran."""
    from harness.provenance import collect_host
    from harness.run.parent import RunOptions, run_setup

    monkeypatch.setenv("LORABENCH_CPUINFO_FILE", str(CPUINFO / text))
    assert collect_host()["kind"].endswith(f"-{kind}")
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", f"data.source={sql_rows_file}", "device=cpu", "data.test_size=4",
        "recipe.steps=2", "recipe.batch_size=2", "eval.max_new_tokens=4", "checks.smoke.enabled=false",
        "checks.preflight=false",
    ])  # fmt: skip
    assert (setup.precision, setup.model.attention) == ("auto", "auto")
    record, _ = run_setup(setup, RunOptions(results_dir=tmp_path, isolate=False))
    assert record.status == "ok", record.reason
    assert record.model is not None and (record.model.precision, record.model.attention) == (
        precision,
        attention,
    )
    assert str(record.provenance.host.kind).endswith(f"-{kind}")
    assert record.train is not None and record.train.steps_done == 2


def test_the_removed_micro_batches_reads_in_old_records_and_is_refused_in_a_new_setup() -> None:
    # Issue #37: one batch per step is the only path; records made before hold "auto" and still read.
    from harness.config import SetupConfig
    from harness.errors import ConfigError
    from harness.results import known_fields

    old = {"recipe": {"micro_batches": "auto", "steps": 3}}
    assert known_fields(old, SetupConfig) == {"recipe": {"steps": 3}}  # how a record's setup is read
    assert SetupConfig.model_validate({"recipe": {"micro_batches": "auto"}}) == SetupConfig()
    with pytest.raises(ConfigError, match=r"micro_batches = 2 was removed"):
        load_setup(None, ["recipe.micro_batches=2"])


def test_the_record_keeps_why_auto_compiles_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.runtime import resolve_setup_runtime

    monkeypatch.setenv("CXX", sys.executable)  # a compiler is there
    auto = load_setup(None, ["device=cpu", "recipe.compile=auto"])
    amx = resolve_setup_runtime(auto, cpuinfo=cpuinfo("intel-xeon-amx.txt"))
    assert "compiled decoder layers" in amx.reasons["compile"] and "precision" in amx.reasons
    avx2 = resolve_setup_runtime(auto, cpuinfo=cpuinfo("intel-broadwell-avx2.txt"))
    assert "not measured" in avx2.reasons["compile"]
    chosen = load_setup(None, ["device=cpu", "recipe.compile=none"])
    assert "compile" not in resolve_setup_runtime(chosen, cpuinfo=cpuinfo("intel-xeon-amx.txt")).reasons
    # A compiler without Python's headers (Debian's python3 without python3-dev): inductor's first kernel
    # would fail to build, so "auto" stays eager and says why.
    from harness import autorecipe

    monkeypatch.setattr(autorecipe, "python_headers", lambda: False)
    headless = resolve_setup_runtime(auto, cpuinfo=cpuinfo("intel-xeon-amx.txt"))
    assert headless.reasons["compile"].startswith("no Python.h (python3-dev)")


def test_the_record_keeps_why_auto_kernels_are_liger_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness import autorecipe
    from harness.runtime import resolve_setup_runtime

    monkeypatch.setattr(autorecipe, "liger_installed", lambda: True)
    eager = resolve_setup_runtime(load_setup(None, ["device=cuda", "recipe.compile=none"]))
    assert "Liger's kernels stepped 1.48x faster" in eager.reasons["kernels"]
    graphed = resolve_setup_runtime(load_setup(None, ["device=cuda", "recipe.compile=auto"]))
    assert graphed.reasons["kernels"].startswith("graphs layers") and "compile" in graphed.reasons
    chosen = load_setup(None, ["device=cuda", "recipe.kernels=none"])
    assert "kernels" not in resolve_setup_runtime(chosen).reasons
