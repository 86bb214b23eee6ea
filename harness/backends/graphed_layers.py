"""`recipe.compile = "graphs"`: every decoder layer's forward and backward replayed from CUDA graphs while
training, so a small model's step stops paying Python and kernel launches per op (on the H200 a
SmolLM2-135M step took ~200 ms of host time for ~21 ms of kernels: reports/benchmarks/h200/step_profile.txt).

Same math: each layer runs eager's ops, captured once per batch shape by
`torch.cuda.make_graphed_callables`; embedding, head, loss, clipping and optimizer stay eager. Batches are
padded to a multiple of `PAD_MULTIPLE` tokens (masked, so the loss is the same); a shape past `MAX_SHAPES`
runs eager. Config errors: more than one GPU (DDP hooks are not captured), gradient accumulation (a replay
rewrites the gradient buffer), gradient checkpointing, a 4-bit base.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

import torch

from harness.autorecipe import auto_compile
from harness.errors import UserError

# One capture costs ~1.1 s on the H200 (30 layers' forward and backward, warmed up and captured). Exp A's
# batches of 8 rows end at 128, 192 or 256 tokens padded to 64 (four shapes, 4.3-5.4 s of capture a run),
# all at 256 padded to 256 (one length; the epoch's last, shorter batch made a second shape: 2.0-2.1 s on
# the H200, reports/benchmarks/h200/2026-12-01-overhead-cuts.txt): the step is bound by the host, not by the padded tokens.
# That short batch (1,700 rows = 212 batches of 8 and one of 4) now runs eager: one step at the eager
# ~0.3 s instead of a second capture for a shape met once an epoch (`full_rows`).
PAD_MULTIPLE = 256
MAX_SHAPES = 12
# make_graphed_callables runs each callable this many times eagerly before capturing (its default, 3, is
# sized for DDP's lazy set-up). Here preflight has already run the model's forward and backward (cuBLAS
# handles, workspaces, lazily loaded kernels are in place), so one warm-up pass is what the capture needs;
# the kernels captured do not depend on how many passes came before.
WARMUP_ITERS = 1


def compile_mode(setup: Any, runtime: Any) -> str:
    """recipe.compile with "auto" resolved (harness.autorecipe: graphs on one NVIDIA GPU, compiled layers on
    a bf16 CPU, none elsewhere)."""
    if setup.recipe.compile != "auto":
        return setup.recipe.compile
    return auto_compile(setup, runtime.device, runtime.precision, nvidia=torch.version.hip is None)[0]


@dataclasses.dataclass
class GraphStats:
    """What a graphed training span did, for the record: shapes captured, seconds spent capturing, and
    layer calls that ran eager (a shape past MAX_SHAPES, or a layer whose arguments differed)."""

    shapes: int = 0
    capture_s: float = 0.0
    eager_calls: int = 0
    graphed_calls: int = 0

    def to_record(self) -> dict[str, float | int]:
        return {**dataclasses.asdict(self), "capture_s": round(self.capture_s, 2)}


def decoder_layers(model: Any, setting: str) -> list[torch.nn.Module]:
    layers = [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]
    if not layers:
        raise UserError(
            f"recipe.compile: {setting!r} found no decoder layer (a module class named *DecoderLayer) in "
            f"{type(model).__name__}; set recipe.compile = 'none'"
        )
    return layers


# Any values: a decoder layer's keyword arguments: tensors, caches and flags by name.
def _split_kwargs(kwargs: dict[str, Any]) -> tuple[list[str], list[torch.Tensor], tuple]:
    """Tensor arguments become graph inputs (copied in at every replay); the rest is part of the shape
    key, since a capture bakes them in. A tuple of tensors (rotary cos, sin) counts as its tensors."""
    names, tensors, fixed = [], [], []
    for name, value in sorted(kwargs.items()):
        if isinstance(value, torch.Tensor):
            names.append(name)
            tensors.append(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, torch.Tensor) for v in value):
            names.append(f"{name}*{len(value)}")
            tensors.extend(value)
        else:
            fixed.append((name, value))
    return names, tensors, tuple(fixed)


# Any values: a decoder layer's keyword arguments: tensors, caches and flags by name.
def _join_kwargs(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> dict[str, Any]:
    kwargs, at = {}, 0
    for name in names:
        base, star, count = name.partition("*")
        if star:
            kwargs[base] = tuple(tensors[at : at + int(count)])
            at += int(count)
        else:
            kwargs[base] = tensors[at]
            at += 1
    return kwargs


class _PositionalCall(torch.nn.Module):
    """A layer called with tensors only, as make_graphed_callables wants; kwargs rebuilt inside."""

    def __init__(self, layer: torch.nn.Module, forward: Callable, names: Sequence[str], fixed: tuple) -> None:
        super().__init__()
        self.layer = layer
        self._eager_forward = forward
        self._names = list(names)
        self._fixed = dict(fixed)

    def forward(self, hidden_states: torch.Tensor, *tensors: torch.Tensor) -> Any:
        return self._eager_forward(hidden_states, **_join_kwargs(self._names, tensors), **self._fixed)


# The kinds of non-tensor argument a capture can bake in (a layer called with another kind, a KV cache
# object say, runs eager).
_FIXED_KINDS = (type(None), bool, int, float, str)


class GraphedLayers:
    """Installs a forward on every decoder layer that replays its graph for shapes already captured and
    captures all layers at once when the first layer meets a new shape (one memory pool per shape, so a
    shape's forward and backward graphs replay in the order they were captured)."""

    def __init__(
        self,
        layers: Sequence[torch.nn.Module],
        capture: Callable = torch.cuda.make_graphed_callables,
        full_rows: int | None = None,
    ) -> None:
        """`full_rows`: the rows of a full batch; a batch of other rows (an epoch's short last one) runs
        eager rather than being captured for one step (None: every shape is captured)."""
        self.layers = list(layers)
        self.capture = capture
        self.full_rows = full_rows
        self.eager = [layer.forward for layer in self.layers]
        self.graphs: dict[tuple, tuple[Callable, ...]] = {}
        self.stats = GraphStats()

    def install(self) -> None:
        for index, layer in enumerate(self.layers):
            layer.forward = self._forward_for(index)

    def remove(self) -> None:
        for layer in self.layers:
            del layer.forward  # the class's forward shows through again

    def _forward_for(self, index: int) -> Callable:
        def forward(hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            layer = self.layers[index]
            if args or not (layer.training and torch.is_grad_enabled()):
                return self.eager[index](hidden_states, *args, **kwargs)
            names, tensors, fixed = _split_kwargs(kwargs)
            key = (tuple(names), repr(fixed), *((tuple(t.shape), t.dtype) for t in (hidden_states, *tensors)))
            if key not in self.graphs and index == 0 and self._capturable(hidden_states, fixed):
                self._capture(key, hidden_states, names, tensors, fixed)
            graphed = self.graphs.get(key)
            if graphed is None:
                self.stats.eager_calls += 1
                return self.eager[index](hidden_states, **kwargs)
            self.stats.graphed_calls += 1
            return graphed[index](hidden_states, *tensors)

        return forward

    def _capturable(self, hidden: torch.Tensor, fixed: tuple) -> bool:
        full = self.full_rows is None or hidden.shape[0] == self.full_rows
        return (
            full
            and len(self.graphs) < MAX_SHAPES
            and all(isinstance(value, _FIXED_KINDS) for _, value in fixed)
        )

    def _capture(
        self, key: tuple, hidden: torch.Tensor, names: list[str], tensors: list[torch.Tensor], fixed: tuple
    ) -> None:
        started = time.perf_counter()
        calls, samples = [], []
        needs_grad = hidden.requires_grad
        for index, layer in enumerate(self.layers):
            calls.append(_PositionalCall(layer, self.eager[index], names, fixed))
            # Sample inputs only set shapes; each replay copies the real ones in. A layer's input needs a
            # gradient when anything before it trains.
            sample = torch.randn_like(hidden).requires_grad_(needs_grad)
            samples.append((sample, *(t.detach().clone() for t in tensors)))
            needs_grad = needs_grad or any(p.requires_grad for p in layer.parameters())
        # make_graphed_callables refuses autocast's weight cache; the casts it would cache are captured
        # into the graph instead, so the arithmetic is the same.
        autocast = torch.is_autocast_enabled("cuda")
        dtype = torch.get_autocast_dtype("cuda")
        with torch.autocast("cuda", dtype=dtype, enabled=autocast, cache_enabled=False), _cache_kept():
            graphed = self.capture(
                tuple(calls), tuple(samples), num_warmup_iters=WARMUP_ITERS, allow_unused_input=True
            )
        self.graphs[key] = tuple(graphed)
        self.stats.shapes = len(self.graphs)
        self.stats.capture_s += time.perf_counter() - started


@contextlib.contextmanager
def _cache_kept() -> Generator[None]:
    """torch.cuda.graph empties the allocator's cache before every capture (two per layer: 60 for SmolLM2,
    per shape), so every capture gives back the blocks the warm-up just made and allocates them anew. The
    graphs are the same without it (empty_cache frees only unused cached blocks). Its own saving was not
    measured apart: the 2026-12-01 run (259c3ca)'s captures ran with it (before and after the padding change)."""
    # Only what this torch has (a CPU build lacks the host cache's function).
    kept = [
        (owner, name, getattr(owner, name))
        for owner, name in ((torch.cuda, "empty_cache"), (torch._C, "_host_emptyCache"))
        if hasattr(owner, name)
    ]
    for owner, name, _ in kept:
        setattr(owner, name, lambda: None)
    try:
        yield
    finally:
        for owner, name, function in kept:
            setattr(owner, name, function)


@contextlib.contextmanager
def graphed_layers(model: Any, enabled: bool, full_rows: int | None = None) -> Generator[GraphStats | None]:
    """Graphs every decoder layer for the span (training), then puts the eager forward back, so
    preflight, eval and export never see a graph. Yields the span's GraphStats. `full_rows`: see
    GraphedLayers."""
    if not enabled:
        yield None
        return
    graphed = GraphedLayers(decoder_layers(model, "graphs"), full_rows=full_rows)
    graphed.install()
    try:
        yield graphed.stats
    finally:
        graphed.remove()
