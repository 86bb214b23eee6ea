"""Resume that resumes: a seed stopped mid-training continues from its last saved step.

After each minute of training (`recipe.checkpoint_every = "auto"`, `AUTO_EVERY_S`), or every N steps where
the setup says N, the trainer saves transformers' checkpoint and, written last,
`lorabench.json` with what the Trainer does not keep (each step's loss and grad norm, training seconds,
tokens); a checkpoint without it was cut short and is never resumed from. The folder is the run plan's
`checkpoint_folder`, keyed by the fingerprint, outside the work folder so a killed run's sweep keeps it;
removed once the seed has a record that is not `killed`.

On CPU a resumed run gives the same losses and adapter as one never stopped
(tests/suite/test_bench_interrupt.py). Not covered: DDP/nodes and timed runs (they train from step 0).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

from harness import atomic

STATE_FILE = "lorabench.json"
PREFIX = "checkpoint-"
# "auto": a save once this many seconds of training have passed since the last (or the start). A save costs
# 0.27-0.43 s on the H200 (Exp A's: 20 MB adapter, 39 MB optimizer state, the tokenizer): every 50 steps, a toll
# of 1.6 s on each seed whose 300 steps take 10 s, to spare the rare stopped seed at most 10 s of steps. On the
# 2-core Xeon a minute is ~40 steps, as the former default of 50 was there (docs/measurements.md, checkpoint saves).
AUTO_EVERY_S = 60.0


@dataclass
class SavedState:
    """What a checkpoint adds to transformers' own: the steps so far as lorabench observed them."""

    step: int
    losses: list[float] = field(default_factory=list)
    grad_norms: list[float | None] = field(default_factory=list)
    train_s: float = 0.0  # training seconds of the steps kept (the steps after the last save are lost)
    tokens: int = 0


def is_resumable(setup: Any) -> bool:
    """Checkpoints are saved unless disabled (`recipe.checkpoint_every = 0`) or the run has several processes."""
    return setup.recipe.checkpoint_every != 0 and setup.world_size == 1 and getattr(setup, "nodes", 1) == 1


def _step_of(path: Path) -> int:
    try:
        return int(path.name.removeprefix(PREFIX))
    except ValueError:
        return -1


def latest(root: Path | None) -> tuple[Path, SavedState] | None:
    """The newest complete checkpoint under `root` and its saved state."""
    if root is None or not root.is_dir():
        return None
    for path in sorted(root.glob(f"{PREFIX}*"), key=_step_of, reverse=True):
        try:
            state = SavedState(**json.loads((path / STATE_FILE).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            continue  # cut short while saving, or unreadable: an older one may be whole
        if state.step == _step_of(path):
            return path, state
    return None


def mark_complete(checkpoint: Path, state: SavedState) -> None:
    """Written after transformers has saved everything else; then the older checkpoints go."""
    atomic.write_text(checkpoint / STATE_FILE, json.dumps(asdict(state)))
    for other in checkpoint.parent.glob(f"{PREFIX}*"):
        if other != checkpoint:
            shutil.rmtree(other, ignore_errors=True)


def remove(root: Path) -> None:
    """The run ended (not killed): its checkpoints are of no further use."""
    shutil.rmtree(root, ignore_errors=True)
    # Empty parents up to .checkpoints go too, so a finished suite leaves no empty folders behind.
    for parent in root.parents:
        if parent.name == ".checkpoints" or not parent.is_dir() or any(parent.iterdir()):
            if parent.name == ".checkpoints" and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
            break
        parent.rmdir()


class SaveTracker:
    """Trainer callback: after each checkpoint transformers saved, the state lorabench keeps with it."""

    def __init__(
        self,
        outcome: Any,
        resumed: SavedState | None,
        *,
        every_s: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`every_s`: save by time ("auto"), after that many seconds of training since the last save; None: the
        Trainer saves every `save_steps` steps. `clock`: the time in seconds (a test's own)."""
        self.outcome = outcome
        self.every_s = every_s
        self.clock = clock
        self.base_s = resumed.train_s if resumed else 0.0
        self.base_tokens = resumed.tokens if resumed else 0
        self.grad_norms: list[float | None] = list(resumed.grad_norms) if resumed else []
        self.started = self.last_save = clock()
        self.trainer: Any = None  # set once the trainer exists (the token count lives on it)

    def callback(self) -> Any:
        from transformers import TrainerCallback

        tracker = self

        class SaveState(TrainerCallback):
            def on_log(
                self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any
            ) -> None:
                if logs and "loss" in logs:
                    norm = logs.get("grad_norm")
                    tracker.grad_norms.append(float(norm) if norm is not None else None)

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
                last = state.global_step >= state.max_steps
                if tracker.every_s is not None:
                    # Never at the last step: the adapter and the record follow at once.
                    control.should_save = not last and tracker.clock() - tracker.last_save >= tracker.every_s
                elif last and state.global_step % args.save_steps:
                    # transformers saves once more at the last step; the adapter and the record follow at
                    # once, so that save would only cost its I/O (and, on a full disk, the run's train stats).
                    control.should_save = False
                return control

            def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                tracker.last_save = tracker.clock()
                tracker.saved(Path(args.output_dir) / f"{PREFIX}{state.global_step}", state.global_step)

        return SaveState()

    def saved(self, checkpoint: Path, step: int) -> None:
        state = SavedState(
            step=step,
            losses=list(self.outcome.losses),
            grad_norms=list(self.grad_norms),
            train_s=round(self.base_s + self.clock() - self.started, 3),
            tokens=self.tokens(),
        )
        mark_complete(checkpoint, state)

    def tokens(self) -> int:
        """Tokens of every step kept: the attempts before this one, and this one's."""
        return self.base_tokens + (self.trainer.tokens_seen() if self.trainer is not None else 0)


def replay(state: SavedState, observers: Any, outcome: Any) -> None:
    """The saved steps once more through the observers (smoke, divergence, progress, the step journal), so
    a resumed run is checked and journaled as a whole, and its loss curve starts at step 1."""
    # Progress jumps to the saved step in one event: shown step by step, the ETA would be taken from
    # steps replayed in a millisecond (an observer with a `progress` only shows it).
    shown = [o for o in observers if hasattr(o, "progress")]
    for step, (loss, norm) in enumerate(zip_longest(state.losses, state.grad_norms), start=1):
        outcome.losses.append(loss)
        for observer in observers:
            if observer not in shown and observer.on_step(step, loss, norm):
                break  # it stopped the run once already; it would not have been saved past that
    for observer in shown:
        if state.losses:
            observer.progress.advance(len(state.losses), loss=state.losses[-1])
