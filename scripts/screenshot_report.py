"""Render a scorecard's Markdown to HTML the way GitHub would (tables, images, <details>) and
screenshot it in headless Chromium, to look at what readers will see.

    python scripts/screenshot_report.py reports/<host>/<stack>/scorecard.md -o shot.png

HTML: markdown-it-py (CommonMark + GFM tables + strikethrough, raw HTML on) with a GitHub-like
stylesheet. Not GitHub's renderer: close enough to catch broken tables, missing images and unreadable
widths, not pixel-exact. Needs Debian's `chromium`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

CSS = """
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 14px;
       line-height: 1.5; color: #1f2328; max-width: 1012px; margin: 24px auto; padding: 0 16px; }
h1, h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; }
table { border-collapse: collapse; display: block; overflow: auto; max-width: 100%; margin: 0 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
code { background: #eff1f3; padding: .2em .4em; border-radius: 6px; font-size: 85%; }
img { max-width: 100%; }
"""


def to_html(markdown: str, title: str) -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{CSS}</style></head><body>{md.render(markdown)}</body></html>"


def screenshot(markdown_file: Path, output: Path, width: int, height: int) -> Path:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium not found: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as tmp:
        # A copy of the report folder, so relative image links resolve exactly as on GitHub.
        folder = Path(tmp) / "report"
        shutil.copytree(markdown_file.parent, folder)
        page = folder / (markdown_file.stem + ".html")
        page.write_text(
            to_html(markdown_file.read_text(encoding="utf-8"), markdown_file.stem), encoding="utf-8"
        )
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--hide-scrollbars",
             f"--screenshot={output.resolve()}", f"--window-size={width},{height}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("markdown", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=Path("scorecard.png"))
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--height", type=int, default=3000)
    args = parser.parse_args()
    print(screenshot(args.markdown, args.output, args.width, args.height))


if __name__ == "__main__":
    main()
