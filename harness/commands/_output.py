"""One meaning for the output options of every command: `--json` prints JSON on stdout instead of the
table, `-o DIR` also writes the command's files into a folder (created if absent, never a file)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands._paths import given_path
from harness.errors import UserError

JSON_HELP = "print JSON on stdout instead of the text: stdout carries the JSON alone, notes go to stderr"


def print_refusal(message: str, status: int) -> None:
    """A refusal in `--json` mode, as JSON on stdout (`lorabench-error/1`), beside its line on stderr: a program
    reading stdout learns why."""
    from harness.report.outputs import ErrorOut

    print(ErrorOut(error=message, exit_code=status).model_dump_json())


def add_json_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """`--json`, the same on every command that prints results; `what` names what the JSON holds."""
    parser.add_argument("--json", action="store_true", help=f"{JSON_HELP} ({what})")


def add_output_arguments(parser: argparse.ArgumentParser, files: str) -> None:
    """`--json` and `-o DIR`; `files` says what -o writes, for the help text (e.g. "checks.json")."""
    add_json_argument(parser, "what the table shows")
    parser.add_argument(
        "-o", "--output", type=given_path, metavar="DIR", help=f"also write {files} into this folder"
    )


def check_output_folder(folder: Path | None, names: list[str]) -> None:
    """Refuse an -o that names a file, before the command does its work."""
    if folder is not None and folder.exists() and not folder.is_dir():
        raise UserError(f"-o {folder}: a file; -o names a folder ({' and '.join(names)} go into it)")


def write_outputs(folder: Path | None, files: dict[str, str]) -> None:
    if folder is None:
        return
    check_output_folder(folder, list(files))
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
