"""Options misuse is a usage error naming the fix; cases this host cannot run skip naming what is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lorabench-seeds=3407,x"], "*--lorabench-seeds: '3407,x' is not a list of integers; give e.g. --lorabench-seeds=3407,42,1234"),
        (["--lorabench-seeds=42,42"], "*--lorabench-seeds: '42,42' repeats a seed; give each seed once"),
        (["--lorabench-set=recipe.steps"], "*--lorabench-set: override 'recipe.steps' must look like field.path=value*"),
        (["--lorabench-data=missing.jsonl"], "*--lorabench-data: no such file 'missing.jsonl'*give an existing .jsonl/.json/.parquet file or a hub dataset id"),
        (["--lorabench-stack=a", "--lorabench-other-stack=a"], "*--lorabench-other-stack: 'a' is the stack under test*"),
    ],
)  # fmt: skip
def test_misuse_is_a_usage_error_naming_the_fix(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], args: list[str], message: str
) -> None:
    bench_dir()
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: lorabench options:", message])


def test_markers_are_registered(pytester: pytest.Pytester, bench_dir: Callable[..., Path]) -> None:
    bench_dir()
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.gpu: *", "@pytest.mark.multi_gpu(n=2): *", "@pytest.mark.cpu_ok: *",
                                 "@pytest.mark.slow: *", "@pytest.mark.timed: *"])  # fmt: skip
    # --strict-markers would turn an unregistered marker into an error: these must collect cleanly.
    pytester.makepyfile(
        test_marks="import pytest\n@pytest.mark.gpu\n@pytest.mark.multi_gpu\n@pytest.mark.timed\ndef test_x(): pass\n"
    )
    pytester.runpytest("--strict-markers", "--collect-only", "test_marks.py").assert_outcomes()


CANNOT_RUN = """\
import pytest

SETUP = "setups/tiny.toml"

def test_not_cpu_ok(lorabench_run):
    lorabench_run(SETUP, 3407)

@pytest.mark.cpu_ok
@pytest.mark.multi_gpu
def test_two_cards(lorabench_run):
    lorabench_run(SETUP, 3407)

@pytest.mark.cpu_ok
def test_qlora(lorabench_run):
    lorabench_run(SETUP, 3407, {"precision": "4bit"})

@pytest.mark.cpu_ok
def test_unsloth(lorabench_run):
    lorabench_run(SETUP, 3407, {"backend": "unsloth"})
"""


def test_cases_the_host_cannot_run_skip_naming_what_is_missing(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...]
) -> None:
    import importlib.util

    import torch

    if (
        torch.cuda.device_count()
        or importlib.util.find_spec("bitsandbytes")
        or importlib.util.find_spec("unsloth")
    ):
        pytest.skip("this test describes a CPU-only host without bitsandbytes and unsloth")
    bench_dir()
    pytester.makepyfile(test_claims=CANNOT_RUN)
    result = pytester.runpytest(*bench_args, "-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines_random([
        "SKIPPED * needs a GPU: not marked cpu_ok, and this host has torch.cuda.device_count() == 0",
        "SKIPPED * multi_gpu: needs 2 GPUs; this host has torch.cuda.device_count() == 0",
        "SKIPPED * exp_t/tiny: precision '4bit' needs the bitsandbytes package (not importable here); "
        "precision '4bit' needs a GPU; this host has torch.cuda.device_count() == 0",
        "SKIPPED * exp_t/tiny: backend 'unsloth' needs the unsloth package (not importable here); *",
    ])  # fmt: skip
    assert "lorabench runs" not in result.stdout.str()


def test_a_setups_folder_that_is_not_there_is_a_usage_error(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path]
) -> None:
    bench_dir()
    result = pytester.runpytest("--lorabench-setups=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: lorabench options:",
            "*--lorabench-setups: */nowhere is not a folder; give a folder of setup .toml files",
        ]
    )


def test_a_bad_setup_file_stops_the_collection_in_one_line(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path]
) -> None:
    setup = bench_dir()
    setup.write_text(setup.read_text().replace('kind = "gain"', 'kind = "gian"'))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: nothing runs
    said = [line for line in result.stdout.lines if "'gian' is not a claim kind" in line]
    assert (
        said[0].endswith("(harness/suite/claims.py, KINDS)")
        and "setups/tiny.toml: claims.gain.kind: " in said[0]
    )
    assert "Traceback" not in result.stdout.str() and "plugin.py" not in result.stdout.str()


PAIR = """\
[suite]
markers = ["cpu_ok"]

[claims."same as tiny"]
kind = "equivalent"
equivalence_margin = 3.0
{extra}setups = {{ tiny = "tiny.toml", other = "other.toml" }}
"""


@pytest.mark.parametrize(
    ("other", "extra", "args", "reason"),
    [
        ('[model]\nsource = "smollm2-135m"\n', "", ["--lorabench-model=smollm2-135m"],
         "*exp_t: 'same as tiny' compares two models; --lorabench-model would make them the same model"),
        ("", "across_stacks = true\n", [], "*exp_t: 'same as tiny' compares two stacks: give --lorabench-other-stack NAME*"),
        ("nodes = 2\ngpus = 1\n", "", [], "*two nodes meet at $LORABENCH_RDZV_ENDPOINT (README: Across two hosts); not set"),
    ],
)  # fmt: skip
def test_a_claim_this_session_cannot_judge_skips_before_any_run(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch, other: str, extra: str, args: list[str], reason: str,
) -> None:  # fmt: skip
    for name in ("LORABENCH_RDZV_ENDPOINT", "PET_RDZV_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    tiny = bench_dir()
    model = "" if "[model]" in other else tiny.read_text().split("[model]\n", 1)[1].split("\n", 1)[0] + "\n"
    (tiny.parent / "other.toml").write_text(f'name = "other"\nexperiment = "exp_t"\n{other}'
                                            + (f"\n[model]\n{model}" if model else "") + "\n" + PAIR.format(extra=extra))  # fmt: skip
    result = pytester.runpytest(*bench_args, *args, "-rs", "-k", "same-as-tiny")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED [[]1] {reason}"])
    assert "lorabench runs" not in result.stdout.str()  # skipped before anything trained or was read
