"""Task `verdict`: the shipped corpus, the contract parser, the gate's rates, the config default, and a
whole run on a tiny real model (record, predictions and the saved adapter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import DataConfig, load_setup
from harness.errors import UserError
from harness.tasks.verdict.data import CORPUS_FILE, load_rows, load_split
from harness.tasks.verdict.scoring import parse_verdict, score_prediction, summarize


def test_shipped_corpus_has_a_fixed_held_out_split_of_parsable_golds() -> None:
    split = load_split(DataConfig(source="verdict-corpus"))
    assert (split.n_rows, len(split.train), len(split.test)) == (62, 46, 16)
    golds = [parse_verdict(ex.answer) for ex in (*split.train, *split.test)]
    assert all(g.is_contract for g in golds)
    assert {g.decision for g in (parse_verdict(ex.answer) for ex in split.test)} == {
        "approve",
        "block",
        "abstain",
    }
    situations = [ex.situation for ex in (*split.train, *split.test)]
    assert len(set(situations)) == len(situations)
    # The split is the file's, not a shuffle: a different split_seed gives the same split.
    assert load_split(DataConfig(source=str(CORPUS_FILE), split_seed=7)).hash == split.hash


@pytest.mark.parametrize(
    ("text", "decision", "tag", "ok"),
    [
        ("OK", "approve", None, True),
        ("[deploy] block: no rollback plan", "block", "deploy", True),
        ("UNSURE: which environment", "abstain", None, True),
        ("ok", "block", None, False),
        ("OK, looks fine", "block", None, False),
        ("[Deploy] block: x", "block", None, False),
        ("[deploy] no rollback", "block", None, False),
        ("", "block", None, False),
    ],
)
def test_contract_parser_reads_a_non_verdict_as_a_block(
    text: str, decision: str, tag: str | None, ok: bool
) -> None:
    parsed = parse_verdict(text)
    assert (parsed.decision, parsed.tag, parsed.is_contract) == (decision, tag, ok)


def test_gate_rates() -> None:
    cases = [
        ("OK", "OK"),  # approve, right
        ("I think this is fine", "OK"),  # non-verdict on an approve case: a false block
        ("[data] block: x", "OK"),  # a false block
        ("UNSURE: who approved", "OK"),  # an abstention, not a block
        ("[deploy] block: y", "[deploy] block: no rollback plan"),  # caught, same tag
        ("[security] block: y", "[deploy] block: no rollback plan"),  # caught, wrong tag
        ("blocked!", "[finance] block: self-approval"),  # non-verdict: the parser blocks it — a catch
        ("OK", "[finance] block: self-approval"),  # missed
        ("UNSURE: which database", "UNSURE: which database and whether it is production"),
    ]
    rates = summarize([score_prediction(p, g) for p, g in cases])
    assert rates["n"] == 9 and (rates["n_approve"], rates["n_violation"], rates["n_abstain_gold"]) == (
        4,
        4,
        1,
    )
    rounded = {key: round(100 * count / total, 1) for key, count, total in [
        ("contract", 7, 9), ("false_blocks", 2, 4), ("catches", 3, 4), ("tag_match", 1, 4), ("abstentions", 2, 9),
        ("judgment", 3, 9),
    ]}  # fmt: skip
    assert {key: rates[key] for key in rounded} == rounded


def test_any_chat_jsonl_works_and_bad_rows_are_named(tmp_path: Path) -> None:
    rows = [{"messages": [{"role": "user", "content": f"situation {i}"},
                          {"role": "assistant", "content": "OK" if i % 2 else "[ops] block: z"}]} for i in range(12)]  # fmt: skip
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    split = load_split(DataConfig(source=str(path), test_size=4))
    assert (len(split.train), len(split.test)) == (8, 4)
    assert split.test[0].prompt_messages()[0]["role"] == "user"
    path.write_text(
        json.dumps({"messages": [{"role": "assistant", "content": "OK"}, {"role": "user", "content": "x"}]})
    )
    with pytest.raises(UserError, match=r"chat\.jsonl:1: .*user then assistant"):
        load_rows(str(path))
    with pytest.raises(UserError, match="not an existing chat-format"):
        load_rows(str(tmp_path / "missing.jsonl"))


def test_config_defaults_the_verdict_data_and_leaves_sql_alone() -> None:
    assert load_setup(None, ["task=verdict"]).data.source == "verdict-corpus"
    assert load_setup(None, ["task=verdict", "data.source=/x/chat.jsonl"]).data.source == "/x/chat.jsonl"
    assert load_setup(None, []).data.source == "b-mc2/sql-create-context"


def test_a_verdict_run_on_a_tiny_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    from harness.results import Metrics
    from harness.run.child import execute_plan
    from harness.run.plan import RunPlan
    from harness.runtime import resolve_setup_runtime

    setup = load_setup(None, [
        "task=verdict", f"model.source={tiny_model_dir}", "recipe.steps=10", "recipe.batch_size=4",
        "eval.max_new_tokens=6", "eval.limit=6", "checks.smoke.first_loss_max=20", "checks.smoke.steps=10",
    ])  # fmt: skip
    outcome = execute_plan(RunPlan(setup=setup, work_dir=tmp_path))
    assert outcome.status == "ok", outcome.reason
    assert outcome.data is not None and outcome.data.n_train == 46 and outcome.data.n_test == 6
    assert outcome.checks["mask_audit"].verdict == "pass", outcome.checks["mask_audit"]
    trained, baseline = outcome.trained, outcome.baseline  # the record's own schema
    assert isinstance(trained, Metrics) and isinstance(baseline, Metrics)
    assert (
        trained.n == baseline.n == 6
        and trained.gate is not None
        and trained.well_formed == trained.gate["contract"]
    )
    assert {"false_blocks", "catches", "tag_match", "abstentions", "judgment"} <= set(trained.gate)
    assert (
        "gate" in trained.model_dump_json()
        and "gate" not in Metrics(exact_match=1, well_formed=1, n=1).model_dump_json()
    )
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and {"prediction", "base_prediction", "gold", "contract", "decision"} <= set(
        rows[0]
    )
    # The trainer child leaves the adapter in its work folder, with what an export needs.
    info = json.loads((tmp_path / "adapter" / "lorabench.json").read_text())
    # The precision the run resolved (auto: bf16 on a CPU with bf16 in hardware, else fp32).
    assert (tmp_path / "adapter" / "adapter_config.json").is_file() and info[
        "precision"
    ] == resolve_setup_runtime(setup).precision
    assert info["setup"]["task"] == "verdict" and Path(info["base_model"]) == tiny_model_dir
