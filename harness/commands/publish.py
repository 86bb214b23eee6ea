"""Copy chosen records (with their predictions) into the published results.

The published results (`reports/results/`, committed) are what the suite reads as a stand-in and what
the committed scorecards are rendered from; `make bench` never writes there. Publishing is this separate
step: a record already published under the same fingerprint is replaced by the new one (same question,
newer answer); a record of another fingerprint (other settings, data, stack or host kind) is kept unless
`--replace` is given, and then nothing is copied at all. Adapters are not copied (too large to commit).
What is published is public: machine paths in a record (its data file, model cache, a traceback) are cut to
`…/<name>` (`harness.report.settings.public_json`); the miss analysis finds the data through `$LORABENCH_DATA`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import atomic
from harness.commands._paths import given_path
from harness.errors import UserError
from harness.report.settings import public_json
from harness.results import RunRecord, find_records, load_record, predictions_path, record_path
from harness.suite.mismatch import fingerprint_changes

DEFAULT_PUBLISHED = Path("reports/results")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "publish",
        help="copy chosen records into the published results (reports/results/)",
        description=__doc__,
    )
    parser.add_argument(
        "records", nargs="+", type=given_path, metavar="RECORD", help="seed-N.json files or folders of them"
    )
    parser.add_argument(
        "--to",
        type=given_path,
        default=DEFAULT_PUBLISHED,
        metavar="DIR",
        help=f"published results folder (default: {DEFAULT_PUBLISHED})",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="replace a published record of another fingerprint (it is otherwise kept and nothing is copied)",
    )
    parser.add_argument("-n", "--dry-run", action="store_true", help="say what would be copied; copy nothing")
    parser.set_defaults(func=cmd_publish)


@dataclass(frozen=True)
class Copy:
    record: RunRecord
    source: Path
    target: Path
    action: str  # "new", "same fingerprint", "replaces another fingerprint", "already published"
    why: str = ""  # for a record of another fingerprint: what differs


def plan(sources: list[Path], to: Path) -> list[Copy]:
    copies: list[Copy] = []
    for source in find_records(sources):
        record = load_record(source)
        target = record_path(to, record)
        if source.resolve() == target.resolve():
            copies.append(Copy(record, source, target, "already published"))
        elif not target.is_file():
            copies.append(Copy(record, source, target, "new"))
        else:
            old = load_record(target)
            if old.fingerprint == record.fingerprint:
                same = target.read_text(encoding="utf-8") == public_json(source.read_text(encoding="utf-8"))
                copies.append(
                    Copy(record, source, target, "already published" if same else "same fingerprint")
                )
            else:
                why = _what_changed(old, record)
                copies.append(Copy(record, source, target, "replaces another fingerprint", why))
    return copies


def _what_changed(old: RunRecord, new: RunRecord) -> str:

    try:
        setup = new.setup
    except ValueError:
        return "the new record's setup does not validate"
    kind = str(new.provenance.host.kind)
    return fingerprint_changes(old, setup, new.stack, kind)


def copy_record(copy: Copy) -> None:
    copy.target.parent.mkdir(parents=True, exist_ok=True)
    predictions = predictions_path(copy.source)
    target_predictions = predictions_path(copy.target)
    # Published records are public: machine paths (data files, caches, tracebacks) are cut to their names.
    if predictions.is_file():
        atomic.write_text(target_predictions, public_json(predictions.read_text(encoding="utf-8")))
    else:
        target_predictions.unlink(missing_ok=True)  # a replaced record's answers are not this one's
    atomic.write_text(copy.target, public_json(copy.source.read_text(encoding="utf-8")))


def cmd_publish(args: argparse.Namespace) -> int:
    if not args.dry_run:
        from harness.atomic import check_writable_dir

        check_writable_dir(args.to, "--to", "give the published results folder (--to DIR)")
    copies = plan(args.records, args.to)
    if not copies:  # said as report says it: publishing nothing is a mistaken path, not a success
        named = ", ".join(str(r) for r in args.records)
        raise UserError(
            f"no run records (seed-*.json) under {named}; give records or folders of them (`lorabench run` and "
            "`lorabench bench` write them under results/)"
        )
    conflicts = [c for c in copies if c.action == "replaces another fingerprint"]
    if conflicts and not args.replace:
        listed = "; ".join(f"{c.target} ({c.why})" for c in conflicts)
        raise UserError(
            f"{len(conflicts)} published record(s) of another fingerprint would be replaced: {listed}. "
            "Nothing was copied; give --replace to replace them, or publish under another setup name"
        )
    for c in copies:
        label = f"{c.record.experiment}/{c.record.setup_name} seed {c.record.seed} ({c.record.status})"
        note = f": {c.why}" if c.why else ""
        if not args.dry_run and c.action != "already published":
            copy_record(c)  # before its line: a copy that fails is never said to be done
        print(
            f"{'would copy' if args.dry_run else 'copied'} {c.source} → {c.target} [{c.action}{note}] {label}"
            if c.action != "already published"
            else f"already published: {c.target} {label}"
        )
    if not args.dry_run:
        print(
            f"publish: {sum(c.action != 'already published' for c in copies)} record(s) copied into {args.to}; "
            "render the committed scorecards with `lorabench report reports/results -o reports`"
        )
    return 0
