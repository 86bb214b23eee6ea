"""Progress on long phases (steps, loss, ETA) on stderr; quiet mode prints phase lines only (CI logs).

Beside the text, every phase start and every step goes as one JSON line to the run plan's progress
file, when it names one (rank 0 only): a trainer child's stderr is captured under pytest, so the
suite follows this file from the parent and shows the progress itself (harness/suite/progress.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.terminal import fit, terminal_width


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


class Progress:
    def __init__(
        self, *, quiet: bool = False, stream: TextIO | None = None, events_file: Path | None = None
    ) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.events_file = events_file
        self._phase = ""
        self._total = 0
        self._done = 0
        self._started = 0.0
        self._last_print = 0.0

    def phase(self, name: str, total: int = 0) -> None:
        self._phase, self._total, self._done = name, total, 0
        self._started = self._last_print = time.monotonic()
        self._event()
        self._print(f"[lorabench] {name}" + (f" ({total})" if total else ""))

    def advance(self, n: int = 1, **values: float) -> None:
        self._done += n
        self._event(**values)
        now = time.monotonic()
        finished = self._total and self._done >= self._total
        if self.quiet or (now - self._last_print < 2.0 and not finished):
            return
        self._last_print = now
        elapsed = now - self._started
        eta = elapsed / self._done * (self._total - self._done) if self._done and self._total else 0
        shown = " ".join(f"{k} {v:.4g}" for k, v in values.items())
        self._print(
            f"  {self._phase}: {self._done}/{self._total} {shown} elapsed {_clock(elapsed)} eta {_clock(eta)}"
        )

    def _print(self, text: str) -> None:
        # On a terminal, wrapped at its width by whole words (harness/terminal.py); a log gets it as is.
        width = terminal_width(self.stream)
        for line in fit(text, width - 1, transient=False) if width else [text]:
            print(line, file=self.stream, flush=True)

    def _event(self, **values: float) -> None:
        if self.events_file is None:
            return
        line = json.dumps(
            {"t": time.time(), "phase": self._phase, "done": self._done, "total": self._total, **values}
        )
        try:
            with self.events_file.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError:
            self.events_file = None  # whoever showed it is gone; the run goes on without
