"""The result of a verification, as data: text and JSON renderings live in report.py."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

EXIT_CODES = {"equivalent": 0, "not-equivalent": 1, "unknown": 2, "error": 3}


@dataclass
class OutputResult:
    index: int
    verdict: str  # equivalent | not-equivalent | unknown
    elements: int = 0
    syntactic: int = 0  # elements closed by simplification alone
    detail: str = ""
    what: str = ""  # "output 0", or "replicas of output 0 in f.mlir over {tp}: devices 0 and 3"


@dataclass
class Replay:
    backend: str  # "numeric" (own float64 interpreter) or "xla"
    ref_value: Any
    other_value: Any
    confirmed: bool
    error: str = ""


@dataclass
class Counterexample:
    inputs: dict[str, Any]  # input name -> nested lists
    output: int
    index: list[int]
    ref_value: Any  # exact value under the model (number, or "nan"/"inf"/"-inf")
    other_value: Any
    uses_approximation: bool = False
    replay: list[Replay] = field(default_factory=list)
    what: str = ""  # the target: "output 0", or the replicas that diverge
    # Replica divergence: the two devices whose copies differ (ref_value is the first
    # device's copy, other_value the second's, both in program `side`).
    devices: list[int] | None = None
    side: str = ""
    confirmed: bool = False  # XLA reproduces the difference (not only our interpreter)
    minimized: bool = False  # inputs pushed to 0 / small integers, difference re-checked
    completed: bool = False  # found by searching near a model XLA did not reproduce
    # True: the solver finds no other witness; False: another input shows the difference
    # too (checked exactly, or a solver model); None: not asked, or the solver gave up.
    unique: bool | None = None
    # The earliest op of the differing program whose value has no reference counterpart:
    # {"op", "loc", "value", "device"?}.
    first_divergence: dict[str, Any] | None = None
    # Shape shrinking: the witness was found at the shrunk sizes. `embedded`: True when
    # it was placed into the original sizes and XLA shows the difference there (inputs,
    # index and values are then the original-size ones), False when that replay does not
    # show it, None when not tried; `not_embedded` then says why.
    shrunk_index: list[int] | None = None
    embedded: bool | None = None
    not_embedded: str = ""
    # Where XLA showed the difference: "original sizes" (the programs' own sizes: the
    # witness embedded, found at less-shrunk sizes and embedded, found without shrinking
    # or by the full-size check), "shrunk sizes" (with verdict `unknown`: a witness, replica
    # divergences included, that the original sizes do not show or that is too large to
    # replay there), None when nowhere (replay off, or not reproduced).
    confirmed_at: str | None = None
    # How it was found when not by the proof: "full-size check" (witness/fullsize.py).
    found_by: str = ""


@dataclass
class FullSizeCheck:
    """The numeric check of both original programs on XLA at their own sizes, before a
    verdict proved at shrunk sizes is printed as `equivalent` (witness/fullsize.py)."""

    ran: bool
    # agree | differ | marginal (a difference above float noise but not clearly a bug)
    # | skipped (budget, off, not needed) | failed (XLA could not run the programs)
    outcome: str
    reason: str  # one line: what was run and found, or why it did not run
    input_sets: int = 0
    kinds: list[str] = field(default_factory=list)  # the kinds of input sets run
    max_rel_diff: float | None = None  # largest |ref - other| / the output's scale, all sets and outputs
    # The estimate the budget was checked against: per program, op-result bytes and FLOPs.
    estimate: dict[str, Any] = field(default_factory=dict)
    time_s: float = 0.0


@dataclass
class Verdict:
    verdict: str
    reason: str
    time_s: float = 0.0
    outputs: list[OutputResult] = field(default_factory=list)
    counterexample: Counterexample | None = None
    approximations: list[str] = field(default_factory=list)
    precision: list[str] = field(default_factory=list)
    unsupported: list[dict[str, str]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    # The shrink map (docs/shrinking.md): applied, shrunk/kept dimension classes with
    # original and verified sizes, and why each kept class keeps its size.
    shrink: dict[str, Any] | None = None
    # The float inputs the verdict is about (Options.inputs): "finite" or "ieee".
    inputs: str = "finite"
    # Bounds on inputs the verdict assumes (Options.assume, assume.record): name -> [lo, hi],
    # hi excluded for an integer input, both ends included for a float range (whose ends are
    # floats, 0.0 not 0); "inf" / "-inf": no bound.
    assume: dict[str, list[int | float | str]] = field(default_factory=dict)
    # The numeric check at the original sizes (Options.full_size_check), or None when the
    # run ended before it could be considered (an unsupported form).
    full_size_check: FullSizeCheck | None = None
    # Verifications at less-shrunk sizes (or without shrinking) tried when a counterexample
    # found at the shrunk sizes was not confirmed at the original sizes: per attempt
    # {"sizes", "verdict", "note"}.
    retries: list[dict[str, Any]] = field(default_factory=list)
    # The staged proof (tv_mlir/stages): {"used": False, "reason"} when the pair was proved
    # whole; else count, proved / reused / cached, time_s and per stage {index, name, hash,
    # how, verdict, reason, time_s, ref_ops, other_ops, locs}; "failed" names the first stage
    # that did not prove (the pair was then proved whole: "whole" is that verdict).
    stages: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def equivalent(self) -> bool:
        return self.verdict == "equivalent"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
