"""Progress on long phases (steps, loss, ETA) on stderr; quiet mode prints phase lines only (CI logs)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self._phase = ""
        self._total = 0
        self._done = 0
        self._started = 0.0
        self._last_print = 0.0

    def phase(self, name: str, total: int = 0) -> None:
        self._phase, self._total, self._done = name, total, 0
        self._started = self._last_print = time.monotonic()
        print(f"[lorabench] {name}" + (f" ({total})" if total else ""), file=self.stream, flush=True)

    def advance(self, n: int = 1, **values: float) -> None:
        self._done += n
        now = time.monotonic()
        finished = self._total and self._done >= self._total
        if self.quiet or (now - self._last_print < 2.0 and not finished):
            return
        self._last_print = now
        elapsed = now - self._started
        eta = elapsed / self._done * (self._total - self._done) if self._done and self._total else 0
        shown = " ".join(f"{k} {v:.4g}" for k, v in values.items())
        print(
            f"  {self._phase}: {self._done}/{self._total} {shown} elapsed {_clock(elapsed)} eta {_clock(eta)}",
            file=self.stream,
            flush=True,
        )
