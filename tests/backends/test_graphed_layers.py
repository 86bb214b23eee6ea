"""recipe.compile = "graphs": the layer plumbing on the tiny model, and the settings it refuses.

This machine has no CUDA, so no graph is captured here: the capture is handed a function that returns
the layers' positional calls as they are. What these tests hold is everything around the graph:
arguments flattened into tensors and rebuilt into the layer's keywords (any slip changes the loss or
the gradients), one capture per batch shape, eager for eval and no-grad calls, the layers put back.
That a captured graph replays the same numbers is shown on the H200 (dev/gpu/profile_step.py
--mode graphs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from harness.backends import graphed_layers, hf
from harness.backends.graphed_layers import GraphedLayers, compile_mode, decoder_layers
from harness.config import load_setup
from harness.errors import UserError
from harness.runtime import Runtime


def _loss_and_grads(
    model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor
) -> tuple[float, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    labels = ids.masked_fill(mask == 0, -100)
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters() if p.requires_grad]


def _batch(length: int, padded_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(length)
    ids = torch.randint(5, 200, (3, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[:padded_rows, length // 2 :] = 0  # right padding: a 4D attention mask reaches every layer
    return ids, mask


def test_graphed_layers_rebuild_every_layer_call(tiny_model_dir: Path) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}", "lora.dropout=0.0"])
    model, _ = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32"))
    model = hf.wrap_lora(model, setup)
    model.config.use_cache = False  # as training runs it (a KV cache object would keep every call eager)
    model.train()
    captured: list[list[tuple]] = []

    def capture_as_is(calls: tuple, samples: tuple, **_: object) -> tuple:
        captured.append([tuple(tuple(t.shape) for t in sample) for sample in samples])
        return calls

    eager = {length: _loss_and_grads(model, *_batch(length, 2)) for length in (12, 20)}
    graphed = GraphedLayers(decoder_layers(model, "graphs"), capture=capture_as_is)
    graphed.install()
    try:
        for length in (12, 20, 12):
            loss, grads = _loss_and_grads(model, *_batch(length, 2))
            assert loss == eager[length][0]
            assert all(torch.equal(a, b) for a, b in zip(grads, eager[length][1], strict=True))
        layers = len(graphed.layers)
        # One capture per shape, all layers at once; the 12-token shape met again reuses its capture.
        assert [len(c) for c in captured] == [layers, layers] and graphed.stats.shapes == 2
        assert captured[0][0][0] == (3, 12, model.config.hidden_size)
        assert graphed.stats.graphed_calls == 3 * layers and graphed.stats.eager_calls == 0

        model.eval()
        with torch.no_grad():
            model(input_ids=_batch(12, 0)[0])  # eval (and generation's cached decoding) stays eager
        assert graphed.stats.graphed_calls == 3 * layers and len(captured) == 2
    finally:
        graphed.remove()
    assert all("forward" not in vars(layer) for layer in graphed.layers)


def test_graphed_layers_stop_capturing_past_the_shape_limit(tiny_model_dir: Path, monkeypatch) -> None:

    monkeypatch.setattr(graphed_layers, "MAX_SHAPES", 1)
    setup = load_setup(None, [f"model.source={tiny_model_dir}"])
    model, _ = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32"))
    model = hf.wrap_lora(model, setup)
    model.config.use_cache = False  # as training runs it (a KV cache object would keep every call eager)
    model.train()
    graphed = GraphedLayers(decoder_layers(model, "graphs"), capture=lambda calls, samples, **_: calls)
    graphed.install()
    try:
        eager_loss = _loss_and_grads(model, *_batch(20, 1))[0]
        _loss_and_grads(model, *_batch(12, 1))
        assert graphed.stats.shapes == 1 and graphed.stats.eager_calls == len(graphed.layers)
    finally:
        graphed.remove()
    assert _loss_and_grads(model, *_batch(20, 1))[0] == eager_loss


def test_a_batch_short_of_full_rows_runs_eager_and_is_never_captured(tiny_model_dir: Path) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}", "lora.dropout=0.0"])
    model, _ = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32"))
    model = hf.wrap_lora(model, setup)
    model.config.use_cache = False
    model.train()
    asked: list[dict] = []

    def capture_as_is(calls: tuple, samples: tuple, **kwargs: object) -> tuple:
        asked.append(kwargs)
        return calls

    ids, mask = _batch(12, 1)  # 3 rows: the full batch
    short_ids, short_mask = ids[:2], mask[:2]  # an epoch's last, shorter batch
    eager_short = _loss_and_grads(model, short_ids, short_mask)
    graphed = GraphedLayers(decoder_layers(model, "graphs"), capture=capture_as_is, full_rows=3)
    graphed.install()
    try:
        loss, grads = _loss_and_grads(model, short_ids, short_mask)
        assert graphed.stats.shapes == 0 and graphed.stats.eager_calls == len(graphed.layers) and not asked
        # Same numbers as plain eager (it is plain eager).
        assert loss == eager_short[0] and all(
            torch.equal(a, b) for a, b in zip(grads, eager_short[1], strict=True)
        )
        _loss_and_grads(model, ids, mask)
        assert graphed.stats.shapes == 1 and graphed.stats.graphed_calls == len(graphed.layers)
        # One warm-up pass before the capture (preflight has already warmed the kernels up).
        assert [a.get("num_warmup_iters") for a in asked] == [graphed_layers.WARMUP_ITERS] == [1]
    finally:
        graphed.remove()


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("gpus=2", "gpus = 2"),
        ("recipe.grad_accum=2", "recipe.grad_accum = 2"),
        ("recipe.gradient_checkpointing=true", "recipe.gradient_checkpointing = True"),
        ("precision=4bit", "precision = '4bit'"),
        ("device=cpu", "device = 'cpu'"),
    ],
)
def test_graphs_refuse_what_they_cannot_replay(setting: str, field: str) -> None:
    with pytest.raises(
        UserError, match=rf"recipe\.compile: 'graphs' cannot run with {field} .*or recipe\.compile = 'none'"
    ):
        load_setup(None, ["recipe.compile=graphs", setting])


def test_graphs_on_a_cpu_run_name_the_fix(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from harness.tasks.sql.data import SqlExample

    monkeypatch.chdir(tmp_path)
    setup = load_setup(None, [f"model.source={tiny_model_dir}", "recipe.compile=graphs", "recipe.steps=1",
                              "checks.preflight=false"])  # fmt: skip
    model, tokenizer = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32"))
    example = SqlExample(
        question="Name?", context="CREATE TABLE t (name VARCHAR)", answer="SELECT name FROM t"
    )
    with pytest.raises(UserError, match=r"'graphs' needs a CUDA \(or ROCm\) GPU, this run is on 'cpu'"):
        hf.train(model, tokenizer, [example] * 4, setup, Runtime("cpu", "fp32"))


@pytest.mark.parametrize(
    ("settings", "runtime", "mode"),
    [
        ([], Runtime("cuda", "bf16"), "graphs"),
        ([], Runtime("cpu", "fp32"), "none"),
        ([], Runtime("cpu", "bf16"), "layers"),
        (["backend=unsloth"], Runtime("cpu", "bf16"), "none"),
        (["gpus=2"], Runtime("cuda", "bf16"), "none"),
        (["recipe.grad_accum=2"], Runtime("cuda", "bf16"), "none"),
        (["recipe.gradient_checkpointing=true"], Runtime("cuda", "bf16"), "none"),
        (["precision=4bit"], Runtime("cuda", "4bit"), "none"),
        (["backend=unsloth"], Runtime("cuda", "bf16"), "none"),
    ],
)
def test_auto_chooses_graphs_only_where_they_run(
    settings: list[str], runtime: Runtime, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CXX", sys.executable)  # a compiler is there (only its presence is asked)
    assert compile_mode(load_setup(None, ["recipe.compile=auto", *settings]), runtime) == mode
    assert compile_mode(load_setup(None, settings), runtime) == "none"  # the default stays eager


def test_auto_stays_eager_on_a_cpu_without_a_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    setup = load_setup(None, ["recipe.compile=auto"])
    assert compile_mode(setup, Runtime("cpu", "bf16")) == "none"
    monkeypatch.setenv("CXX", sys.executable)
    assert compile_mode(setup, Runtime("cpu", "bf16")) == "layers"


def test_auto_stays_eager_on_a_cpu_for_a_run_too_short_to_pay_for_the_compile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.autorecipe import COMPILE_PAYS_AFTER, auto_compile

    monkeypatch.setenv("CXX", sys.executable)
    short = load_setup(None, ["recipe.compile=auto", f"recipe.steps={COMPILE_PAYS_AFTER - 1}"])
    assert compile_mode(short, Runtime("cpu", "bf16")) == "none"
    assert auto_compile(short, "cpu", "bf16")[1].startswith(f"{COMPILE_PAYS_AFTER - 1} steps: compiling")
    enough = load_setup(None, ["recipe.compile=auto", f"recipe.steps={COMPILE_PAYS_AFTER}"])
    assert compile_mode(enough, Runtime("cpu", "bf16")) == "layers"
    assert compile_mode(short, Runtime("cuda", "bf16")) == "graphs"  # graphs pay from the first step
