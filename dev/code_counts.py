"""Issue 25's counts of a checkout's harness/: files, lines, `dict[str, Any]`, functions over 60 lines, and
places outside harness/settings.py that read a LORABENCH_ variable straight from the environment
(`os.environ[...]`, `os.environ.get(...)`, `os.getenv(...)` with the name written out).

Usage: python dev/code_counts.py [CHECKOUT ...]   (default: this one); e.g. before and after:
    git worktree add /tmp/before 649fdc7 && python dev/code_counts.py /tmp/before .
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

LONG = 60
ENV_READ = re.compile(r"""os\.environ(?:\.get)?\s*[\[(]\s*f?["']LORABENCH_|os\.getenv\(\s*f?["']LORABENCH_""")


def counts(root: Path) -> str:
    files = sorted((root / "harness").rglob("*.py"))
    texts = {f: f.read_text(encoding="utf-8") for f in files}
    long = sorted(
        (node.end_lineno - node.lineno + 1, f"{f.relative_to(root)}:{node.name}")
        for f, text in texts.items()
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > LONG
    )
    reads = sum(len(ENV_READ.findall(text)) for f, text in texts.items() if f.name != "settings.py")
    lines = sum(len(text.splitlines()) for text in texts.values())
    typed = sum(text.count("dict[str, Any]") for text in texts.values())
    head = (
        f"{root}: {len(files)} files, {lines} lines, dict[str, Any] {typed}, functions over {LONG} lines "
        f"{len(long)}, LORABENCH_ reads outside settings.py {reads}"
    )
    return "\n".join([head, *(f"  {n} lines  {name}" for n, name in reversed(long))])


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["."]:
        print(counts(Path(arg).resolve()))
