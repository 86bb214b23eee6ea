"""The silent bugs of the story, injected into real (tiny) models and pipelines for the checks to catch."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import LlamaForCausalLM
from transformers.models.llama import modeling_llama


class IgnoresNumItems(LlamaForCausalLM):
    """A forward that drops `num_items_in_batch` while still taking **kwargs, so the Trainer believes the
    loss is normalised over the accumulated tokens and does not divide by G itself."""

    def forward(self, *args: Any, num_items_in_batch: Any = None, **kwargs: Any) -> Any:
        return super().forward(*args, **kwargs)


class CacheOnlyAttention(modeling_llama.LlamaAttention):
    """Gemma-style KV sharing gone wrong: K/V come only from the cache; without one the layer sees zeros."""

    def forward(
        self, hidden_states, position_embeddings=None, attention_mask=None, past_key_values=None, **kwargs
    ):  # type: ignore[override]
        shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        query = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        query, key = modeling_llama.apply_rotary_pos_emb(query, key, *position_embeddings)
        if past_key_values is not None:
            key, value = past_key_values.update(key, value, self.layer_idx)
        else:
            key, value = torch.zeros_like(key), torch.zeros_like(value)
        attend = modeling_llama.ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, modeling_llama.eager_attention_forward
        )
        out, weights = attend(
            self, query, key, value, attention_mask, dropout=0.0, scaling=self.scaling, **kwargs
        )
        return self.o_proj(out.reshape(*hidden_states.shape[:-1], -1).contiguous()), weights


def break_cache_sharing(model: Any, layer: int = 1) -> None:
    model.model.layers[layer].self_attn.__class__ = CacheOnlyAttention


def add_unused_linear(model: Any) -> None:
    """A projection in every decoder layer that forward never calls (targeting it gives dead adapters)."""
    for decoder_layer in model.model.layers:
        size = model.config.hidden_size
        decoder_layer.unused = nn.Linear(size, size, bias=False)


def mask_only_two_prompt_tokens(collator: Any) -> Any:
    """TRL 0.24 + transformers 5.x: len(BatchEncoding) == 2, so only 2 prompt tokens were masked."""

    def collate(rows: list[dict[str, Any]]) -> dict[str, Any]:
        batch = collator(rows)
        labels = batch["input_ids"].clone()
        labels[:, :2] = -100
        labels[batch["attention_mask"] == 0] = -100
        batch["labels"] = labels
        return batch

    return collate


def mask_token(collator: Any, token_id: int) -> Any:
    """transformers' classic language-modeling collator: labels equal to the pad id → -100. With pad id ==
    end-of-turn id the model never learns to stop."""

    def collate(rows: list[dict[str, Any]]) -> dict[str, Any]:
        batch = collator(rows)
        batch["labels"][batch["labels"] == token_id] = -100
        return batch

    return collate


def preshift_labels(collator: Any) -> Any:
    """Labels shifted in the collator while the model shifts them again: every target one token late."""

    def collate(rows: list[dict[str, Any]]) -> dict[str, Any]:
        batch = collator(rows)
        labels = batch["labels"]
        batch["labels"] = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], dim=1)
        return batch

    return collate


def scale_final_norm(model: Any, factor: float) -> None:
    """A weight-conversion bug (norm weights stored with the wrong offset or scale): logits × factor, so a
    random-init model's first loss jumps from ln(vocab) ≈ 10.8 to ~100 — and no error anywhere."""
    with torch.no_grad():
        model.model.norm.weight.mul_(factor)


def nll_trainer(model: Any, tokenizer: Any, examples: Any, *, batch: int, accum: int) -> Any:
    """TRL's SFTTrainer on the path where the model's own forward computes the loss (`loss_type="nll"`, as
    with Liger or TRL before chunked_nll): the path a forward ignoring num_items_in_batch corrupts."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from harness.tasks.encoding import tokenize_examples

    tokenized = tokenize_examples(tokenizer, examples)
    dataset = Dataset.from_dict(
        {
            "input_ids": [t.input_ids for t in tokenized],
            "completion_mask": [t.completion_mask for t in tokenized],
        }
    )
    args = SFTConfig(
        output_dir=".trainer-scratch", per_device_train_batch_size=batch, gradient_accumulation_steps=accum,
        max_steps=1, completion_only_loss=True, loss_type="nll", use_cpu=True, report_to=[], disable_tqdm=True,
    )  # fmt: skip
    return SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)


class LossSpike:
    """One training step's hidden states scaled by `factor` at the final norm, so that step's logits and
    loss jump far above the steps before (what a bad batch or an lr blow-up does to one step).

    Also a StepObserver: at step `after` it arms the hook, so the next training forward (the next step)
    spikes; forwards outside training (preflight, eval) are never touched."""

    def __init__(self, model: Any, factor: float, after: int) -> None:
        self.factor, self.after, self.armed = factor, after, False
        model.model.norm.register_forward_hook(self._scale)

    def _scale(self, module: nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor | None:
        if not (self.armed and module.training):
            return None
        self.armed = False
        return output * self.factor

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        self.armed = self.armed or step == self.after
        return None


class NanGradient:
    """A NaN in one LoRA B gradient at the step after `after`: that step's loss is finite (it is computed
    before the backward), its gradient norm is not. Also a StepObserver, to arm itself."""

    def __init__(self, model: Any, after: int) -> None:
        from harness.checks.adapters import lora_parameters

        self.after, self.armed = after, False
        _, lora_b = next(iter(lora_parameters(model).values()))
        lora_b.register_hook(self._poison)

    def _poison(self, grad: torch.Tensor) -> torch.Tensor | None:
        if not self.armed:
            return None
        self.armed = False
        poisoned = grad.clone()
        poisoned[0, 0] = float("nan")
        return poisoned

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        self.armed = self.armed or step == self.after
        return None
