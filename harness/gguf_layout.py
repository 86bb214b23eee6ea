"""Whether a GGUF file holds everything its header promises: checked in milliseconds, before any model loads.

A truncated download used to fail deep inside transformers' loader, in the trainer, after a conversion
lock was taken. Here the header, every metadata entry and every tensor's extent are read with `struct`
alone and compared with the file's size. Not covered: corrupt tensor bytes (a preset is also checked
against its sha256); big-endian files (refused with a clear line).
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from harness.errors import UserError

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
# Value types of the GGUF spec: fixed sizes in bytes; 8 = string, 9 = array.
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


class _Truncated(Exception):
    """The file ended inside the header."""


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise _Truncated(self.pos)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def skip(self, size: int) -> None:
        if self.pos + size > len(self.data):
            raise _Truncated(self.pos)
        self.pos += size

    def string(self) -> str:
        length = self.take("<Q")
        start = self.pos
        self.skip(length)
        return bytes(self.data[start : self.pos]).decode("utf-8", errors="replace")

    def value(self, kind: int) -> int | None:
        """Skip one value; returns it when it is an integer (the alignment is one)."""
        if kind in _FIXED:
            if kind in (4, 5):
                return self.take("<I" if kind == 4 else "<i")
            self.skip(_FIXED[kind])
        elif kind == _STRING:
            self.string()
        elif kind == _ARRAY:
            inner, count = self.take("<I"), self.take("<Q")
            if inner in _FIXED:
                self.skip(_FIXED[inner] * count)
            else:
                for _ in range(count):
                    self.value(inner)
        else:
            raise ValueError(f"unknown metadata value type {kind}")
        return None


def check_gguf(path: Path, label: str = "model.source") -> None:
    """Raise UserError naming the file and the fix when it is not a complete GGUF file."""
    size = path.stat().st_size
    fix = "download or copy it again (compare its size or sha256 with the source)"
    with path.open("rb") as handle:
        head = handle.read(4)
        if head != MAGIC:
            raise UserError(
                f"{label}: {path} is not a GGUF file (it does not start with 'GGUF'); give a .gguf model file"
            )
        # Mapped, not read: only the header's pages are touched.
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
            _check_layout(path, label, view, size, fix)


def _check_layout(path: Path, label: str, data: memoryview, size: int, fix: str) -> None:
    from gguf import GGML_QUANT_SIZES  # the block sizes of every tensor type, from the gguf package

    reader = _Reader(data)
    try:
        reader.skip(4)
        version = reader.take("<I")
        if version not in (2, 3):
            raise UserError(
                f"{label}: {path} is GGUF version {version} (or big-endian); this reads versions 2 and 3"
            )
        n_tensors, n_fields = reader.take("<Q"), reader.take("<Q")
        alignment = DEFAULT_ALIGNMENT
        for _ in range(n_fields):
            key = reader.string()
            value = reader.value(reader.take("<I"))
            if key == "general.alignment" and value:
                alignment = value
        extents = []
        for _ in range(n_tensors):
            name = reader.string()
            dims = [reader.take("<Q") for _ in range(reader.take("<I"))]
            kind, offset = reader.take("<I"), reader.take("<Q")
            block, type_size = GGML_QUANT_SIZES[kind]
            elements = 1
            for dim in dims:
                elements *= dim
            extents.append((name, offset + elements // block * type_size))
        start = -(-reader.pos // alignment) * alignment
    except _Truncated:
        raise UserError(
            f"{label}: {path} is truncated: the file ends at byte {size:,}, inside its header; {fix}"
        ) from None
    except (KeyError, ValueError) as exc:  # an unknown tensor or value type
        raise UserError(f"{label}: {path} is not a readable GGUF file ({exc}); {fix}") from None
    if extents:
        name, end = max(extents, key=lambda e: e[1])
        if start + end > size:
            raise UserError(
                f"{label}: {path} is truncated: {size:,} bytes, its tensors need {start + end:,} "
                f"(tensor {name!r} ends past the end); {fix}"
            )
