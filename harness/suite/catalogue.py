"""Which claims each experiment makes: the setups a claim reads (by role), the bounds it takes from a
setup file's `[claims]` table, and its judgment (`harness.suite.claims`). One definition for both
readers: the suite's pytest cases (`assert_claim`, which also checks that the records a case hands
over are the catalogue's setups) and the report (`harness.report.claim_table`, from records on disk).

Setup files are named relative to `benchmarks/`, as the suite's modules name them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.results import RunRecord
from harness.suite import claims as c
from harness.suite.setups import BenchSetup

Runs = Mapping[str, Sequence[RunRecord]]
Bounds = Mapping[str, Any]


@dataclass(frozen=True)
class Claim:
    experiment: str  # the suite's experiment (one pytest module)
    name: str
    test: str  # the pytest case that asserts it, under benchmarks/
    setups: Mapping[str, str]  # role → setup file
    bound_file: str  # the setup file whose [claims] table holds the bounds
    bound: str  # the bound in words, formatted with the bounds: "≥ {min_gain:g} points on every seed"
    judge: Callable[[Runs, Bounds], c.Outcome]
    required: tuple[str, ...] = ()  # bound keys the file must have
    defaults: Mapping[str, Any] = field(default_factory=dict)  # optional bound keys
    per_seed: bool = False  # judged seed by seed (the suite parametrizes it by seed)
    # A time claim in a timed experiment: the suite judges it on runs timed under the quiet-machine guard.
    timed: bool = False
    cross_stack: bool = False  # compares two stacks of one host

    def bound_text(self, bounds: Bounds) -> str:
        return self.bound.format(**{**self.defaults, **bounds})


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    setups: tuple[str, ...]  # the setups it owns; a report lists its claims when one of them has records


A = "setups/exp_a.toml"
B4 = "setups/exp_b_4bit.toml"
B_MOVED = "setups/exp_b_4bit_adapter_on_bf16.toml"
C_TWO = "setups/exp_c_two_cards.toml"
C_ONE_SPEED = "setups/exp_c_speed_one_card.toml"
C_TWO_SPEED = "setups/exp_c_speed_two_cards.toml"
C_NODES = "setups/exp_c_two_nodes.toml"
C_NODES_SPEED = "setups/exp_c_speed_two_nodes.toml"
D_SMALL = "setups/exp_d_small.toml"
D_BIG = "setups/exp_d_big.toml"
E = "setups/exp_e.toml"
F = "setups/exp_f_unsloth.toml"
G_A = "setups/verdict_smollm2_135m.toml"
G_B = "setups/verdict_smollm2_1.7b.toml"
EQUIVALENT = "within ±{equivalence_margin:g} points (TOST, 90% interval)"

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("exp_a", "it learns", (A,)),
    Experiment("exp_b", "QLoRA", (B4, B_MOVED)),
    Experiment("exp_c", "two cards", (C_TWO, C_ONE_SPEED, C_TWO_SPEED)),
    Experiment("exp_c_nodes", "two nodes", (C_NODES, C_NODES_SPEED)),
    Experiment("exp_d", "bigger model", (D_SMALL, D_BIG)),
    Experiment("exp_e", "stacks", (E,)),
    Experiment("exp_f", "backends", (F,)),
    Experiment("exp_g", "verdict models", (G_A, G_B)),
)


def _time_ratio_both_ways(runs: Runs, b: Bounds) -> c.Outcome:
    there = c.check_time_ratio(runs["other"], runs["this"], b["max_time_ratio"])
    back = c.check_time_ratio(runs["this"], runs["other"], b["max_time_ratio"])
    return back if there.status == "pass" and back.status != "pass" else there


CLAIMS: tuple[Claim, ...] = (
    Claim("exp_a", "gain on every seed", "test_exp_a_learns.py::test_gain_on_every_seed", {"lora": A}, A,
          "≥ {min_gain:g} points exact match over the untrained model", lambda r, b: c.check_gain(r["lora"], b["min_gain"]),
          ("min_gain",), per_seed=True),
    Claim("exp_a", "seed spread", "test_exp_a_learns.py::test_seed_spread", {"lora": A}, A,
          "max − min trained exact match ≤ {max_seed_spread:g} points",
          lambda r, b: c.check_seed_spread(r["lora"], b["max_seed_spread"]), ("max_seed_spread",)),
    Claim("exp_b", "no NaN (bf16 reference)", "test_exp_b_qlora.py::test_no_nan_in_training_or_generation",
          {"runs": A}, A, "every loss finite, every run scored", lambda r, b: c.check_finite(r["runs"]), per_seed=True),
    Claim("exp_b", "no NaN (4-bit)", "test_exp_b_qlora.py::test_no_nan_in_training_or_generation",
          {"runs": B4}, B4, "every loss finite, every run scored", lambda r, b: c.check_finite(r["runs"]), per_seed=True),
    Claim("exp_b", "accuracy equivalent to bf16", "test_exp_b_qlora.py::test_accuracy_equivalent_to_bf16",
          {"bf16": A, "4bit": B4}, B4, EQUIVALENT,
          lambda r, b: c.check_equivalent(r["bf16"], r["4bit"], b["equivalence_margin"]), ("equivalence_margin",)),
    Claim("exp_b", "memory saved as predicted", "test_exp_b_qlora.py::test_memory_saved_as_predicted",
          {"bf16": A, "4bit": B4}, B4, "saved ≥ {min_saving_share:g} × the predicted saving (quantizable_fraction check)",
          lambda r, b: c.check_memory_saved(r["bf16"], r["4bit"], c.predicted_4bit_saving(r["bf16"][0]),
                                            b["min_saving_share"]), ("min_saving_share",)),
    Claim("exp_b", "adapter scored on a bf16 base", "test_exp_b_qlora.py::test_adapter_scored_on_the_other_base_precision",
          {"4bit": B4, "on_bf16": B_MOVED}, B_MOVED, EQUIVALENT,
          lambda r, b: c.check_equivalent(r["4bit"], r["on_bf16"], b["equivalence_margin"]), ("equivalence_margin",)),
    Claim("exp_c", "speedup over one card", "test_exp_c_two_cards.py::test_speedup_over_one_card",
          {"one": C_ONE_SPEED, "two": C_TWO_SPEED}, C_ONE_SPEED,
          "lower end of the 95% interval ≥ {min_speedup:g}× per {speedup_per}",
          lambda r, b: c.check_speedup(r["one"], r["two"], b["min_speedup"], b["speedup_per"]),
          ("min_speedup",), {"speedup_per": "run"}, timed=True),
    Claim("exp_c", "accuracy equivalent to one card", "test_exp_c_two_cards.py::test_accuracy_equivalent_to_one_card",
          {"one": A, "two": C_TWO}, C_TWO, EQUIVALENT,
          lambda r, b: c.check_equivalent(r["one"], r["two"], b["equivalence_margin"]), ("equivalence_margin",)),
    Claim("exp_c", "memory per card", "test_exp_c_two_cards.py::test_memory_per_card", {"one": A, "two": C_TWO}, C_TWO,
          "peak VRAM per card ≤ {max_vram_per_card_ratio:g}× one card's",
          lambda r, b: c.check_vram_ratio(r["one"][0], r["two"][0], b["max_vram_per_card_ratio"]),
          ("max_vram_per_card_ratio",), per_seed=True),
    Claim("exp_c", "ranks load one after another", "test_exp_c_two_cards.py::test_staggered_model_loading",
          {"two": C_TWO}, C_TWO, "no load window starts before the previous one ended",
          lambda r, b: c.check_loads_staggered(r["two"][0]), per_seed=True),
    Claim("exp_c_nodes", "speedup over one card", "test_exp_c_two_nodes.py::test_speedup_over_one_card",
          {"one": C_ONE_SPEED, "two": C_NODES_SPEED}, C_NODES_SPEED,
          "lower end of the 95% interval ≥ {min_speedup:g}× per {speedup_per}",
          lambda r, b: c.check_speedup(r["one"], r["two"], b["min_speedup"], b["speedup_per"]),
          ("min_speedup",), {"speedup_per": "run"}, timed=True),
    Claim("exp_c_nodes", "accuracy equivalent to one card", "test_exp_c_two_nodes.py::test_accuracy_equivalent_to_one_card",
          {"one": A, "two": C_NODES}, C_NODES, EQUIVALENT,
          lambda r, b: c.check_equivalent(r["one"], r["two"], b["equivalence_margin"]), ("equivalence_margin",)),
    Claim("exp_c_nodes", "memory per card", "test_exp_c_two_nodes.py::test_memory_per_card", {"one": A, "two": C_NODES},
          C_NODES, "peak VRAM per card ≤ {max_vram_per_card_ratio:g}× one card's",
          lambda r, b: c.check_vram_ratio(r["one"][0], r["two"][0], b["max_vram_per_card_ratio"]),
          ("max_vram_per_card_ratio",), per_seed=True),
    Claim("exp_d", "fits the VRAM budget", "test_exp_d_bigger_model.py::test_fits_the_vram_budget", {"big": D_BIG}, D_BIG,
          "peak VRAM ≤ {vram_budget_gib:g} GiB", lambda r, b: c.check_memory(r["big"], b["vram_budget_gib"] * c.GiB),
          ("vram_budget_gib",), per_seed=True),
    Claim("exp_d", "time against the small model", "test_exp_d_bigger_model.py::test_against_the_small_model",
          {"small": D_SMALL, "big": D_BIG}, D_SMALL, "≤ {max_time_ratio:g}× the small model's train time",
          lambda r, b: c.check_time_ratio(r["small"], r["big"], b["max_time_ratio"]), ("max_time_ratio",)),
    Claim("exp_d", "exact match against the small model", "test_exp_d_bigger_model.py::test_against_the_small_model",
          {"small": D_SMALL, "big": D_BIG}, D_SMALL, "mean ≥ {min_exact_match_gain_over_small:+g} points over the small model",
          lambda r, b: c.check_mean_gain_over(r["small"], r["big"], b["min_exact_match_gain_over_small"]),
          ("min_exact_match_gain_over_small",)),
    Claim("exp_e", "accuracy equivalent across stacks", "test_exp_e_stacks.py::test_accuracy_equivalent",
          {"other": E, "this": E}, E, EQUIVALENT,
          lambda r, b: c.check_equivalent(r["other"], r["this"], b["equivalence_margin"]), ("equivalence_margin",),
          cross_stack=True),
    Claim("exp_e", "time ratio across stacks", "test_exp_e_stacks.py::test_time_ratio", {"other": E, "this": E}, E,
          "either stack ≤ {max_time_ratio:g}× the other's train time", _time_ratio_both_ways, ("max_time_ratio",),
          timed=True, cross_stack=True),
    Claim("exp_e", "the stacks differ", "test_exp_e_stacks.py::test_package_diff", {"other": E, "this": E}, E,
          "some installed package differs", lambda r, b: c.check_packages_differ(r["other"][0], r["this"][0]),
          cross_stack=True),
    Claim("exp_f", "accuracy equivalent to hf", "test_exp_f_backends.py::test_accuracy_equivalent",
          {"hf": A, "unsloth": F}, F, EQUIVALENT,
          lambda r, b: c.check_equivalent(r["hf"], r["unsloth"], b["equivalence_margin"]), ("equivalence_margin",)),
    Claim("exp_f", "speedup over hf", "test_exp_f_backends.py::test_speedup", {"hf": A, "unsloth": F}, F,
          "lower end of the 95% interval ≥ {min_speedup:g}× per run",
          lambda r, b: c.check_speedup(r["hf"], r["unsloth"], b["min_speedup"]), ("min_speedup",), timed=True),
    Claim("exp_g", "output contract (model a)", "test_exp_g_verdict_models.py::test_keeps_the_output_contract",
          {"model": G_A}, G_A, "≥ {min_contract:g}% of held-out answers keep the contract",
          lambda r, b: c.check_contract(r["model"][0], b["min_contract"]), ("min_contract",), per_seed=True),
    Claim("exp_g", "output contract (model b)", "test_exp_g_verdict_models.py::test_keeps_the_output_contract",
          {"model": G_B}, G_B, "≥ {min_contract:g}% of held-out answers keep the contract",
          lambda r, b: c.check_contract(r["model"][0], b["min_contract"]), ("min_contract",), per_seed=True),
)  # fmt: skip


def find_claim(experiment: str, name: str) -> Claim:
    for claim in CLAIMS:
        if (claim.experiment, claim.name) == (experiment, name):
            return claim
    known = ", ".join(f"{k.experiment}: {k.name}" for k in CLAIMS)
    raise KeyError(f"no claim {name!r} in {experiment!r}; the catalogue has: {known}")


# Claims whose figure is a cost (peak memory, time, a speedup): CUDA graphs keep their own memory pools and
# change the step time, so such a claim compares runs of one compile mode only (issue #27: Exp B's 4-bit
# run, eager, against a graphed bf16 run measured the compile mode, not the 4 bits).
COST_CLAIM_WORDS = ("memory", "time", "speedup", "vram")


def is_cost_claim(claim: Claim) -> bool:
    return claim.timed or any(word in claim.name.lower() for word in COST_CLAIM_WORDS)


def compile_mode(record: RunRecord) -> str:
    """The compile mode a run trained in: "auto" resolved by what the record says ran."""
    mode = str((record.setup.get("recipe") or {}).get("compile", "none"))
    if mode == "auto":
        return "graphs" if record.train is not None and record.train.graphs else "none"
    return mode


def compile_mismatch(claim: Claim, runs: Runs) -> str | None:
    """For a cost claim whose roles ran in different compile modes: the modes by role; else None."""
    if not is_cost_claim(claim):
        return None
    modes = {role: sorted({compile_mode(r) for r in records}) for role, records in runs.items() if records}
    if len({mode for found in modes.values() for mode in found}) < 2:
        return None
    return "; ".join(f"{role}: recipe.compile {'/'.join(found)}" for role, found in modes.items())


def judge(claim: Claim, runs: Runs, bounds: Bounds) -> c.Outcome:
    """The claim's outcome from records by role and its setup file's [claims] table."""
    missing = [key for key in claim.required if key not in bounds]
    if missing:
        return c.Outcome("not evaluable", f"{claim.bound_file} [claims] has no {', '.join(missing)}")
    if mismatch := compile_mismatch(claim, runs):
        return c.Outcome(
            "not evaluable",
            f"{claim.name} compares a cost across compile modes ({mismatch}): run the reference setup with the "
            "other's recipe.compile (e.g. --lorabench-set recipe.compile=none) so they are like for like",
        )
    try:
        return claim.judge(runs, {**claim.defaults, **bounds})
    except c.NotEvaluable as exc:  # a getter outside a check (e.g. the predicted saving)
        return c.Outcome("not evaluable", str(exc))


def assert_claim(
    experiment: str, name: str, runs: Runs, load_setup: Callable[[str], BenchSetup]
) -> Any:
    """The suite's side: judge the claim on the records a case ran (role → records) and return its figure,
    or fail showing every number. The records must be the catalogue's setups, so a case and the report
    can never judge different things under one claim's name."""
    claim = find_claim(experiment, name)
    if set(runs) != set(claim.setups):
        raise ValueError(f"{experiment}: {name!r} takes records for {sorted(claim.setups)}, got {sorted(runs)}")
    for role, records in runs.items():
        fields = load_setup(claim.setups[role]).fields
        expected = f"{fields.get('experiment')}/{fields.get('name')}"
        wrong = [c.label(r) for r in records if f"{r.experiment}/{r.setup_name}" != expected]
        if wrong:
            raise AssertionError(f"{name}: role {role!r} is {expected} ({claim.setups[role]}), got {', '.join(wrong)}")
    return c.require(judge(claim, runs, load_setup(claim.bound_file).claims))
