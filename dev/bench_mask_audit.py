"""The mask audit's seconds on Exp A's real trainer (SmolLM2-135M, the 1,700 training examples): expecting the
tokens the trainer's dataset was built from (harness.checks.mask.shared_tokens) against tokenizing the examples
again (a copy of the list, which the trainer did not see), alternated.

Usage: LORABENCH_DATA=…/random-sample.jsonl PYTHONPATH=.:dev python dev/bench_mask_audit.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from exp_a_trainer import exp_a_trainer

from harness.checks import audit_mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    _, _, _, trainer = exp_a_trainer([])
    examples = trainer.lorabench_tokenized[0]
    seconds: dict[str, list[float]] = {"shared": [], "tokenized again": []}
    for _ in range(rounds):
        for way, values in seconds.items():
            started = time.perf_counter()
            verdict = audit_mask(
                trainer, trainer.processing_class, examples if way == "shared" else list(examples)
            )
            values.append(time.perf_counter() - started)
            assert verdict.verdict == "pass", verdict
    for way, values in seconds.items():
        print(f"mask audit, tokens {way}: median {statistics.median(values):.3f} s (min {min(values):.3f}, "
              f"max {max(values):.3f}, n = {len(values)})")  # fmt: skip


if __name__ == "__main__":
    main()
