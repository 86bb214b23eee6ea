"""The GPU eval's decode (harness/run/graphed_decode.py) stepped eagerly on a CPU: the real SmolLM2's greedy
answers through the static cache, the 4-D masks and the step that advances its own inputs, against
`generate`'s. The CUDA graph itself runs on a GPU only (dev/gpu/profile_decode.py, the records' predictions)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.run import graphed_decode
from harness.run.evaluate import stop_token_ids
from harness.tasks.encoding import end_of_turn

PROMPTS = [
    "<|im_start|>user\nCREATE TABLE head (age INTEGER)\n-- How many heads of the departments are older than 56 ?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nCREATE TABLE table_name_12 (year VARCHAR, votes INTEGER)\n-- which year had the most votes?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n",
]  # fmt: skip


@pytest.fixture(scope="module")
def smollm2(smollm2_dir: Path) -> tuple[object, object]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_dir))
    model = AutoModelForCausalLM.from_pretrained(
        str(smollm2_dir), dtype=torch.float32, attn_implementation="sdpa"
    )
    return model.eval(), tokenizer


def left_padded(tokenizer: object, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    encoded = [tokenizer(p, add_special_tokens=False).input_ids for p in prompts]
    width = max(map(len, encoded))
    ids = torch.full((len(encoded), width), tokenizer.pad_token_id or 0, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, tokens in enumerate(encoded):
        ids[row, width - len(tokens) :] = torch.tensor(tokens)
        mask[row, width - len(tokens) :] = 1
    return ids, mask


def generated(
    model: object, ids: torch.Tensor, mask: torch.Tensor, new: int, stops: set[int]
) -> list[list[int]]:
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                         pad_token_id=0)[:, ids.shape[1] :].tolist()  # fmt: skip
    cut = []
    for row in out:
        ends = [at for at, token in enumerate(row) if token in stops]
        cut.append(row[: ends[0] + 1] if ends else row)
    return cut


def test_the_steps_answer_as_generate_does(smollm2: tuple[object, object]) -> None:
    model, tokenizer = smollm2
    ids, mask = left_padded(tokenizer, PROMPTS)
    stops = stop_token_ids(tokenizer, end_of_turn(tokenizer)) | {model.generation_config.eos_token_id}
    expected = generated(model, ids, mask, 24, stops)
    with graphed_decode.eager_attention(model):
        assert model.config._attn_implementation == "eager"
        answers = graphed_decode.greedy_graphed(model, ids, mask, 24, stops, capture=False)
    assert model.config._attn_implementation == "sdpa"  # its own attention back after the span
    assert answers == expected
    assert len({len(a) for a in answers}) > 1  # rows stopped at different steps: the cut is exercised
    assert any(a and a[-1] in stops for a in answers)


def test_a_trained_adapter_decodes_through_peft_as_generate_does(smollm2_dir: Path) -> None:
    # As a run's eval calls it: PEFT's model (its forward passes the cache's arguments on), adapter unmerged.
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_dir))
    base = AutoModelForCausalLM.from_pretrained(
        str(smollm2_dir), dtype=torch.float32, attn_implementation="sdpa"
    )
    torch.manual_seed(0)
    model = get_peft_model(
        base, LoraConfig(r=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    model.eval()
    ids, mask = left_padded(tokenizer, PROMPTS[:2])
    stops = stop_token_ids(tokenizer, end_of_turn(tokenizer))
    expected = generated(model, ids, mask, 12, stops)
    with model.disable_adapter():
        assert generated(model, ids, mask, 12, stops) != expected  # the adapter moves the answers
    with graphed_decode.eager_attention(model):
        answers = graphed_decode.greedy_graphed(model, ids, mask, 12, stops, capture=False)
    assert answers == expected


def test_a_row_stopped_early_keeps_nothing_past_its_stop() -> None:
    assert graphed_decode._through_first_stop([5, 7, 2, 9, 2], [2]) == [5, 7, 2]
    assert graphed_decode._through_first_stop([5, 7], [2]) == [5, 7]


def test_it_applies_to_grouped_attention_on_a_gpu_only(smollm2: tuple[object, object]) -> None:
    model, _ = smollm2
    assert graphed_decode.applies(model, "cuda")
    assert not graphed_decode.applies(model, "cpu")
    assert not graphed_decode.applies(torch.nn.Linear(2, 2), "cuda")  # no attention module at all


def test_a_decode_under_autocast_is_not_graphed(
    smollm2: tuple[object, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Autocast gives fp32 keys (rotated by fp32 angles) and bf16 values, and the static cache takes one
    dtype for both: the capture failed so in every trained eval on the H200 until the Trainer's autocast
    was taken off the trained model. A half-precision eval with an adapter decodes under autocast."""
    from harness.run.evaluate import decoding_way

    model, _ = smollm2
    monkeypatch.setattr(graphed_decode, "applies", lambda *args: True)  # as on a GPU
    monkeypatch.setattr(graphed_decode, "cache_fits", lambda *args: True)
    assert decoding_way(model, False, True, (4, 20), 8) == "graphed"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert decoding_way(model, False, True, (4, 20), 8) == "generate"


def test_a_capture_the_forward_refuses_is_said_and_decoded_with_generate(
    smollm2: tuple[object, object], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.run import evaluate

    model, tokenizer = smollm2

    def refused(*args: object, **kwargs: object) -> list[list[int]]:
        raise RuntimeError("operation not permitted when stream is capturing\nmore detail")

    expected = evaluate.generate_answers(
        model, tokenizer, PROMPTS[:2], batch_size=2, max_new_tokens=8, shrink=False
    )
    monkeypatch.setattr(graphed_decode, "greedy_graphed", refused)
    monkeypatch.setattr(evaluate, "decoding_way", lambda *args: "graphed")
    ways: set[str] = set()
    answers = evaluate.generate_answers(
        model, tokenizer, PROMPTS[:2], batch_size=2, max_new_tokens=8, ways=ways
    )
    assert ways == {"generate"}  # the record says how it was decoded in the end
    assert answers == expected and any(answers)
    assert (
        "lorabench: eval: the CUDA-graph decode failed (operation not permitted when stream is capturing); "
        "decoding with generate" in capsys.readouterr().err
    )


def test_a_4bit_base_is_never_graphed(
    smollm2: tuple[object, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The setup says 4-bit, not the loaded model (its first parameter reads bf16 over a 4-bit base): the
    graphed decode was offered to one when the model's precision was asked."""
    from harness.config import load_setup
    from harness.run import evaluate

    model, tokenizer = smollm2
    asked: dict[str, object] = {}
    monkeypatch.setattr(evaluate, "generate_answers", lambda *args, **kwargs: asked.update(kwargs) or [])
    for precision, graphed in (("4bit", False), ("bf16", True)):
        evaluate.answer_questions(model, tokenizer, [], load_setup(None, [f"precision={precision}"]))
        assert asked["graphed"] is graphed
