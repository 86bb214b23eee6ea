"""Batched greedy decoding against one question at a time, and decoding with the adapter merged, on a
tiny seeded model (real tokenizer, real PEFT)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.run.evaluate import adapter_merged, decoding_precision, generate_answers

PROMPTS = [
    "CREATE TABLE t (a VARCHAR)\n-- how many a?",
    "Hi",
    "CREATE TABLE table_name_12 (year VARCHAR, votes INTEGER, name VARCHAR)\n-- which year had the most votes?",
    "SELECT",
    "What is the name of the team whose coach is Smith and which won in 1990?",
    "x",
]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> tuple[object, object]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    return AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32), tokenizer


def test_batched_answers_match_one_at_a_time(tiny: tuple[object, object]) -> None:
    model, tokenizer = tiny
    batched = generate_answers(model, tokenizer, PROMPTS, batch_size=4, max_new_tokens=12)
    single = generate_answers(model, tokenizer, PROMPTS, batch_size=1, max_new_tokens=12)
    assert batched == single
    assert all("\n" not in a for a in batched)
    assert any(batched)  # a model that answers nothing would make the comparison empty


def test_merged_adapter_decodes_alike_and_is_unmerged_after(tiny: tuple[object, object]) -> None:
    from peft import LoraConfig, get_peft_model

    base, tokenizer = tiny
    torch.manual_seed(0)
    # init_lora_weights=False: B is random, so the adapter really changes the answers.
    config = LoraConfig(
        r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "up_proj"], init_lora_weights=False
    )
    model = get_peft_model(base, config)
    weight = model.base_model.model.model.layers[0].self_attn.q_proj.base_layer.weight
    before = weight.detach().clone()
    unmerged = generate_answers(model, tokenizer, PROMPTS, batch_size=3, max_new_tokens=12)
    with adapter_merged(model, True):
        assert not torch.equal(weight, before)  # folded in
        merged = generate_answers(model, tokenizer, PROMPTS, batch_size=3, max_new_tokens=12)
    torch.testing.assert_close(weight, before)  # unfolded again, up to rounding
    assert merged == unmerged
    after = weight.detach().clone()
    with adapter_merged(model, False):
        assert torch.equal(weight, after)
    model.unload()  # the module-scoped base model goes back without LoRA layers


def test_fp32_eval_decodes_a_bf16_model_as_its_fp32_copy_and_puts_it_back(tiny_model_dir: Path) -> None:
    import copy

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.bfloat16)
    torch.manual_seed(0)
    config = LoraConfig(
        r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "up_proj"], init_lora_weights=False
    )
    model = get_peft_model(base, config)  # base in bf16, LoRA weights in fp32 (PEFT's default)
    before = {name: t.detach().clone() for name, t in model.state_dict().items()}
    lifted = copy.deepcopy(model).float()
    expected = generate_answers(lifted, tokenizer, PROMPTS, batch_size=3, max_new_tokens=12)
    with decoding_precision(model, "fp32"):
        assert {p.dtype for p in model.parameters()} == {torch.float32}
        lifted_here = generate_answers(model, tokenizer, PROMPTS, batch_size=3, max_new_tokens=12)
    assert lifted_here == expected and any(expected)
    after = model.state_dict()  # bf16 → fp32 → bf16 is exact, and the fp32 LoRA weights stay fp32
    assert all(after[name].dtype == t.dtype and torch.equal(after[name], t) for name, t in before.items())
    # As a run decodes with eval.merge_adapter on: lifted first, the LoRA sums folded in fp32.
    with decoding_precision(model, "fp32"), adapter_merged(model, True):
        assert generate_answers(model, tokenizer, PROMPTS, batch_size=3, max_new_tokens=12) == expected
    with decoding_precision(model, "train"):
        assert model.base_model.model.model.layers[0].mlp.down_proj.weight.dtype == torch.bfloat16


def test_stop_criterion_looks_at_the_newest_generated_token_only() -> None:
    import torch

    from harness.run.evaluate import StopAtTokens

    stop = StopAtTokens({7, 9}, prompt_length=3)
    prompt_with_a_stop_id = torch.tensor([[7, 1, 2], [1, 2, 3]])
    assert stop(prompt_with_a_stop_id, None).tolist() == [False, False]  # nothing generated yet
    assert stop(torch.tensor([[7, 1, 2, 5], [1, 2, 3, 9]]), None).tolist() == [False, True]
    # generate ANDs the flags into its own unfinished mask, so a sequence that stopped stays stopped
    assert stop(torch.tensor([[7, 1, 2, 5, 7], [1, 2, 3, 9, 0]]), None).tolist() == [True, False]


def test_every_seed_shares_one_baseline_but_not_another_decoding() -> None:
    from harness.config import load_setup
    from harness.run.evaluate import baseline_key
    from harness.runtime import resolve_runtime

    amx = (Path(__file__).parents[1] / "data" / "cpuinfo" / "intel-xeon-amx.txt").read_text()

    def key(*overrides: str) -> str:
        setup = load_setup(None, list(overrides))
        runtime = resolve_runtime("cpu", setup.precision, setup.model.attention, cpuinfo=amx)
        return baseline_key(setup, runtime, Path("/models/smollm2"), "split-hash", 300)

    base = key()
    # Seeds, steps and the recipe do not change the untrained model's answers.
    assert key("recipe.seed=42") == key("recipe.seed=1234") == key("recipe.steps=10", "lora.rank=8") == base
    # "auto" keys by what it resolved to: bf16 + eager on this CPU, like the same settings given by name.
    assert key("precision=bf16", "model.attention=eager") == base
    # Another decoding does change them: precision, attention, batch.
    assert len({base, key("precision=fp32"), key("model.attention=sdpa"), key("eval.batch_size=16")}) == 4


def _left_padded(tokenizer: object, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    encoded = [tokenizer(p, add_special_tokens=False).input_ids for p in prompts]
    width = max(len(e) for e in encoded)
    ids = torch.full((len(encoded), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, e in enumerate(encoded):
        ids[row, width - len(e) :], mask[row, width - len(e) :] = torch.tensor(e), 1
    return ids, mask


def test_shrinking_decode_gives_generates_tokens_as_rows_stop_apart(smollm2_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, StoppingCriteriaList

    from harness.run.evaluate import StopAtTokens, greedy_shrinking

    # The real SmolLM2 (the tiny random model repeats one token, so its rows all stop together).
    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_dir))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(smollm2_dir), dtype=torch.float32)
    ids, mask = _left_padded(tokenizer, PROMPTS)
    new = 10
    free = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                          pad_token_id=tokenizer.pad_token_id)[:, ids.shape[1]:]  # fmt: skip
    # Stop tokens that end rows at different steps, so rows leave the batch one by one and the survivors'
    # cache rows must stay theirs: row 0's 3rd token and the first token of another row met nowhere before.
    stops = {int(free[0, 2])}
    stops.add(
        next(int(t) for t in free[2:, 4:].flatten() if int(t) not in set(free[:, :4].flatten().tolist()))
    )
    shrunk = greedy_shrinking(model, ids, mask, new, stops)
    eos = {model.generation_config.eos_token_id} if isinstance(model.generation_config.eos_token_id, int) else set(
        model.generation_config.eos_token_id or [])  # fmt: skip
    reference = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                               pad_token_id=tokenizer.pad_token_id,
                               stopping_criteria=StoppingCriteriaList([StopAtTokens(stops, ids.shape[1])]))  # fmt: skip
    for row, tokens in enumerate(shrunk):
        expected = reference[row, ids.shape[1] :].tolist()
        ended = next((k + 1 for k, t in enumerate(expected) if t in stops | eos), len(expected))
        assert tokens == expected[:ended], row
    assert len({len(t) for t in shrunk}) > 2  # rows did stop apart


def test_the_heads_input_made_contiguous_gives_the_same_logits(smollm2_dir: Path) -> None:
    """The prefill's head (logits_to_keep=1) gets a contiguous input in bf16: the same logits bit for bit;
    in fp32 (whose products would differ in the last bits) and after the span, the input as it came."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.run.evaluate import contiguous_head_input

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_dir))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    ids, mask = _left_padded(tokenizer, PROMPTS)
    for dtype, made_contiguous in ((torch.bfloat16, True), (torch.float32, False)):
        model = AutoModelForCausalLM.from_pretrained(str(smollm2_dir), dtype=dtype)
        seen: list[bool] = []
        model.get_output_embeddings().register_forward_hook(
            lambda m, args, out, seen=seen: seen.append(args[0].is_contiguous())
        )
        with torch.no_grad():
            plain = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits
            with contiguous_head_input(model):
                contiguous = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits
            after = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits
        assert seen == [False, made_contiguous, False], (
            dtype
        )  # the strided view logits_to_keep hands the head
        assert torch.equal(contiguous, plain) and torch.equal(after, plain), dtype


def test_a_bpe_tokenizer_decodes_the_same_answers_without_transformers_cleanup_warning(
    tiny: tuple[object, object],
) -> None:
    """SmolLM2's tokenizer says clean_up_tokenization_spaces = True, which transformers ignores for a BPE
    tokenizer with a warning on every run's eval; decoding says False there: the same text, no warning."""
    import logging

    from harness.run.evaluate import spaces_cleanup

    model, tokenizer = tiny
    assert tokenizer.clean_up_tokenization_spaces is True  # what made transformers warn
    ids = tokenizer("SELECT a , b FROM t WHERE c = 'x' . ?").input_ids
    assert tokenizer.decode(ids, clean_up_tokenization_spaces=spaces_cleanup(tokenizer)) == tokenizer.decode(
        ids
    )

    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logging.Logger.warning_once.cache_clear()  # type: ignore[attr-defined]  # transformers warns once a process
    logging.getLogger("transformers").addHandler(handler)
    try:
        generate_answers(model, tokenizer, PROMPTS[:2], batch_size=2, max_new_tokens=4)
    finally:
        logging.getLogger("transformers").removeHandler(handler)
    assert not [line for line in said if "clean_up_tokenization_spaces" in line]
