"""Reading a task's local data file so that every bad byte or line is named: file, line, what, the fix.

Binary or non-UTF-8 data used to surface as a bare `UnicodeDecodeError` with no file name, after the
trainer child had started. Here the file is decoded once, up front (a UTF-8 byte-order mark is allowed:
editors on Windows write one), and a bad line is reported as `path:line`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import UserError


def read_text(path: Path, label: str = "data.source") -> str:
    """The whole file as text; a byte that is not UTF-8 is named by line and byte."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise UserError(f"{label}: {path} is a folder; give a .jsonl/.json/.parquet file") from None
    except OSError as exc:
        raise UserError(
            f"{label}: cannot read {path} ({exc.strerror}); check the path and its permissions"
        ) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        kind = "binary data" if b"\x00" in raw[:8192] else "not UTF-8 text"
        raise UserError(
            f"{label}: {path}:{line}: {kind} (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "give a UTF-8 text file (convert it with `iconv -t UTF-8`)"
        ) from None


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
