"""The claims: what the setup files in the suite's folders say, each claim written once.

A claim is a table in the `[claims]` of the setup file that declares it (its bounds live there):

    [claims."accuracy equivalent to bf16"]
    kind = "equivalent"                                  # a key of harness.suite.claims.KINDS: its judge
    setups = { bf16 = "exp_a.toml", 4bit = "exp_b_4bit.toml" }  # role → setup file, relative to this
                                                         # file's folder; the first is the reference
    equivalence_margin = 3.0                             # the kind's bounds
    # experiment = "exp_b"   the experiment it is reported under (default: this setup's own)
    # across_stacks = true   the first setup's records come from the other stack (--lorabench-other-stack)

`setups` may be left out for a kind that reads one setup: it then reads this one. One definition for both
readers: the suite's pytest cases (`harness.suite.cases`) and the report (`harness.report.claim_table`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.results import RunRecord
from harness.suite import claims as c
from harness.suite.setups import BenchSetup, load_bench_setup

Runs = Mapping[str, Sequence[RunRecord]]  # role → records
CLAIM_KEYS = ("kind", "setups", "experiment", "across_stacks")
ONE_SETUP_ROLE = "runs"


@dataclass(frozen=True)
class Claim:
    experiment: str  # the experiment it is reported under
    name: str
    kind: c.Kind
    setups: Mapping[str, Path]  # role → setup file; the first is the reference
    source: Path  # the setup file that declares it and holds its bounds
    bounds: Mapping[str, Any]  # the file's bounds, the kind's defaults filled in
    markers: tuple[str, ...] = ()  # the declaring file's [suite] markers
    across_stacks: bool = False  # the first role's records are another stack's of this host

    @property
    def per_seed(self) -> bool:
        return self.kind.per_seed

    @property
    def timed(self) -> bool:
        """A time claim in a timed file: judged only on runs timed under the quiet-machine guard."""
        return self.kind.cost == "time" and "timed" in self.markers

    @property
    def bound_file(self) -> Path:
        """The file the bound cell names: the declaring one; for a kind without bounds, the setup it reads."""
        read = set(self.setups.values())
        if not self.kind.required and not self.kind.defaults and len(read) == 1:
            return next(iter(read))
        return self.source

    def bound_text(self) -> str:
        return self.kind.bound.format(**self.bounds)


def is_cost_claim(claim: Claim) -> bool:
    """A time or memory figure (`Kind.cost`): compared only between runs of one compile mode."""
    return claim.kind.cost is not None


@dataclass(frozen=True)
class Catalogue:
    """Every setup file of the folders (and those their claims read elsewhere) and every claim, ordered by
    experiment, then by file name, then as written."""

    folders: tuple[Path, ...]
    setups: Mapping[Path, BenchSetup]
    claims: tuple[Claim, ...]

    def experiments(self) -> dict[str, tuple[Path, ...]]:
        """Experiment → the setup files that declare its claims: a report lists an experiment's claims when
        one of them has records."""
        found: dict[str, dict[Path, None]] = {}
        for claim in self.claims:
            found.setdefault(claim.experiment, {})[claim.source] = None
        return {name: tuple(files) for name, files in found.items()}

    def key(self, path: Path) -> str:
        return self.setups[path].key

    def find(self, experiment: str, name: str) -> Claim:
        for claim in self.claims:
            if (claim.experiment, claim.name) == (experiment, name):
                return claim
        known = ", ".join(f"{k.experiment}: {k.name}" for k in self.claims)
        raise KeyError(f"no claim {name!r} in {experiment!r}; the catalogue has: {known}")


def field_path(name: str, key: str | None = None) -> str:
    """`claims."seed spread".kind`, as the TOML would spell the field."""
    quoted = (
        name if name.replace("_", "").replace("-", "").isalnum() else json.dumps(name, ensure_ascii=False)
    )
    return f"claims.{quoted}" + (f".{key}" if key else "")


# Any values: a claim's bounds: numbers, strings or lists, per claim kind.
def _bounds(setup: BenchSetup, name: str, kind: c.Kind, table: Mapping[str, Any]) -> dict[str, Any]:
    given = {k: v for k, v in table.items() if k not in CLAIM_KEYS}
    allowed = (*kind.required, *kind.defaults)
    for key, value in given.items():
        if key not in allowed:
            raise UserError(
                f"{setup.path}: {field_path(name, key)}: neither a key of a claim ({', '.join(CLAIM_KEYS)}) "
                f"nor a bound of kind {kind.name!r} ({', '.join(allowed) or 'it takes none'})"
            )
        words = kind.choices.get(key)
        if words and value not in words:
            raise UserError(
                f"{setup.path}: {field_path(name, key)}: {value!r}; use one of {', '.join(words)}"
            )
        if not words and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise UserError(
                f"{setup.path}: {field_path(name, key)}: {value!r} is not a number; give e.g. {key} = 1.5"
            )
    for key in kind.required:
        if key not in given:
            raise UserError(
                f"{setup.path}: {field_path(name, key)}: missing; kind {kind.name!r} needs it, "
                f"e.g. {key} = 1.0"
            )
    return {**kind.defaults, **given}


def _roles(setup: BenchSetup, name: str, kind: c.Kind, given: Any) -> dict[str, Path]:
    if given is None and kind.setups == 1:
        return {ONE_SETUP_ROLE: setup.path}
    example = f'setups = {{ reference = "other.toml", this = "{setup.path.name}" }}'
    if not isinstance(given, dict) or len(given) != kind.setups:
        raise UserError(
            f"{setup.path}: {field_path(name, 'setups')}: {given!r}; kind {kind.name!r} reads "
            f"{kind.setups} setup(s), role → file, e.g. {example}"
        )
    roles: dict[str, Path] = {}
    for role, file in given.items():
        path = (setup.path.parent / str(file)).resolve()
        if not isinstance(file, str) or not path.is_file():
            raise UserError(
                f"{setup.path}: {field_path(name, f'setups.{role}')}: {file!r} not found in "
                f"{setup.path.parent}; give a setup file's path relative to that folder"
            )
        roles[role] = path
    return roles


def parse_claim(setup: BenchSetup, name: str, table: Mapping[str, Any]) -> Claim:
    """One `[claims.NAME]` table; a problem is a one-line `UserError` naming the field, the value and the fix."""
    kind_name = table.get("kind")
    if kind_name not in c.KINDS:
        raise UserError(
            f"{setup.path}: {field_path(name, 'kind')}: {kind_name!r} is not a claim kind; use one of "
            f"{', '.join(c.KINDS)} (harness/suite/claims.py, KINDS)"
        )
    kind = c.KINDS[kind_name]
    experiment = table.get("experiment", setup.fields.get("experiment", "adhoc"))
    across = table.get("across_stacks", False)
    if not isinstance(experiment, str) or not experiment:
        raise UserError(
            f'{setup.path}: {field_path(name, "experiment")}: {experiment!r}; give a name, e.g. "exp_x"'
        )
    if not isinstance(across, bool) or (across and kind.setups != 2):
        raise UserError(
            f"{setup.path}: {field_path(name, 'across_stacks')}: {across!r}; true only for a kind that "
            "compares two setups, else leave it out"
        )
    roles = _roles(setup, name, kind, table.get("setups"))
    bounds = _bounds(setup, name, kind, table)
    return Claim(experiment, name, kind, roles, setup.path, bounds, setup.markers, across)


def _setup_files(folders: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            raise UserError(f"setups folder {folder}: not a folder; give a folder of setup .toml files")
        found = sorted(folder.glob("*.toml"))
        if not found:  # else the suite runs nothing and says only "1 skipped"
            raise UserError(f"setups folder {folder}: no *.toml file in it; put your setup files there")
        files += found
    return files


def _copy_of(setup: BenchSetup, setups: Mapping[Path, BenchSetup]) -> Path | None:
    """The file `setup` is a byte-for-byte copy of (e.g. the built-in folder mounted into a container a
    second time), which it then stands for; None when it is a setup of its own."""
    for other in setups.values():
        if other.key == setup.key and other.path.read_bytes() == setup.path.read_bytes():
            return other.path
    return None


def load_catalogue(
    folders: Sequence[Path], load: Callable[[Path], BenchSetup] = load_bench_setup
) -> Catalogue:
    """Every setup file in `folders` and the claims they declare; a bad file is a one-line `UserError`."""
    setups: dict[Path, BenchSetup] = {}
    copies: dict[Path, Path] = {}  # a copy's path → the file it copies
    for path in _setup_files(folders):
        setup = load(path)
        if (original := _copy_of(setup, setups)) is not None:
            copies[setup.path] = original
        else:
            setups.setdefault(setup.path, setup)
    found: list[Claim] = []
    for setup in list(setups.values()):
        for name, table in setup.claims.items():
            claim = parse_claim(setup, name, table)
            claim = replace(claim, setups={role: copies.get(p, p) for role, p in claim.setups.items()})
            for path in claim.setups.values():
                if path not in setups:  # a setup outside the folders, named by a claim
                    setups[path] = load(path)
            found.append(claim)
    _check_unique(setups.values(), found)
    found.sort(key=lambda k: (k.experiment, k.source.name))  # stable: a file's claims keep their order
    return Catalogue(tuple(f.resolve() for f in folders), setups, tuple(found))


def _check_unique(setups: Sequence[BenchSetup] | Any, claims: Sequence[Claim]) -> None:
    keys: dict[str, Path] = {}
    for setup in setups:
        if (other := keys.setdefault(setup.key, setup.path)) != setup.path:
            raise UserError(
                f"{setup.path}: name: {setup.key!r} is also {other}'s experiment/name; give one "
                "of them another name (records are filed by it)"
            )
    names: dict[tuple[str, str], Path] = {}
    for claim in claims:
        if (other := names.setdefault((claim.experiment, claim.name), claim.source)) != claim.source:
            raise UserError(
                f"{claim.source}: {field_path(claim.name)}: experiment {claim.experiment!r} has a claim "
                f"of that name in {other} too; give this one another name"
            )


# Claims whose figure is a cost (peak memory, time, a speedup): CUDA graphs keep their own memory pools and
# change the step time, so such a claim compares runs of one compile mode only (issue #27: Exp B's 4-bit
# run, eager, against a graphed bf16 run measured the compile mode, not the 4 bits).


def compile_mode(record: RunRecord) -> str:
    """The compile mode a run trained in: "auto" resolved by what the record says ran."""
    mode = record.setup.recipe.compile
    if mode != "auto":
        return mode
    if record.train is not None and record.train.compile:
        return record.train.compile
    return "graphs" if record.train is not None and record.train.graphs else "none"


def compile_mismatch(claim: Claim, runs: Runs) -> str | None:
    """For a cost claim whose roles ran in different compile modes: the modes by role; else None."""
    if not is_cost_claim(claim):
        return None
    modes = {role: sorted({compile_mode(r) for r in records}) for role, records in runs.items() if records}
    if len({mode for found in modes.values() for mode in found}) < 2:
        return None
    return "; ".join(f"{role}: recipe.compile {'/'.join(found)}" for role, found in modes.items())


def judge(claim: Claim, runs: Runs) -> c.Outcome:
    """The claim's outcome from records by role."""
    if mismatch := compile_mismatch(claim, runs):
        return c.Outcome(
            "not evaluable",
            f"{claim.name} compares a cost across compile modes ({mismatch}): run the reference setup with the "
            "other's recipe.compile (e.g. --lorabench-set recipe.compile=none) so they are like for like",
        )
    try:
        return claim.kind.judge([runs[role] for role in claim.setups], claim.bounds)
    except c.NotEvaluable as exc:  # a getter outside a check (e.g. the predicted saving)
        return c.Outcome("not evaluable", str(exc))


def assert_claim(claim: Claim, runs: Runs, setups: Mapping[Path, BenchSetup]) -> Any:
    """The suite's side: judge the claim on the records a case ran (role → records) and return its figure,
    or fail showing every number. The records must be the claim's setups, so a case and the report can
    never judge different things under one claim's name."""
    if set(runs) != set(claim.setups):
        raise ValueError(
            f"{claim.experiment}: {claim.name!r} takes records for {sorted(claim.setups)}, got {sorted(runs)}"
        )
    for role, records in runs.items():
        expected = setups[claim.setups[role]].key
        wrong = [c.label(r) for r in records if f"{r.experiment}/{r.setup_name}" != expected]
        if wrong:
            raise AssertionError(
                f"{claim.name}: role {role!r} is {expected} ({claim.setups[role].name}), got {', '.join(wrong)}"
            )
    return c.require(judge(claim, runs))
