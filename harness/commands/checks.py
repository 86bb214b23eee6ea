"""`lorabench checks`: the silent-bug checks alone — preflight, a smoke of the first steps, dead adapters.

The same setup options as `lorabench run`; nothing is evaluated or recorded, the verdicts are printed
(and written as JSON with `--json`). Exit code 1 when any check fails or errors, 0 otherwise.
Backend `hf` only: the checks drive TRL's trainer directly.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.commands.run import add_setup_arguments, setup_overrides
from harness.config import SetupConfig, load_setup
from harness.errors import UserError

if TYPE_CHECKING:  # the checks import torch: the CLI's parser must not (every command would pay for it)
    from harness.checks import SmokeObserver, Verdict

FAILING = ("fail", "error")
DETAIL_WIDTH = 110


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("checks", help="run the silent-bug checks (preflight, smoke steps, dead adapters) without a run")
    add_setup_arguments(parser)
    parser.add_argument("--json", dest="json_path", type=Path, help="also write every verdict with its evidence here")
    parser.set_defaults(func=cmd_checks)


def _smoke_callback(smoke: SmokeObserver) -> Any:
    from transformers import TrainerCallback

    class ObserveSmoke(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if logs and "loss" in logs and smoke.on_step(state.global_step, float(logs["loss"])):
                control.should_training_stop = True

    return ObserveSmoke()


def run_checks(setup: SetupConfig) -> dict[str, Verdict]:
    """Load, wrap LoRA, build the real trainer for the smoke's steps, run preflight, then train those steps."""
    from harness.backends import hf
    from harness.checks import DeadAdapterTracker, SmokeObserver, run_preflight
    from harness.models import resolve_model
    from harness.tasks.sql.data import load_split
    from harness.training import resolve_runtime

    if setup.backend != "hf":
        raise UserError(f"backend: `lorabench checks` drives the hf backend only, got {setup.backend!r}; use --set backend=hf")
    runtime = resolve_runtime(setup.device, setup.precision)
    split = load_split(setup.data)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    model = hf.wrap_lora(model, setup)
    if setup.recipe.gradient_checkpointing:
        model.enable_input_require_grads()
    smoke_config = setup.checks.smoke
    smoke_setup = setup.model_copy(update={"recipe": setup.recipe.model_copy(update={"steps": smoke_config.steps})})
    smoke, tracker = SmokeObserver(smoke_config), DeadAdapterTracker(model)
    trainer = hf.build_trainer(model, tokenizer, split.train, smoke_setup, runtime, [_smoke_callback(smoke), tracker.callback()])
    verdicts = run_preflight(model, tokenizer, split.train, setup, runtime, trainer)
    trainer.train()
    verdicts["smoke"] = smoke.final_verdict()
    verdicts["dead_adapters"] = tracker.verdict(model)
    return verdicts


def render_table(verdicts: dict[str, Verdict]) -> str:
    width = max(len(name) for name in verdicts)
    lines = [f"{'check'.ljust(width)}  verdict  detail"]
    for name, verdict in verdicts.items():
        detail = verdict.detail if len(verdict.detail) <= DETAIL_WIDTH else verdict.detail[: DETAIL_WIDTH - 1] + "…"
        lines.append(f"{name.ljust(width)}  {verdict.verdict.ljust(7)}  {detail}")
    return "\n".join(lines)


def cmd_checks(args: argparse.Namespace) -> int:
    setup = load_setup(args.config, setup_overrides(args))
    verdicts = run_checks(setup)
    print(render_table(verdicts))
    if args.json_path:
        payload = {name: verdict.to_dict() for name, verdict in verdicts.items()}
        args.json_path.write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    return 1 if any(v.verdict in FAILING for v in verdicts.values()) else 0
