"""Merge a run's LoRA adapter into its base model and check that the merged model answers the same."""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.commands._output import add_json_argument
from harness.commands._paths import given_path
from harness.export import ExportResult, export_adapter


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="merge a run's LoRA adapter into its base (safetensors), verify identical test answers, GGUF if possible",
        description=__doc__,
    )
    parser.add_argument(
        "run",
        metavar="RUN",
        type=given_path,
        help="an adapter folder saved by a run (adapter_config.json + lorabench.json), or a record seed-N.json "
        "with seed-N.adapter/ beside it",
    )
    parser.add_argument("-o", "--out", type=given_path, required=True, help="new folder for the merged model")
    parser.add_argument("--limit", type=int, help="compare on the first N test questions only (default: all)")
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda", "auto"),
        default="cpu",
        help="where to merge (default: %(default)s)",
    )
    parser.add_argument(
        "--no-gguf", action="store_true", help="skip the GGUF conversion even when a converter is installed"
    )
    add_json_argument(parser, "the export summary")
    parser.set_defaults(func=cmd_export)


def render(result: ExportResult) -> str:
    lines = [f"merged {result.adapter_dir} into {result.base_model} ({result.precision}) → {result.out_dir}"]
    same = result.n_compared - len(result.mismatches)
    lines.append(f"test answers, base + adapter vs merged (read back): {same}/{result.n_compared} identical")
    for miss in result.mismatches[:10]:
        lines.append(
            f"  #{miss.index} {miss.question[:60]!r}: {miss.adapter_answer!r} ≠ {miss.merged_answer!r}"
        )
    lines.append(result.gguf_note)
    return "\n".join(lines)


def cmd_export(args: argparse.Namespace) -> int:
    result = export_adapter(args.run, args.out, limit=args.limit, device=args.device, gguf=not args.no_gguf)
    print(json.dumps(result.to_dict(), indent=2) if args.json else render(result))
    return 0 if result.is_identical else 1
