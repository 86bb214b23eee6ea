import json
from pathlib import Path

import pytest

from harness.config import DataConfig
from harness.errors import UserError
from harness.tasks.sql.data import load_split


def test_split_is_the_storys_protocol(sql_rows_file: Path) -> None:
    split = load_split(DataConfig(source=str(sql_rows_file), test_size=10, train_size=20))
    assert (split.n_rows, len(split.test), len(split.train)) == (60, 10, 20)
    assert not {ex.question for ex in split.test} & {ex.question for ex in split.train}
    again = load_split(DataConfig(source=str(sql_rows_file), test_size=10, train_size=20))
    assert again.hash == split.hash
    other_seed = load_split(DataConfig(source=str(sql_rows_file), test_size=10, train_size=20, split_seed=1))
    assert other_seed.hash != split.hash


def test_shared_sample_split_matches_the_peer_script(shared_sample: Path) -> None:
    import random

    rows = [json.loads(line) for line in shared_sample.read_text().splitlines()]
    random.Random(42).shuffle(rows)
    split = load_split(DataConfig(source=str(shared_sample)))
    assert [ex.question for ex in split.test] == [r["question"] for r in rows[-300:]]
    assert len(split.train) == 1700


def test_bad_rows_name_the_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"question": "q", "context": "c", "answer": "a"})
        + "\n"
        + json.dumps({"question": "q"})
        + "\n"
    )
    with pytest.raises(UserError, match="row 2 lacks text field\\(s\\) context, answer"):
        load_split(DataConfig(source=str(path), test_size=1))


def test_missing_file_and_offline_hub_give_a_fix(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="file not found"):
        load_split(DataConfig(source=str(tmp_path / "none.jsonl")))
    with pytest.raises(UserError, match="lorabench fetch --data nobody/no-such-dataset"):
        load_split(DataConfig(source="nobody/no-such-dataset"))
