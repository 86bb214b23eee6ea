"""`lorabench stacks list | diff A B | verify [STACK] | verify --download [STACK]`: the pinned software stacks.

`verify` compares the running environment with a stack; `verify --download` proves a stack's lockfile
(every stack when none is named): each pin downloaded for the stack's Python and platform with its hash
checked, and with --install installed into a fresh venv of that Python (harness/stacks_download.py)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from tabulate import tabulate

from harness import settings
from harness.commands._output import add_json_argument
from harness.commands._paths import given_path
from harness.errors import UserError
from harness.stacks import Stack, diff_lockfiles, load_stacks, lockfiles_dir, verify_environment


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stacks",
        help="list, compare and verify the pinned software stacks",
        description="List, compare and verify the pinned software stacks (lockfiles/stacks.toml and its lockfiles).",
    )
    parser.add_argument(
        "--lockfiles",
        type=given_path,
        default=None,
        help="folder holding stacks.toml and the lockfiles (default: $LORABENCH_LOCKFILES or the checkout's lockfiles/)",
    )
    actions = parser.add_subparsers(dest="stacks_action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list", help="print the stacks table: accelerator, python, torch source, base image"
    )
    add_json_argument(listing, "every row of the table")
    diff = actions.add_parser("diff", help="packages added, removed or re-versioned from stack A to stack B")
    add_json_argument(diff, "changed, added and removed packages")
    diff.add_argument("a", help="a stack name from the table, or a path to a lockfile")
    diff.add_argument("b", help="a stack name from the table, or a path to a lockfile")
    verify = actions.add_parser(
        "verify", help="compare the running environment with a stack's lockfile and accelerator"
    )
    verify.add_argument(
        "stack",
        nargs="?",
        default=None,
        help="stack name (default: $LORABENCH_STACK, the variable the images set; with --download: every stack)",
    )
    add_json_argument(verify, "the problems found; not with --download, which prints as it goes")
    verify.add_argument(
        "--download",
        action="store_true",
        help="prove the lockfile instead: pip download every pin for the stack's python/platform, hashes required",
    )
    verify.add_argument(
        "--install",
        action="store_true",
        help="with --download: install the files into a fresh venv of the stack's python",
    )
    verify.add_argument(
        "--dest",
        type=given_path,
        default=Path(".cache/stacks-download"),
        help="download folder (default: .cache/stacks-download)",
    )
    parser.set_defaults(func=cmd_stacks)


def cmd_stacks(args: argparse.Namespace) -> int:
    directory: Path = args.lockfiles or lockfiles_dir()
    stacks = load_stacks(directory)
    if args.stacks_action == "list":
        return _list(stacks, as_json=args.json)
    if args.stacks_action == "diff":
        return _diff(stacks, directory, args.a, args.b, as_json=args.json)
    if args.download and args.json:
        raise UserError("stacks verify --download --json: the download prints as it goes; drop --json")
    if args.download:
        return _download(stacks, directory, args.stack, args.dest, install=args.install)
    if args.install:
        raise UserError("stacks verify --install needs --download (it installs what was downloaded)")
    return _verify(stacks, directory, args.stack or settings.STACK.get(), as_json=args.json)


def _list(stacks: dict[str, Stack], *, as_json: bool = False) -> int:
    if as_json:
        print(json.dumps([s.model_dump(mode="json") for s in stacks.values()], indent=2))
        return 0
    rows = [
        [
            s.name,
            s.accelerator,
            s.python,
            f"{s.torch_version} ({s.torch})",
            s.lockfile,
            s.base_image or "-",
            "yes" if s.digest_verified else "no",
        ]
        for s in stacks.values()
    ]
    headers = ["stack", "accelerator", "python", "torch", "lockfile", "base image", "digest verified"]
    print(tabulate(rows, headers=headers))
    return 0


def _lockfile_for(stacks: dict[str, Stack], directory: Path, ref: str) -> Path:
    if ref in stacks:
        return directory / stacks[ref].lockfile
    if Path(ref).is_file():
        return Path(ref)
    raise UserError(f"stacks diff: {ref!r} is neither a stack ({', '.join(stacks)}) nor a lockfile path")


def _diff(stacks: dict[str, Stack], directory: Path, a: str, b: str, *, as_json: bool = False) -> int:
    diff = diff_lockfiles(_lockfile_for(stacks, directory, a), _lockfile_for(stacks, directory, b))
    if as_json:
        changed = [{"package": n, "a": va, "b": vb} for n, va, vb in diff.changed]
        added = [{"package": p.name, "b": p.version} for p in diff.added]
        removed = [{"package": p.name, "a": p.version} for p in diff.removed]
        print(json.dumps({"a": a, "b": b, "changed": changed, "added": added, "removed": removed}, indent=2))
        return 0
    if diff.is_empty:
        print(f"{a} and {b} pin the same packages")
        return 0
    rows = [[name, va, vb] for name, va, vb in diff.changed]
    rows += [[p.name, "-", p.version] for p in diff.added]
    rows += [[p.name, p.version, "-"] for p in diff.removed]
    print(tabulate(sorted(rows), headers=["package", a, b]))
    return 0


def _verify(stacks: dict[str, Stack], directory: Path, name: str | None, *, as_json: bool = False) -> int:
    if name is None:  # the stack a run here would be recorded under, where it is a pinned one
        from harness.stack_name import matching_stack

        name = matching_stack(stacks)
        if name is None:
            raise UserError(
                "stacks verify: no STACK given, LORABENCH_STACK is unset, and the installed packages match no "
                "pinned stack exactly; name one to see how they differ: " + ", ".join(stacks)
            )
    if name not in stacks:
        raise UserError(f"stacks verify: unknown stack {name!r}; known: {', '.join(stacks)}")
    problems = verify_environment(stacks[name], directory=directory)
    errors = sum(p.severity == "error" for p in problems)
    if as_json:
        print(
            json.dumps({"stack": name, "errors": errors, "problems": [asdict(p) for p in problems]}, indent=2)
        )
        return 1 if errors else 0
    for p in problems:
        print(f"{p.severity}: {p.package}: {p.message}")
    print(f"stack {name}: {errors} error(s), {len(problems) - errors} warning(s)")
    return 1 if errors else 0


def _download(
    stacks: dict[str, Stack], directory: Path, name: str | None, dest: Path, *, install: bool
) -> int:
    from harness.stacks_download import download_stack, install_stack, not_here, pip_platforms

    if name is not None and name not in stacks:
        raise UserError(f"stacks verify --download: unknown stack {name!r}; known: {', '.join(stacks)}")
    failed = []
    for stack in [stacks[name]] if name else list(stacks.values()):
        folder = dest / stack.name
        platforms = pip_platforms(stack.platform)
        print(
            f"stack {stack.name}: python {stack.python}, platforms {platforms[0]} .. {platforms[-1]}",
            flush=True,
        )
        result = download_stack(stack, directory, folder)
        size = sum((folder / f).stat().st_size for f in result.files)
        print(
            f"  download: {len(result.files)} wheel(s) for {result.pins} pin(s) of {stack.lockfile}, "
            f"hashes checked by pip --require-hashes, {size / 1e6:.0f} MB in {folder}"
        )
        for failure in result.failures:
            print(f"  FAILED {failure.package}: {failure.message}")
        ok = result.ok
        if install and ok:
            installed = install_stack(stack, directory, folder, dest / f"venv-{stack.name}")
            print(
                f"  install: {'ok' if installed.ok else 'FAILED' if installed.python else 'not tried'}: {installed.message}"
            )
            ok = (
                installed.ok or installed.python is None
            )  # a Python the machine lacks is named, not a lockfile failure
        for line in not_here(stack, directory):
            print(f"  not checked here: {line}")
        print(f"stack {stack.name}: {'ok' if ok else 'FAILED'}", flush=True)
        if not ok:
            failed.append(stack.name)
    if failed:
        print(f"stacks verify --download: {len(failed)} stack(s) failed: {', '.join(failed)}")
    return 1 if failed else 0
