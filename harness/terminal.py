"""Lines fitted to a terminal's width: wrapped or shortened by whole words, never cut mid-number.

80 columns cut the suite's estimate at "estimate from 5 steps (20.65 s/" (issue 36). Not covered: text
that goes to a file or a pipe (a CI log) is left as it is: `terminal_width` says None there.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import TextIO


def terminal_width(stream: TextIO) -> int | None:
    """Columns of the terminal `stream` writes to; None when it is no terminal (a file, a pipe)."""
    try:
        is_tty = stream.isatty()
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size().columns if is_tty else None


def fit(text: str, width: int, *, transient: bool) -> list[str]:
    """`text` in lines of at most `width` columns, never cut inside a word (so never mid-number). A lasting
    line wraps, its continuation indented; a transient status line (rewritten in place, one line) is
    shortened by dropping words: first the run's label (after `[lorabench]`), then its last parts; `…`
    marks what went. A single word wider than `width` is kept whole."""
    if len(text) <= width:
        return [text]
    if not transient:
        return textwrap.wrap(
            text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
        )
    head, *parts = text.split(" · ")
    words = head.split(" ")
    kept, shown = len(words), len(parts)

    def joined() -> str:
        label = " ".join(words[:kept]) + (" …" if kept < len(words) else "")
        return " · ".join([label, *parts[:shown]] + (["…"] if shown < len(parts) else []))

    while kept > 1 and len(joined()) > width:
        kept -= 1
    while shown > 0 and len(joined()) > width:
        shown -= 1
    return [joined()]
