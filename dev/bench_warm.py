"""A suite's sequence of runs in one process, as `lorabench bench` runs seeds: the tiny model, three seeds
one after another, each trainer forked from the warm server (the default) or spawned (`--spawn`, as runs the
server cannot fork are). Time the whole command from outside, alternating the two; it prints each run's
seconds around `run_setup` and the record's `spawn` and `child_start` phases (harness/run/warm.py).

    python dev/bench_warm.py /tmp/warm-bench [--seeds 3] [--spawn]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness.config import ModelConfig, load_setup
from harness.models import resolve_model
from harness.run import launch
from harness.run.parent import RunOptions, run_setup
from harness.testing import build_tiny_model

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sql-create-context" / "random-sample.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="keeps the tiny model between calls")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--spawn", action="store_true", help="spawn every trainer anew")
    args = parser.parse_args()
    if args.spawn:
        launch.forkable = lambda _setup: False
    model = args.folder / "tiny-llama"
    if not model.is_dir():
        build_tiny_model(model, resolve_model(ModelConfig(source="smollm2-135m")).path, seed=0)
    warm = int(not args.spawn)
    with tempfile.TemporaryDirectory(dir=args.folder) as results:
        for seed in range(1, args.seeds + 1):
            setup = load_setup(None, [
                f"model.source={model}", f"data.source={DATA}", "data.test_size=4", "recipe.steps=3",
                "recipe.batch_size=4", "eval.max_new_tokens=4", "checks.smoke.first_loss_max=20",
                "checks.smoke.steps=2", f"recipe.seed={seed}",
            ])  # fmt: skip
            began = time.time()
            record, _ = run_setup(setup, RunOptions(Path(results), quiet=True))
            phases = record.timings.phases or {}
            print(
                f"warm={warm} seed={seed} status={record.status} run_s={time.time() - began:.2f} "
                f"spawn_s={phases.get('spawn')} child_start_s={phases.get('child_start')}",
                flush=True,
            )


if __name__ == "__main__":
    main()
