"""A task's data: its local file read so that every bad byte or line is named (file, line, what, the fix),
and the story's split, shared by the tasks.

Binary or non-UTF-8 data used to surface as a bare `UnicodeDecodeError` with no file name, after the
trainer child had started. Here the file is decoded once, up front (a UTF-8 byte-order mark is allowed:
editors on Windows write one), and a bad line is reported as `path:line`.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import random
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from harness.config import DataConfig
from harness.errors import UserError

CHUNK_BYTES = 1 << 20
Example = TypeVar("Example")


def read_text(path: Path, label: str = "data.source") -> str:
    """The whole file as text, read in chunks: a byte that is not UTF-8, or a NUL (never in JSON text), is
    named by line and byte at the first chunk that holds it (a 2 GB file of NULs took 54 s to refuse)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    parts, offset, lines = [], 0, 0
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                nul = chunk.find(b"\x00")
                try:  # the first fault in the chunk is named: a byte that is not UTF-8 before its NUL
                    parts.append(decoder.decode(piece := chunk if nul < 0 else chunk[:nul]))
                except UnicodeDecodeError as exc:
                    start = offset - (len(exc.object) - len(piece)) + exc.start
                    line = lines + exc.object[: exc.start].count(b"\n")
                    raise _not_text(
                        path, label, "not UTF-8 text", start, line, exc.object[exc.start]
                    ) from None
                if nul >= 0:
                    raise _not_text(
                        path, label, "binary data", offset + nul, lines + chunk[:nul].count(b"\n"), 0
                    )
                offset, lines = offset + len(chunk), lines + chunk.count(b"\n")
        parts.append(decoder.decode(b"", final=True))
    except IsADirectoryError:
        raise UserError(f"{label}: {path} is a folder; give a .jsonl/.json/.parquet file") from None
    except UnicodeDecodeError as exc:  # the file ends inside a character
        start = offset - len(exc.object) + exc.start
        raise _not_text(path, label, "not UTF-8 text", start, lines, exc.object[exc.start]) from None
    except OSError as exc:
        raise UserError(
            f"{label}: cannot read {path} ({exc.strerror}); check the path and its permissions"
        ) from None
    return "".join(parts)


def _not_text(path: Path, label: str, kind: str, offset: int, newlines: int, byte: int) -> UserError:
    return UserError(
        f"{label}: {path}:{newlines + 1}: {kind} (byte 0x{byte:02x} at offset {offset}); "
        "give a UTF-8 text file (convert it with `iconv -t UTF-8`)"
    )


def read_jsonl(path: Path, label: str = "data.source") -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line; a line that is not JSON is named."""
    rows = []
    for number, line in enumerate(read_text(path, label).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{path}:{number}: not valid JSON ({exc.msg}); one JSON object per line"
            ) from None
        except (
            ValueError,
            RecursionError,
        ) as exc:  # a 5,000-digit number, nesting deeper than Python recurses
            raise UserError(
                f"{path}:{number}: JSON this reader refuses ({_why(exc)}); one flat JSON object per line"
            ) from None
    if not rows:
        raise UserError(f"{label}: {path} holds no rows; give a file with one JSON object per line")
    return rows


def read_json(path: Path, label: str = "data.source") -> Any:
    text = read_text(path, label)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); give a JSON list of rows"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise UserError(
            f"{path}: JSON this reader refuses ({_why(exc)}); give a JSON list of flat rows"
        ) from None


def _why(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0][:120]


def shuffled_split(
    rows: Sequence[Example], config: DataConfig, hint: str = ""
) -> tuple[tuple[Example, ...], tuple[Example, ...]]:
    """The story's split: shuffle with `split_seed`, last `test_size` rows = test, first `train_size` of the
    rest = train."""
    if len(rows) <= config.test_size:
        raise UserError(
            f"data.test_size: {config.test_size} test rows leave none to train on ({len(rows)} rows in "
            f"{config.source}); lower data.test_size{hint}"
        )
    shuffled = list(rows)
    random.Random(config.split_seed).shuffle(shuffled)
    return tuple(shuffled[: -config.test_size][: config.train_size]), tuple(shuffled[-config.test_size :])


def split_hash(train: Sequence[Example], test: Sequence[Example], fields: Callable[[Example], object]) -> str:
    """Recorded with each run, so two runs compare only on equal splits."""
    digest = hashlib.sha256()
    for part, examples in (("train", train), ("test", test)):
        digest.update(part.encode())
        for example in examples:
            digest.update(json.dumps(fields(example)).encode())
    return digest.hexdigest()[:16]


def refuse_overlap(
    train_keys: Sequence[Hashable], test_keys: Sequence[Hashable], source: str, allowed: bool
) -> None:
    """Test questions that also sit in the training rows (duplicates land on both sides of a shuffled split,
    and the run scores memorised answers, silently) are refused unless the setup allows them. The key is
    the prompt, so a duplicate with another gold answer counts too."""
    if allowed:
        return
    seen = set(train_keys)
    shared = [index for index, key in enumerate(test_keys) if key in seen]
    if shared:
        first = ", ".join(str(i) for i in shared[:5])
        raise UserError(
            f"data.source: {len(shared)} of {len(test_keys)} test questions of {source} are also training rows "
            f"(duplicate rows; test index {first}{'…' if len(shared) > 5 else ''}); remove the duplicates from "
            "the data, or set data.allow_overlap = true if that is wanted"
        )
