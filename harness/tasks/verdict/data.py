"""Load chat-format JSONL for the verdict task and split it.

A row is `{"messages": [system?, user, assistant]}`: every message before the last is the prompt, the
last is the gold answer. When every row carries `"split": "train" | "test"` that split is used as is
(train capped at `data.train_size`); otherwise the story's split. `verdict-corpus` names the small corpus
shipped with lorabench (62 situations written for the project, 16 held out).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.config import DataConfig
from harness.errors import UserError
from harness.tasks import files
from harness.tasks.files import read_jsonl, refuse_overlap
from harness.tasks.verdict.about import DEFAULT_SOURCE as CORPUS_NAME

CORPUS_FILE = Path(__file__).with_name("corpus.jsonl")
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class VerdictExample:
    prompt: tuple[tuple[str, str], ...]  # (role, content) of every message before the answer
    answer: str

    def prompt_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.prompt]

    @property
    def situation(self) -> str:
        return next(content for role, content in reversed(self.prompt) if role == "user")


@dataclass(frozen=True)
class VerdictSplit:
    source: str
    n_rows: int
    train: tuple[VerdictExample, ...]
    test: tuple[VerdictExample, ...]
    hash: str


def source_path(source: str) -> Path:
    return CORPUS_FILE if source == CORPUS_NAME else Path(source).expanduser()


def _example(row: object, where: str) -> tuple[VerdictExample, str | None]:
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or len(messages) < 2:
        raise UserError(
            f"{where}: needs a `messages` list (system?, user, assistant); got {str(row)[:120]!r}"
        )
    pairs = []
    for message in messages:
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise UserError(
                f"{where}: every message needs a role ({', '.join(ROLES)}) and text content; got {message!r}"
            )
        pairs.append((message["role"], message["content"]))
    if pairs[-1][0] != "assistant" or pairs[-2][0] != "user":
        raise UserError(f"{where}: the last two messages must be user then assistant (the gold answer)")
    split = row.get("split")
    if split not in (None, "train", "test"):
        raise UserError(f"{where}: split must be 'train' or 'test', got {split!r}")
    return VerdictExample(tuple(pairs[:-1]), pairs[-1][1].strip()), split


def check_source(config: DataConfig) -> None:
    """Before any process starts: the source is the shipped corpus or an existing .jsonl file."""
    path = source_path(config.source)
    if path.suffix != ".jsonl" or not path.is_file():
        raise UserError(
            f"data.source: {config.source!r} is not an existing chat-format .jsonl file; the verdict task reads one "
            f"(or `{CORPUS_NAME}`, the corpus shipped with lorabench)"
        )


def load_rows(source: str) -> list[tuple[VerdictExample, str | None]]:
    check_source(DataConfig(source=source))
    path = source_path(source)
    return [_example(row, f"{source}:{number}") for number, row in read_jsonl(path)]


def make_split(rows: list[tuple[VerdictExample, str | None]], config: DataConfig) -> VerdictSplit:
    if rows and all(split is not None for _, split in rows):
        test = tuple(ex for ex, split in rows if split == "test")
        train = tuple(ex for ex, split in rows if split == "train")[: config.train_size]
    else:
        hint = ', or mark rows with "split": "train"/"test"'
        train, test = files.shuffled_split([ex for ex, _ in rows], config, hint)
    refuse_overlap(
        [ex.prompt for ex in train], [ex.prompt for ex in test], config.source, config.allow_overlap
    )
    if not train or not test:
        raise UserError(
            f"data.source: {config.source} gives {len(train)} train and {len(test)} test rows; both must be > 0"
        )
    return VerdictSplit(
        config.source,
        len(rows),
        train,
        test,
        files.split_hash(train, test, lambda ex: [ex.prompt, ex.answer]),
    )


def load_split(config: DataConfig) -> VerdictSplit:
    return make_split(load_rows(config.source), config)
