"""Cache parity: the forward training uses (no KV cache, train mode) must give the logits generation uses.

Models with KV sharing across layers (Gemma 3n style) have had layers that read K/V only from the cache:
without one they see zeros, so training optimises another network than the one evaluated. Three
comparisons on one sequence, dropout off: full forward without vs with cache, without cache vs prefix +
one token at a time, train vs eval mode. The distance is max |Δlogit| over the spread (std) of the
reference logits, so it reads the same for a random tiny model and a trained one.
"""

from __future__ import annotations

from typing import Any

import torch

from harness.checks.isolation import model_device, no_dropout, untouched
from harness.results import CheckVerdict

# Single-token forwards through the cache. Each is a whole eager forward: on the H200 host about 0.12 s for
# LoRA SmolLM2 (cache_parity took 2.26 s with 16 of them, the 2026-12-01 run (259c3ca)), so 16 cost most of the check. A layer
# blind to K/V is wrong at every cached position, so 4 catch it as 16 did (tests/checks/test_checks_cache.py).
MAX_INCREMENTAL_STEPS = 4


def _distance(reference: torch.Tensor, other: torch.Tensor) -> float:
    reference, other = reference.float(), other.float()
    spread = reference.std(dim=-1, keepdim=True).clamp_min(1e-6)
    return float(((reference - other).abs() / spread).max())


def _logits(model: Any, ids: torch.Tensor, **kwargs: Any) -> tuple[torch.Tensor, Any]:
    out = model(input_ids=ids, **kwargs)
    return out.logits[0], getattr(out, "past_key_values", None)


def _incremental(model: Any, ids: torch.Tensor, prefix: int) -> torch.Tensor:
    """Logits for positions prefix-1 … end, fed through the cache one token at a time."""
    first, cache = _logits(model, ids[:, :prefix], use_cache=True)
    steps = [first[-1:]]
    for position in range(prefix, ids.shape[1] - 1):
        logits, cache = _logits(model, ids[:, position : position + 1], past_key_values=cache, use_cache=True)
        steps.append(logits)
    return torch.cat(steps)


def cache_parity(
    model: Any, tokenizer: Any, text_or_ids: str | list[int] | torch.Tensor, *, tol: float = 0.05
) -> CheckVerdict:
    """`tol` on the spread-relative distance: fp32 gives ~1e-5, bf16 a few 1e-2; a layer blind to K/V gives ≫ 0.1."""
    if isinstance(text_or_ids, str):
        ids = tokenizer(text_or_ids, add_special_tokens=False, return_tensors="pt").input_ids
    else:
        ids = torch.as_tensor(text_or_ids).reshape(1, -1)
    if ids.shape[1] < 4:
        return CheckVerdict("skipped", f"needs at least 4 tokens, got {ids.shape[1]}")
    ids = ids.to(model_device(model))
    # The second half one token at a time, at most the last MAX_INCREMENTAL_STEPS positions: each step is a
    # whole forward, and a layer blind to K/V shows at every position, so a long sample need not pay ~100
    # forwards (on CPU a SmolLM2 sample's check took 5.4 s with all of them; see MAX_INCREMENTAL_STEPS).
    prefix = max(ids.shape[1] // 2, ids.shape[1] - MAX_INCREMENTAL_STEPS)
    with untouched(model), no_dropout(model), torch.no_grad():
        model.eval()
        reference, _ = _logits(model, ids, use_cache=False)
        with_cache, _ = _logits(model, ids, use_cache=True)
        stepped = _incremental(model, ids, prefix)
        model.train()
        trained, _ = _logits(model, ids, use_cache=False)
    distances = {
        "full_cache_vs_no_cache": _distance(reference, with_cache),
        "incremental_cache_vs_no_cache": _distance(reference[prefix - 1 : -1], stepped),
        "train_vs_eval_mode": _distance(reference, trained),
    }
    agree = float((reference[prefix - 1 : -1].argmax(-1) == stepped.argmax(-1)).float().mean())
    evidence = {
        "tokens": int(ids.shape[1]),
        "prefix": prefix,
        "tol": tol,
        "argmax_agreement_incremental": agree,
        "distances": {k: round(v, 6) for k, v in distances.items()},
    }
    bad = {k: v for k, v in distances.items() if v > tol}
    if not bad:
        return CheckVerdict(
            "pass",
            f"logits agree with and without the KV cache and in train/eval mode "
            f"(max distance {max(distances.values()):.2g})",
            evidence,
        )
    named = []
    if "full_cache_vs_no_cache" in bad or "incremental_cache_vs_no_cache" in bad:
        named.append(
            "layers read K/V only from the cache: the no-cache forward (training) differs from the cached "
            "one (generation)"
        )
    if "train_vs_eval_mode" in bad:
        named.append("train mode changes the forward beyond dropout")
    detail = "; ".join(named) + " (" + ", ".join(f"{k} {v:.3g}" for k, v in bad.items()) + f" > {tol})"
    return CheckVerdict("fail", detail, evidence)
