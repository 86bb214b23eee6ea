"""Probe functions: one per finding, each reading only the records of one host × stack.

The check names a probe looks for (the constants below) are the keys of `record.checks`; guard facts come from
`record.guard`; everything else from provenance, setups, statuses and reasons. A probe that finds no
evidence says "not tested", never "works".
"""

from __future__ import annotations

from collections.abc import Callable

from harness.findings.evidence import Evidence, FindingStatus, ProbeResult, not_tested, not_used
from harness.results import CheckVerdict, RunRecord

# record.checks keys the probes read; the checks module writes them.
MASK_AUDIT = "mask_audit"
CACHE_PARITY = "cache_parity"
GRAD_ACCUM_PARITY = "accumulation_parity"
DEAD_ADAPTERS = "dead_adapters"
END_OF_TURN = "end_of_turn"

INTEGRATED_ARCHS = ("gfx1036",)  # Raphael/Granite Ridge iGPU: shows up beside a discrete card
UNIFIED_MEMORY_ARCHS = ("gfx1151",)  # Strix Halo: the GPU's memory is the system's


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _where(ev: Evidence, verdicts: list[tuple[RunRecord, CheckVerdict]]) -> str:
    """Which runs, by setup (`exp/setup seeds 42, 1234`), and what the first of them said."""
    seeds: dict[str, list[str]] = {}
    for record, _ in verdicts:
        seeds.setdefault(f"{record.experiment}/{record.setup_name}", []).append(str(record.seed))
    runs = "; ".join(f"{setup} seed{'s' if len(s) > 1 else ''} {', '.join(s)}" for setup, s in seeds.items())
    return f"{runs}: {verdicts[0][1].detail}" if verdicts[0][1].detail else runs


def from_check(ev: Evidence, check: str, passed: FindingStatus = "works as-is") -> ProbeResult:
    """A check's verdicts over the runs that carry it. Works only when it passed on every one of them:
    an error or a skip on some runs is named, never folded into "works"."""
    verdicts = ev.verdicts(check)
    if not verdicts:
        return not_tested(f"no record carries the {check} check")
    by: dict[str, list[tuple[RunRecord, CheckVerdict]]] = {}
    for record, verdict in verdicts:
        by.setdefault(verdict.verdict, []).append((record, verdict))
    total = _runs(len(verdicts))
    parts = [
        f"{check} {word} in {len(by[key])} of {total} ({_where(ev, by[key])})"
        for key, word in (("fail", "failed"), ("error", "errored"), ("skipped", "was skipped"))
        if key in by
    ]
    n_pass = len(by.get("pass", []))
    if n_pass:
        parts.append(f"passed in {n_pass}" if parts else f"{check} passed in {n_pass} of {total}")
    evidence = "; ".join(parts)
    if "fail" in by:
        return ProbeResult("caught", evidence)
    if "error" in by:
        return ProbeResult("check error", evidence)
    if not n_pass:
        return not_tested(evidence)
    if "skipped" in by:
        return ProbeResult("partly tested", evidence)
    return ProbeResult(passed, evidence)


def _rocm_only(ev: Evidence) -> ProbeResult | None:
    if ev.runtime != "hip":
        return not_used(f"runtime is {ev.runtime}, not ROCm")
    return None


# --- platform ---


def rocm_wheels(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    if not ev.gpus:
        return ProbeResult("caught", "ROCm torch sees no GPU")
    trained = [r for r in ev.ok() if r.model and r.model.precision == "bf16" and r.model.device == "cuda"]
    if not trained:
        return not_tested(f"{len(ev.gpus)} GPU(s) visible; no bf16 run finished on them")
    torch = ev.packages.get("torch", "?")
    return ProbeResult(
        "works as-is", f"torch {torch}: {len(ev.gpus)} GPU(s) visible, {_runs(len(trained))} in bf16 ok"
    )


def triton_override(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    packages = ev.packages
    if "triton" in packages:
        return ProbeResult("caught", f"CUDA build triton {packages['triton']} installed beside ROCm torch")
    if "pytorch-triton-rocm" in packages:
        return ProbeResult(
            "works with a workaround",
            f"pytorch-triton-rocm {packages['pytorch-triton-rocm']} kept, no CUDA triton",
        )
    return not_tested("neither triton nor pytorch-triton-rocm recorded")


def integrated_gpu(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    visible = [a for a in ev.archs if a.split(":")[0] in INTEGRATED_ARCHS]
    if visible:
        return ProbeResult(
            "caught", f"integrated GPU ({', '.join(visible)}) visible to torch as an extra GPU"
        )
    hidden = ev.host.hidden_gpus
    if hidden:
        return ProbeResult("works with a workaround", f"hidden from HIP: {hidden}")
    return ProbeResult("works as-is", f"only {', '.join(ev.archs) or 'no GPU'} visible; nothing to hide")


def bnb_4bit_rocm(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    quantized = ev.where(precision="4bit")
    if not quantized:
        return not_used("no 4-bit setup ran")
    version = ev.packages.get("bitsandbytes")
    nan = [r for r in quantized if r.status == "diverged"]
    if nan:
        return ProbeResult("caught", f"bitsandbytes {version}: {_runs(len(nan))} diverged ({nan[0].reason})")
    ok = ev.ok(quantized)
    if not ok:
        return not_tested(f"no 4-bit run finished (bitsandbytes {version})")
    parsed = ev.version("bitsandbytes")
    status: FindingStatus = "works with a workaround" if parsed and parsed >= (0, 50) else "works as-is"
    return ProbeResult(status, f"bitsandbytes {version}: {_runs(len(ok))} in 4-bit ok, finite loss")


def rccl_ddp(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    if len(ev.gpus) < 2:
        return not_used(f"{len(ev.gpus)} GPU visible")
    multi = ev.multi_gpu()
    if not multi:
        return not_tested("no multi-GPU setup ran")
    ok = ev.ok(multi)
    if not ok:
        return ProbeResult("caught", f"{_runs(len(multi))} on several GPUs, none ok ({multi[0].reason})")
    return ProbeResult("works as-is", f"{_runs(len(ok))} on {len(ev.gpus)} GPUs ok")


def no_flash_attention(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    if not any(a.startswith("gfx1100") for a in ev.archs):
        return not_used(f"GPU arch {', '.join(ev.archs) or 'none'}, not gfx1100")
    installed = [p for p in ("flash_attn", "flash-attn", "xformers") if p in ev.packages]
    if installed:
        return ProbeResult("caught", f"{', '.join(installed)} installed on gfx1100")
    if not ev.ok():
        return not_tested("no run finished")
    return ProbeResult(
        "works with a workaround", f"no flash-attn / xformers; {_runs(len(ev.ok()))} ok with SDPA"
    )


def harmless_warnings(ev: Evidence) -> ProbeResult:
    if skip := _rocm_only(ev):
        return skip
    return not_tested("records keep no log lines to look for these warnings in")


# --- stack ---


def unsloth_model_names(ev: Evidence) -> ProbeResult:
    runs = ev.where(backend="unsloth")
    if not runs:
        return not_used("no Unsloth setup ran")
    swapped = [
        r
        for r in runs
        if r.model and "unsloth" in r.model.resolved.lower() and "unsloth" not in r.model.source.lower()
    ]
    if swapped:
        r = swapped[0]
        return ProbeResult(
            "caught", f"{r.model.source} loaded from {r.model.resolved}" if r.model else "swapped"
        )
    ok = ev.ok(runs)
    if not ok:
        return not_tested("no Unsloth run finished")
    return ProbeResult("works with a workaround", f"{_runs(len(ok))} loaded the exact model asked for")


def datasets_offline(ev: Evidence) -> ProbeResult:
    caught = ev.reason_matches(r"offline|couldn't reach|connection")
    if caught:
        return ProbeResult("caught", f"{ev.label(caught[0])}: {caught[0].reason}")
    timed = [r for r in ev.ok() if r.guard.get("timed") and r.data]
    if timed:
        return ProbeResult("works with a workaround", f"{_runs(len(timed))} read the fetched dataset offline")
    return not_tested("no timed (offline) run finished")


def checked(check: str) -> Callable[[Evidence], ProbeResult]:
    """The probe of a finding that one check's verdicts decide (`from_check`)."""
    return lambda ev: from_check(ev, check)


def model_type_too_new(ev: Evidence) -> ProbeResult:
    caught = ev.reason_matches(r"KeyError: '\w+'|does not recognize this architecture")
    if caught:
        return ProbeResult("caught", f"{ev.label(caught[0])}: {caught[0].reason}")
    loaded = sorted({r.model.source for r in ev.records if r.model})
    if not loaded:
        return not_tested("no model loaded")
    version = ev.packages.get("transformers", "?")
    return ProbeResult("works as-is", f"transformers {version} loaded every model: {', '.join(loaded)}")


def unsloth_barrier(ev: Evidence) -> ProbeResult:
    runs = [r for r in ev.multi_gpu() if r.setup.backend == "unsloth"]
    if not runs:
        return not_used("no multi-GPU Unsloth setup ran")
    hung = ev.reason_matches(r"barrier|timed out|timeout", runs)
    if hung:
        return ProbeResult("caught", f"{ev.label(hung[0])}: {hung[0].reason}")
    ok = ev.ok(runs)
    if not ok:
        return not_tested("no multi-GPU Unsloth run finished")
    return ProbeResult("works with a workaround", f"{_runs(len(ok))} loaded rank by rank and finished")


def trl_fused_lm_head(ev: Evidence) -> ProbeResult:
    trl = ev.version("trl")
    if trl is None:
        return not_tested("trl version not recorded")
    has_triton = "triton" in ev.packages or "pytorch-triton-rocm" in ev.packages
    if has_triton:
        return not_used(f"triton is installed (trl {ev.packages['trl']})")
    caught = ev.reason_matches(r"'NoneType' object has no attribute 'apply'")
    if caught:
        return ProbeResult("caught", f"trl {ev.packages['trl']} without triton: {caught[0].reason}")
    if trl >= (1, 15):
        return (
            not_tested(f"trl {ev.packages['trl']} without triton and no failure recorded")
            if not ev.ok()
            else (
                ProbeResult(
                    "works as-is", f"trl {ev.packages['trl']} without triton: {_runs(len(ev.ok()))} ok"
                )
            )
        )
    if not ev.ok():
        return not_tested(f"trl {ev.packages['trl']} pinned, no run finished")
    return ProbeResult(
        "works with a workaround", f"trl {ev.packages['trl']} pinned below 1.15; {_runs(len(ev.ok()))} ok"
    )


def gguf_eos(ev: Evidence) -> ProbeResult:
    gguf = [
        r
        for r in ev.records
        if "gguf" in (r.model.resolved if r.model else "").lower() or "smollm2" in r.setup.model.source
    ]
    verdicts = ev.verdicts(END_OF_TURN)
    if not verdicts:
        return (
            not_tested("no record carries the end_of_turn check") if gguf else not_used("no GGUF model ran")
        )
    for record, verdict in verdicts:
        eos, eot = verdict.evidence.get("eos_token"), verdict.evidence.get("end_of_turn")
        if eos and eot and eos != eot:
            return ProbeResult(
                "works with a workaround", f"{ev.label(record)}: EOS {eos}, trained end of turn {eot}"
            )
    return from_check(ev, END_OF_TURN)


# --- host ---


def ddp_ram_overflow(ev: Evidence) -> ProbeResult:
    multi = ev.multi_gpu()
    if not multi:
        return not_used("no multi-GPU setup ran")
    killed = [r for r in multi if r.status == "killed"]
    if killed:
        return ProbeResult("caught", f"{ev.label(killed[0])}: {killed[0].reason}")
    ok = ev.ok(multi)
    if not ok:
        return not_tested("no multi-GPU run finished")
    return ProbeResult(
        "works with a workaround", f"{_runs(len(ok))}: ranks loaded one at a time, none killed"
    )


def download_during_timing(ev: Evidence) -> ProbeResult:
    timed = [r for r in ev.records if r.guard.get("timed")]
    if not timed:
        return not_tested("no timed run")
    refused = ev.reason_matches(r"download", timed)
    if refused:
        return ProbeResult("caught", f"{ev.label(refused[0])} {refused[0].status}: {refused[0].reason}")
    return ProbeResult(
        "works with a workaround", f"{_runs(len(timed))} timed offline under the guard, no download seen"
    )


def unified_memory_thrash(ev: Evidence) -> ProbeResult:
    if not any(a.split(":")[0] in UNIFIED_MEMORY_ARCHS for a in ev.archs):
        return not_used(f"GPU memory is not shared with the system ({', '.join(ev.archs) or 'no GPU'})")
    stopped = ev.reason_matches(r"memory cap|watchdog|out of memory")
    if stopped:
        return ProbeResult("caught", f"{ev.label(stopped[0])}: {stopped[0].reason}")
    if not ev.ok():
        return not_tested("no run finished")
    return ProbeResult("works with a workaround", f"{_runs(len(ev.ok()))} under the memory cap and watchdog")
