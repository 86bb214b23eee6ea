"""Findings: inject each problem into records and watch its probe name it; no evidence → "not tested"."""

from __future__ import annotations

import copy
from typing import Any

from builders import HOST_AMD, HOST_CPU, STACK_CPU, STACK_ROCM, make_record, predictions

from harness.findings import FINDINGS, assess_findings
from harness.findings.registry import CATEGORY_ORDER
from harness.results import RunRecord

FAIL_MASK = {"mask_audit": {"verdict": "fail", "detail": "183 prompt tokens in the loss", "evidence": {}}}
PASS_MASK = {"mask_audit": {"verdict": "pass", "detail": "no prompt token in the loss", "evidence": {}}}


def status(records: list[RunRecord], finding_id: str) -> tuple[str, str]:
    found = {a.finding.id: a.result for a in assess_findings(records)}[finding_id]
    return found.status, found.evidence


def amd(**kwargs: Any) -> RunRecord:
    base: dict[str, Any] = {"host": HOST_AMD, "stack": STACK_ROCM, "experiment": "exp-a", "setup_name": "s", "seed": 1,
                            "created": "2026-11-28T10:00:00+00:00", "rows": predictions(1, 0)}  # fmt: skip
    return make_record(**{**base, **kwargs})


def test_sorted_platform_stack_host_and_ids_unique() -> None:
    order = [a.finding.category for a in assess_findings([amd()])]
    assert order == sorted(order, key=CATEGORY_ORDER.index)
    assert len({f.id for f in FINDINGS}) == len(FINDINGS) == 20


def test_mask_audit_pass_and_fail() -> None:
    assert status([amd(checks=PASS_MASK)], "loss-on-prompt")[0] == "works as-is"
    got, evidence = status([amd(checks=PASS_MASK), amd(seed=2, checks=FAIL_MASK)], "loss-on-prompt")
    assert got == "caught" and "183 prompt tokens" in evidence and "1 of 2 runs" in evidence
    assert status([amd()], "loss-on-prompt")[0] == "not tested"


def test_an_errored_or_skipped_check_never_reads_as_works() -> None:
    error = {"mask_audit": {"verdict": "error", "detail": "AttributeError: boom", "evidence": {}}}
    skipped = {"mask_audit": {"verdict": "skipped", "detail": "padding-free batches", "evidence": {}}}
    got, evidence = status([amd(checks=PASS_MASK), amd(seed=2, checks=error)], "loss-on-prompt")
    assert got == "check error"
    assert evidence == "mask_audit errored in 1 of 2 runs (exp-a/s seed 2: AttributeError: boom); passed in 1"
    assert status([amd(checks=error)], "loss-on-prompt")[0] == "check error"
    got, evidence = status([amd(checks=PASS_MASK), amd(seed=2, checks=skipped)], "loss-on-prompt")
    assert got == "partly tested"
    assert (
        evidence
        == "mask_audit was skipped in 1 of 2 runs (exp-a/s seed 2: padding-free batches); passed in 1"
    )
    assert status([amd(checks=skipped)], "loss-on-prompt")[0] == "not tested"
    # A failure anywhere outranks an error elsewhere: the problem showed up.
    assert status([amd(checks=FAIL_MASK), amd(seed=2, checks=error)], "loss-on-prompt")[0] == "caught"


def test_cuda_triton_beside_rocm_torch_is_caught() -> None:
    stack = copy.deepcopy(STACK_ROCM)
    assert status([amd(stack=stack)], "triton-override")[0] == "works with a workaround"
    stack["packages"]["triton"] = "3.5.0"
    assert status([amd(stack=stack)], "triton-override") == (
        "caught", "CUDA build triton 3.5.0 installed beside ROCm torch"
    )  # fmt: skip


def test_visible_igpu_is_caught() -> None:
    host = copy.deepcopy(HOST_AMD)
    host["gpus"].append(
        {"index": 1, "name": "AMD Radeon Graphics", "arch": "gfx1036", "vram_bytes": 2 * 1024**3}
    )
    assert status([amd(host=host)], "igpu-extra-gpu")[0] == "caught"
    assert status([amd()], "igpu-extra-gpu")[0] == "works as-is"


def test_bnb_nan_before_050() -> None:
    stack = copy.deepcopy(STACK_ROCM)
    stack["packages"]["bitsandbytes"] = "0.49.0"
    nan = amd(
        stack=stack, precision="4bit", status="diverged", reason="smoke: loss is nan at step 1", rows=None
    )
    assert status([nan], "bnb-4bit-rocm")[0] == "caught"
    assert status([amd(precision="4bit")], "bnb-4bit-rocm")[0] == "works with a workaround"
    assert status([amd()], "bnb-4bit-rocm")[0] == "not used"


def test_trl_fused_lm_head_on_cpu() -> None:
    cpu: dict[str, Any] = {"host": HOST_CPU, "experiment": "exp-a", "setup_name": "s", "seed": 1,
                           "created": "2026-11-28T10:00:00+00:00", "precision": "fp32", "vram_gib": None}  # fmt: skip
    assert status([make_record(stack=STACK_CPU, **cpu)], "trl-fused-lm-head")[0] == "works with a workaround"
    new = copy.deepcopy(STACK_CPU)
    new["packages"]["trl"] = "1.15.0"
    failed = make_record(stack=new, status="failed", reason="AttributeError: 'NoneType' object has no attribute 'apply'",
                         **cpu)  # fmt: skip
    assert status([failed], "trl-fused-lm-head")[0] == "caught"
    assert status([amd()], "trl-fused-lm-head")[0] == "not used"


def test_gguf_eos_differs_from_end_of_turn() -> None:
    eot = {"end_of_turn": {"verdict": "pass", "detail": "template end of turn trained",
                           "evidence": {"eos_token": "<|im_start|>", "end_of_turn": "<|im_end|>"}}}  # fmt: skip
    assert status([amd(checks=eot)], "gguf-eos")[0] == "works with a workaround"
    assert status([amd()], "gguf-eos")[0] == "not tested"


def test_download_refusal_is_caught() -> None:
    refused = amd(status="refused", reason="guard: download in progress (~/.cache/huggingface, 48 MB/s)", rows=None,
                  train_s=None)  # fmt: skip
    assert status([refused], "download-during-timing")[0] == "caught"
    assert status([amd(timed=False)], "download-during-timing")[0] == "not tested"


def test_no_evidence_never_works() -> None:
    # A refused run on a bare CPU host with no package versions: nothing may claim "works".
    stack = {"name": "cpu", "packages": {}}
    refused = make_record(host=HOST_CPU, stack=stack, experiment="e", setup_name="s", seed=1, timed=False,
                          created="2026-11-28T10:00:00+00:00", status="refused", reason="busy", train_s=None)  # fmt: skip
    statuses = {a.finding.id: a.result.status for a in assess_findings([refused])}
    assert set(statuses.values()) <= {"not used", "not tested"}, statuses
