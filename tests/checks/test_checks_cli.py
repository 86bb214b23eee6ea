"""`lorabench checks` end to end on the tiny model: a verdict table and an exit code."""

from __future__ import annotations

import json

from harness.cli import main

RANDOM_INIT = ["--set", "checks.smoke.first_loss_min=9", "--set", "checks.smoke.first_loss_max=12.5"]


def _argv(tiny_model_dir, sql_rows_file, *extra: str) -> list[str]:
    return ["checks", "--model", str(tiny_model_dir), "--data", str(sql_rows_file),
            "--set", "data.test_size=10", "--set", "recipe.batch_size=2", "--set", "recipe.warmup_steps=0",
            "--set", "recipe.lr=0.02", "--set", "device=cpu", *extra]  # fmt: skip


def test_clean_tiny_passes_every_check(tiny_model_dir, sql_rows_file, tmp_path, capsys):
    code = main([*_argv(tiny_model_dir, sql_rows_file, *RANDOM_INIT), "-o", str(tmp_path / "out")])
    table = capsys.readouterr().out
    verdicts = json.loads((tmp_path / "out" / "checks.json").read_text())
    assert list(verdicts) == ["end_of_turn", "mask_audit", "accumulation_parity", "cache_parity",
                              "quantizable_fraction", "dead_adapters", "smoke", "divergence", "adapter_weights"]  # fmt: skip
    assert {name: v["verdict"] for name, v in verdicts.items()} == dict.fromkeys(verdicts, "pass"), table
    assert code == 0
    # The trainer prints its log dicts to stdout too; the table starts at its header.
    assert any(line.split() == ["check", "verdict", "detail"] for line in table.splitlines())


def test_default_band_fails_a_random_init_model_and_exits_non_zero(tiny_model_dir, sql_rows_file, capsys):
    code = main(_argv(tiny_model_dir, sql_rows_file))
    table = capsys.readouterr().out
    assert code == 1
    smoke_line = next(line for line in table.splitlines() if line.startswith("smoke"))
    assert "fail" in smoke_line and "first loss" in smoke_line
    assert table.splitlines()[-1].startswith("run failed: smoke: first loss")


def test_the_verdict_task_is_checked_by_the_same_recipe(tiny_model_dir, tmp_path, capsys):
    # A task whose examples are chat messages, not SQL rows: the checks take any task's examples.
    code = main(["checks", "--model", str(tiny_model_dir), "--set", "task=verdict", "--set", "data.source=verdict-corpus",
                 "--set", "recipe.batch_size=2", "--set", "recipe.warmup_steps=0", "--set", "recipe.lr=0.02",
                 "--set", "device=cpu", *RANDOM_INIT, "--json"])  # fmt: skip
    captured = capsys.readouterr()
    table = captured.err  # the trainer's log lines go to stderr: stdout is the JSON alone
    verdicts = json.loads(captured.out)
    assert verdicts["mask_audit"]["verdict"] == "pass", table
    assert verdicts["accumulation_parity"]["verdict"] == "pass", table
    assert verdicts["smoke"]["verdict"] == "pass", table
    assert code == 0, table


def test_a_missing_data_file_is_one_line_and_exit_2(tiny_model_dir, tmp_path, capsys):
    code = main(["checks", "--model", str(tiny_model_dir), "--data", str(tmp_path / "absent.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert "data.source: file not found" in err and "Traceback" not in err
