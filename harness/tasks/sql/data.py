"""Load text-to-SQL rows and split them exactly as the story did.

Sources: a Hugging Face dataset id through `datasets` (served from the local cache when offline), or a
local .jsonl / .json / .parquet file. Rows need `question`, `context` (CREATE TABLE statements) and
`answer` (SQL). The split: shuffle with `split_seed`, last `test_size` rows = test, first `train_size`
of the rest = train. The split's hash goes into the record, so two runs compare only on equal splits.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from harness.config import DataConfig
from harness.errors import UserError
from harness.hub import check_hub_dataset
from harness.tasks import files
from harness.tasks.files import read_json, read_jsonl, refuse_overlap

FIELDS = ("question", "context", "answer")
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")
# The prompt the model sees, in training and in evaluation alike (the story's wording).
SYSTEM = "Write one SQLite query that answers the question. Reply with SQL only."


@dataclass(frozen=True)
class SqlExample:
    question: str
    context: str
    answer: str

    def prompt_messages(self) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{self.context}\n-- {self.question}"},
        ]


@dataclass(frozen=True)
class SqlSplit:
    source: str
    n_rows: int
    train: tuple[SqlExample, ...]
    test: tuple[SqlExample, ...]
    hash: str


def _looks_local(source: str) -> bool:
    return source.endswith(LOCAL_SUFFIXES) or source.startswith((".", "/", "~")) or Path(source).exists()


def _read_local(path: Path) -> list[dict]:
    if not path.is_file():
        raise UserError(
            f"data.source: file not found: {path}. Give an existing .jsonl/.json/.parquet file, "
            "or a Hugging Face dataset id such as b-mc2/sql-create-context."
        )
    if path.suffix == ".jsonl":
        return [row for _, row in read_jsonl(path)]
    if path.suffix == ".json":
        data = read_json(path)
        if isinstance(data, dict) and "data" in data:
            data = data["data"]
        if not isinstance(data, list):
            raise UserError(
                f"{path}: expected a JSON list of rows (or {{'data': [...]}}), got {type(data).__name__}"
            )
        return data
    if path.suffix == ".parquet":
        import datasets

        try:
            return list(datasets.load_dataset("parquet", data_files=str(path), split="train"))
        except Exception as exc:  # pyarrow raises several types for a file that is not parquet
            raise UserError(
                f"data.source: {path} is not a readable parquet file ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:160] if str(exc) else ''}); give a parquet, .jsonl or .json file"
            ) from None
    raise UserError(
        f"data.source: unknown file type {path.suffix!r} for {path}; use .jsonl, .json or .parquet"
    )


def _read_hub(dataset_id: str) -> list[dict]:
    import datasets

    try:
        return list(datasets.load_dataset(dataset_id, split="train"))
    except Exception as exc:  # datasets raises many types for "not reachable / not cached"
        raise UserError(
            f"data.source: cannot load dataset {dataset_id!r} from the hub or its local cache ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200]}). Run `lorabench fetch --data {dataset_id}` where the hub is "
            "reachable, or point data.source (or --data) at a local .jsonl file such as "
            "../shared/data/sql-create-context/random-sample.jsonl."
        ) from None


def _to_examples(rows: list[dict], source: str) -> list[SqlExample]:
    examples = []
    for number, row in enumerate(rows, start=1):
        missing = [f for f in FIELDS if not isinstance(row, dict) or not isinstance(row.get(f), str)]
        if missing:
            raise UserError(
                f"{source}: row {number} lacks text field(s) {', '.join(missing)}; every row needs "
                f"{', '.join(FIELDS)} (sql-create-context format)"
            )
        examples.append(SqlExample(row["question"], row["context"], row["answer"]))
    return examples


def check_data_source(config: DataConfig) -> None:
    """Before any process starts: a local source must exist; a hub id must be cached or the hub reachable."""
    path = Path(config.source).expanduser()
    if _looks_local(config.source) and path.is_dir():
        raise UserError(f"data.source: {config.source} is a folder; give a .jsonl/.json/.parquet file")
    if _looks_local(config.source) and not path.is_file():
        raise UserError(
            f"data.source: file not found: {config.source}. Give an existing .jsonl/.json/.parquet file "
            "(e.g. ../shared/data/sql-create-context/random-sample.jsonl), or a Hugging Face dataset id."
        )
    if not _looks_local(config.source):
        if config.source.count("/") > 1 or not config.source.strip():
            raise UserError(
                f"data.source: {config.source!r} is neither an existing file nor a hub dataset id of the form "
                "owner/name; give a .jsonl/.json/.parquet file or a dataset id"
            )
        check_hub_dataset(config.source, "../shared/data/sql-create-context/random-sample.jsonl")


def load_rows(source: str) -> list[SqlExample]:
    rows = _read_local(Path(source).expanduser()) if _looks_local(source) else _read_hub(source)
    return _to_examples(rows, source)


def row_id(example: SqlExample) -> str:
    """A short hash naming one row, so per-question files can point at the data instead of copying it."""
    return hashlib.sha256(json.dumps(_fields(example)).encode()).hexdigest()[:12]


def _fields(example: SqlExample) -> list[str]:
    return [example.question, example.context, example.answer]


def make_split(rows: list[SqlExample], config: DataConfig) -> SqlSplit:
    train, test = files.shuffled_split(rows, config)
    refuse_overlap(
        [(e.question, e.context) for e in train],
        [(e.question, e.context) for e in test],
        config.source,
        config.allow_overlap,
    )
    return SqlSplit(config.source, len(rows), train, test, files.split_hash(train, test, _fields))


def load_split(config: DataConfig) -> SqlSplit:
    return make_split(load_rows(config.source), config)
