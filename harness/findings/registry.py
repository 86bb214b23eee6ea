"""The findings registry: known problems and non-problems, whose problem they are, how lorabench tells
from records, the workaround, and where the knowledge came from. Data only; probes live beside it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.findings import probes
from harness.findings.evidence import Evidence, ProbeResult

Category = Literal["platform", "stack", "host"]
Platform = Literal["AMD", "NVIDIA", "any"]
CATEGORY_ORDER: tuple[Category, ...] = ("platform", "stack", "host")

STORY = "the story (ROCm LoRA/QLoRA runs, RX 7900 XTX and Strix Halo)"
MEASURED = "measured here (lorabench development)"


@dataclass(frozen=True)
class Finding:
    id: str
    category: Category
    platform: Platform
    title: str
    detected: str
    workaround: str
    source: str
    probe: Callable[[Evidence], ProbeResult]


FINDINGS: tuple[Finding, ...] = (
    # platform
    Finding(
        "rocm-wheels",
        "platform",
        "AMD",
        "ROCm PyTorch wheels: GPUs visible, bf16, SDPA",
        "runtime hip, GPUs in provenance, bf16 runs ok",
        "none needed",
        STORY,
        probes.rocm_wheels,
    ),
    Finding(
        "triton-override",
        "platform",
        "AMD",
        "pip replaces ROCm triton/xformers with CUDA builds",
        "packages: `triton` beside ROCm torch",
        "override file pins the ROCm builds",
        STORY,
        probes.triton_override,
    ),
    Finding(
        "igpu-extra-gpu",
        "platform",
        "AMD",
        "integrated GPU (gfx1036) seen as an extra GPU",
        "a gfx1036 device in provenance GPUs",
        "HIP_VISIBLE_DEVICES lists the discrete GPUs",
        STORY,
        probes.integrated_gpu,
    ),
    Finding(
        "bnb-4bit-rocm",
        "platform",
        "AMD",
        "bitsandbytes 4-bit on ROCm gives NaN before 0.50",
        "4-bit runs diverged; bitsandbytes version",
        "bitsandbytes ≥ 0.50",
        STORY,
        probes.bnb_4bit_rocm,
    ),
    Finding(
        "rccl-ddp",
        "platform",
        "AMD",
        "RCCL for DDP",
        "multi-GPU runs ok on ROCm",
        "none needed",
        STORY,
        probes.rccl_ddp,
    ),
    Finding(
        "no-flash-attention",
        "platform",
        "AMD",
        "Flash Attention 2 / xformers unavailable on gfx1100",
        "gfx1100 GPU, no flash-attn / xformers installed",
        "SDPA",
        STORY,
        probes.no_flash_attention,
    ),
    Finding(
        "harmless-warnings",
        "platform",
        "AMD",
        "harmless warnings: 'Attempting to use CK on an unsupported architecture', torchao CUTLASS load, "
        "expandable_segments",
        "log lines (not kept in records)",
        "ignore",
        STORY,
        probes.harmless_warnings,
    ),
    # stack
    Finding(
        "unsloth-model-names",
        "stack",
        "any",
        "Unsloth swaps model names for its own uploads",
        "resolved weights under an unsloth/ name the setup did not ask for",
        "use_exact_model_name=True",
        STORY,
        probes.unsloth_model_names,
    ),
    Finding(
        "datasets-offline",
        "stack",
        "any",
        "datasets offline fails before the first download",
        "run reason: offline / unreachable hub",
        "`lorabench fetch` before timed (offline) runs",
        STORY,
        probes.datasets_offline,
    ),
    Finding(
        "loss-on-prompt",
        "stack",
        "any",
        "loss on the prompt (TRL 0.24 × transformers 5.x)",
        "mask_audit check",
        "lorabench builds the completion mask itself",
        STORY,
        probes.checked(probes.MASK_AUDIT),
    ),
    Finding(
        "kv-sharing-cache",
        "stack",
        "any",
        "KV sharing breaks with use_cache=False",
        "cache_parity check",
        "keep the cache on for KV-shared models",
        STORY,
        probes.checked(probes.CACHE_PARITY),
    ),
    Finding(
        "num-items-in-batch",
        "stack",
        "any",
        "num_items_in_batch ignored (gradient accumulation scale)",
        "accumulation_parity check",
        "pass num_items_in_batch through the loss",
        STORY,
        probes.checked(probes.GRAD_ACCUM_PARITY),
    ),
    Finding(
        "dead-lora-kv-shared",
        "stack",
        "any",
        "dead LoRA modules on KV-shared layers",
        "dead_adapters check",
        "leave k/v projections of KV-shared layers out of targets",
        STORY,
        probes.checked(probes.DEAD_ADAPTERS),
    ),
    Finding(
        "model-type-too-new",
        "stack",
        "any",
        "model type too new for the pinned transformers (KeyError 'gemma4_unified')",
        "run reason: KeyError on the model type",
        "a stack with a newer transformers",
        STORY,
        probes.model_type_too_new,
    ),
    Finding(
        "unsloth-barrier-deadlock",
        "stack",
        "any",
        "dist.barrier deadlock inside Unsloth loading",
        "multi-GPU Unsloth run hung or timed out",
        "load rank by rank outside the barrier",
        STORY,
        probes.unsloth_barrier,
    ),
    Finding(
        "trl-fused-lm-head",
        "stack",
        "any",
        "TRL 1.15 SFTTrainer always patches a Triton fused LM head: on CPU-only torch training fails with "
        "AttributeError 'NoneType' object has no attribute 'apply'",
        "trl ≥ 1.15 and triton not installed",
        "trl 1.14.0 on the cpu stack",
        MEASURED,
        probes.trl_fused_lm_head,
    ),
    Finding(
        "gguf-eos",
        "stack",
        "any",
        "SmolLM2's GGUF metadata names <|im_start|> as EOS",
        "end_of_turn check: tokenizer EOS vs the chat template's end of turn",
        "lorabench trains the chat template's end-of-turn (<|im_end|>), not tokenizer.eos_token",
        MEASURED,
        probes.gguf_eos,
    ),
    # host
    Finding(
        "ddp-ram-overflow",
        "host",
        "any",
        "RAM overflow when DDP ranks load together",
        "multi-GPU run killed",
        "file lock: ranks load one at a time",
        STORY,
        probes.ddp_ram_overflow,
    ),
    Finding(
        "download-during-timing",
        "host",
        "any",
        "a download during a timed run",
        "guard refusal naming a download",
        "fetch first; timed runs go offline under the guard",
        STORY,
        probes.download_during_timing,
    ),
    Finding(
        "unified-memory-thrash",
        "host",
        "AMD",
        "unified memory thrash (Strix Halo)",
        "run stopped by the memory cap or watchdog",
        "memory cap + watchdog",
        STORY,
        probes.unified_memory_thrash,
    ),
)
