"""A data file is read in chunks (issue 39): the first bad byte is named by its line and offset, across a
chunk's edge too, and a file of NULs is refused at its first chunk instead of after reading it whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UserError
from harness.tasks.files import CHUNK_BYTES, read_text


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            b"x" * (CHUNK_BYTES - 1) + "é".encode() + b"\n\xff",
            ":2: not UTF-8 text (byte 0xff at offset 1048578)",
        ),
        (b"ok\n" + bytes(CHUNK_BYTES * 3), ":2: binary data (byte 0x00 at offset 3)"),
        (b"\xff" + bytes(10), ":1: not UTF-8 text (byte 0xff at offset 0)"),  # the first fault, not the NUL
        (b"ok\ncaf\xc3", ":2: not UTF-8 text (byte 0xc3 at offset 6)"),  # ends inside a character
    ],
)
def test_the_first_bad_byte_is_named(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    with pytest.raises(UserError) as refused:
        read_text(path)
    assert f"{path}{said}" in str(refused.value)


def test_text_across_a_chunk_edge_reads_whole(tmp_path: Path) -> None:
    text = "a" * (CHUNK_BYTES - 1) + "é\n" + "\ufeff" * 3
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())  # with a byte-order mark, as Windows editors write
    assert read_text(path) == text
