"""Show a model's architecture from its config on the meta device, with no weights loaded."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tabulate import tabulate

from harness.commands._output import add_json_argument
from harness.config import DEFAULT_TARGETS
from harness.inspect import KINDS, Inspection, human_count, inspect_model


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="module tree, parameters by tower and kind, and what LoRA targets would hit — no weights loaded",
        description=__doc__,
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="a preset (smollm2-135m, qwen3-4b-random…), a model folder, a config.json, or a hub id (config only)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--targets",
        metavar="NAMES",
        default=",".join(DEFAULT_TARGETS),
        help="comma-separated module-name suffixes, as lora.targets takes them (default: %(default)s)",
    )
    group.add_argument(
        "--regex",
        metavar="REGEX",
        help=r"one regex over full module paths instead, e.g. '^model\.layers\.\d+\..*_proj$' for the language model only",
    )
    parser.add_argument("--revision", help="hub revision of the config (hub ids only)")
    parser.add_argument(
        "--depth", type=int, default=4, help="module tree depth to print (default: %(default)s)"
    )
    parser.add_argument("--no-tree", action="store_true", help="leave the module tree out")
    add_json_argument(parser, "the inspection, no tree")
    parser.set_defaults(func=cmd_inspect)


def render(inspection: Inspection, *, show_tree: bool = True) -> str:
    lines = [
        f"{inspection.source}: {inspection.model_class} (model_type {inspection.model_type}), "
        f"{human_count(inspection.total_params)} parameters, built on the meta device"
    ]
    if show_tree:
        lines += ["", inspection.tree]
    rows = [
        [tower, *(human_count(kinds[k]) for k in KINDS), human_count(sum(kinds.values()))]
        for tower, kinds in inspection.params.items()
    ]
    lines += ["", "parameters by tower and kind", tabulate(rows, headers=["tower", *KINDS, "total"])]
    targets = inspection.targets if isinstance(inspection.targets, str) else ",".join(inspection.targets)
    by_tower = ", ".join(f"{tower} {n}" for tower, n in inspection.hits_by_tower().items()) or "none"
    lines += ["", f"LoRA targets {targets!r} hit {len(inspection.hits)} module(s): {by_tower}"]
    if inspection.hits:
        lines.append(tabulate(inspection.hit_patterns(), headers=["module", "type", "count"]))
    bad = inspection.unwrappable_hits
    if bad:
        types = ", ".join(sorted({h.type_name for h in bad}))
        lines.append(
            f"PEFT cannot wrap {len(bad)} targeted module(s) ({types}), e.g. {bad[0].name}: "
            "narrow the targets to Linear/Embedding/Conv layers"
        )
    if inspection.unwrappable_with_params:
        shown = ", ".join(f"{name} ×{n}" for name, n in sorted(inspection.unwrappable_with_params.items()))
        lines.append(f"layers with weights PEFT cannot wrap (never LoRA targets): {shown}")
    return "\n".join(lines)


def parse_targets(args: argparse.Namespace) -> list[str] | str:
    if args.regex:
        return str(args.regex)
    return [name.strip() for name in args.targets.split(",") if name.strip()]


def cmd_inspect(args: argparse.Namespace) -> int:
    inspection = inspect_model(args.model, parse_targets(args), revision=args.revision, max_depth=args.depth)
    if args.json:
        print(json.dumps(inspection.to_dict(), indent=2))
    else:
        print(render(inspection, show_tree=not args.no_tree))
    return 0
