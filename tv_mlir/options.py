"""All user options in one frozen object that travels through the pipeline. Values are
checked when the object is made (also by `dataclasses.replace`), so the Python API and the
CLI reject the same bad values with the same `UsageError`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tv_mlir.errors import UsageError

MIB = 2**20
# Inputs (files, streams, stdin) larger than this are refused before they are read whole:
# jaxlib's parser needs several times the text's size, and a 200 MB module does not get a
# verdict in any useful time anyway. `--max-input-mb` / TV_MLIR_MAX_INPUT_MB raise it.
DEFAULT_MAX_INPUT_BYTES = 64 * MIB

# Budgets (README "Budgets"). Past any of them the run ends in `unknown` (exit 2) with one
# line naming the budget, never in a crash, a RecursionError or a hang.
#
# Brackets ({ ( [ <) nested in MLIR text, counted before jaxlib's parser sees the text: the
# parser recurses in C++ once per level and overflows the 8 MiB stack near 2,000 nested
# regions (a `case` in a `case` ...), killing the process.
MAX_BRACKET_DEPTH = 1000
# Regions nested in regions (a `case` in a `while` in an `if` ...). The reader, the passes and
# the interpreter walk regions by recursion; jax programs nest a few levels deep.
MAX_NESTING = 100
# Calls nested in calls (inlining, and the interpreter when calls are kept).
MAX_CALL_DEPTH = 64
# Ops: in one module as read, in the entry function once calls are inlined (every call
# inlines a copy of its callee, so calls that fan out, f20 calls f19 twice ..., grow
# exponentially), and op executions in one run of a program with loop bodies counted per
# iteration. The largest bundled programs are the 126-layer stacks of testdata/depth (35,000
# ops as read; their scan forms execute as many). Every op costs ~0.3 ms over a whole-pair
# verification (reading, shrinking, 8 numeric runs and a symbolic run per program), so this
# bounds such a run to about a minute; a staged proof proves identical layers once.
MAX_OPS = 100_000
# Tensor elements computed in one run of one program (per device in SPMD programs), loops
# counted per iteration: every element becomes a term in the symbolic run. The same
# number as the static check of the whole program (`driver.MAX_ELEMENTS`).
MAX_EXECUTED_ELEMENTS = 4_000_000
# The longest chain of dependent ops in a module that XLA replay compiles: XLA's compile
# time grows with its square (a chain of 4,000 adds: 6 s, 10,000: 38 s) and its compiler
# overflows a thread's stack somewhere past 10,000.
MAX_XLA_CHAIN = 4000
# while-loop iterations in one run of a program, all loops together (`Options.max_unroll`).
DEFAULT_MAX_UNROLL = 100_000
# `Options.time_budget_s`: seconds of wall clock for one verification's proofs.
DEFAULT_TIME_BUDGET_S = 3600.0


# What `Options.inputs` may say, and how a verdict states it.
INPUT_DOMAINS = {"finite": "finite float inputs", "ieee": "IEEE float inputs (+-inf and NaN included)"}

# `Options.full_size_check`: the numeric check of both original programs on XLA before a
# verdict at shrunk sizes is printed as `equivalent` (witness/fullsize.py). "auto" runs it
# when the programs fit the budgets below, "on" whenever their memory fits, "off" never.
FULL_SIZE_CHECKS = ("auto", "off", "on")
# The budgets of "auto", per program run: op results (an upper bound on what XLA keeps
# alive) at most this fraction of MemAvailable, and at most this many FLOPs of
# contractions. XLA on 2 CPU cores does ~30 GFLOP/s on large f32 matmuls, so one run is
# ~0.15 s and the check (4 input sets, both programs) ~1-2 s with compilation; the
# realistic plans (testdata/sharded_big: 270 GFLOP to 38 TFLOP a run) are skipped.
FULL_SIZE_MEMORY_FRACTION = 0.5
# The second witness's sizes: its pair (tensor elements of both programs, as read) at most
# this many times the first shrunk pair's, or the first's plus SECOND_WITNESS_FLOOR for
# tiny pairs. Growing every class of attention or FSDP doubles every dim (the admissible
# sizes are divisors), 4x-14x the elements and up to 17x the proof time; families past
# the budget keep their first size and the shrink map says so.
SECOND_WITNESS_GROWTH = 2
SECOND_WITNESS_FLOOR = 2000
# Grown past what staged proofs cut (stages.run.MAX_CUT_ELEMENTS), the growth budget is
# halved up to this many times.
SECOND_WITNESS_HALVINGS = 4
FULL_SIZE_MAX_FLOPS = 4_000_000_000


@dataclass(frozen=True)
class Options:
    timeout_s: float = 60.0  # per solver query
    jobs: int = 1  # parallel solver processes
    pipeline: str = "default"  # a named pipeline (tv_mlir/passes/pipelines/NAME.txt) or a pipeline file
    shrink: bool = True
    # while-loop iterations in one run of a program, all loops together (nested loops
    # multiply: 1,000 x 1,000 is 1,000,000), before `unknown`
    max_unroll: int = DEFAULT_MAX_UNROLL
    replay: bool = True  # replay counterexamples on the float64 interpreter and XLA (always when approximated)
    progress: bool = False  # phase lines on stderr
    sweep: bool = True  # cut points and merging of proven-equal intermediate values
    strict_dtypes: bool = False  # precision findings make the verdict not-equivalent
    # The symbolic core: "own" (the project's hash-consed terms, issue 11) or "z3" (terms
    # built in z3, the earlier core; tests/test_core_differential.py holds it to the same
    # verdicts until it is removed).
    core: str = "own"
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES  # per input file, stream or stdin
    # The float inputs the verdict is about: "finite" (every finite real, the default: what
    # a training step is fed) or "ieee" (also +-inf and NaN, where x * 0 is not 0).
    inputs: str = "finite"
    # The numeric check at the original sizes before a shrunk `equivalent` (FULL_SIZE_CHECKS).
    full_size_check: str = "auto"
    # A pair proved equal at its shrunk sizes is proved again at grown sizes (every shrunk
    # class at its next admissible size, within SECOND_WITNESS_GROWTH): two witnesses for
    # one `equivalent` (issue 12 item 2). Off: faster, one witness.
    second_witness: bool = True
    # Bounds on inputs, (name, lo, hi): lo <= x < hi on an integer input, lo <= x <= hi on a
    # float one (tv_mlir/assume.py); a mapping {name: (lo, hi)} is accepted and stored as that tuple.
    assume: Any = ()
    # Inputs (by position) that range over every IEEE value whatever `inputs` says: a stage's
    # inputs that are cut values which may be +-inf or NaN (stages/finite.py).
    ieee_inputs: tuple[int, ...] = ()
    # Finite float inputs (by position) known > 0 / >= 0: a stage's inputs that are cut values
    # positive by construction (a softmax denominator; stages/finite.py).
    positive_inputs: tuple[int, ...] = ()
    nonnegative_inputs: tuple[int, ...] = ()
    # Closed bounds (position, lo, hi) on integer and i1 inputs, on top of `assume`'s: a
    # stage's inputs that the reference's values lie within (stages/ranges.py); an i1 input
    # with lo == hi is that constant.
    input_bounds: tuple[tuple[int, int, int], ...] = ()
    # Staged proofs (tv_mlir/stages): the pair cut at matched values, each stage pair proved
    # once per structural hash. Off: the pair is one proof.
    stages: bool = True
    # Pairs smaller than this (tensor elements of the larger program) are proved whole, but
    # for loops (proved by induction): a small pair's whole proof takes seconds, and a stage,
    # whose inputs are free, can cost more than the whole (0 cuts every pair).
    stage_min_elements: int = 250_000
    # Where stage proofs run: "local" (processes, `jobs` of them) or "ray" / "ray:ADDRESS".
    executor: str = "local"
    # The proof cache: None = the user's cache directory (stages/cache.default_cache_dir).
    cache_dir: str | None = None
    cache: bool = True
    # One stage proof's wall-clock limit in a worker process; past it the stage is unknown.
    stage_timeout_s: float = 600.0
    # The whole verification's time budget (wall clock, from the start of `verify`): past it
    # the proof running stops, later proofs do not start, and the verdict is `unknown`
    # naming where the time ran out (prove/deadline.py). Each stage has its own limit above,
    # but a pair of 63 stages may spend 63 of them, and the whole proof after a failed stage
    # had none. An hour: the slowest pair documented to prove took ~23 min wall at load 6-7.
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    # The budget's deadline (seconds since the epoch), set by `verify` when it starts (None:
    # no deadline, for proofs run outside `verify`). Not part of any cache key: `verify`
    # computes its key before setting it, and stage keys name their options one by one.
    deadline: float | None = None
    # The final queries' models refined by the laws of the approximated functions
    # (prove/refine.py), shrunk programs included: shrinking's Newton bound reads atoms such
    # as exp(p) as varying only where a numeric run shows them varying (shrink/same_witness.py),
    # so what the refined solver folds cannot hide a bug there. Part of the stage cache key.
    refine_models: bool = True
    # Outputs left unknown whose open elements read integer input elements of a small assumed
    # range are proved by cases over those values (prove/cases.py). Off while proving shrunk
    # programs (set by `driver.prove_pair` / `stages.run.prove_staged` when a class was
    # shrunk, carried into their stages): shrinking's rules were checked against a verifier
    # without it, and a new way to close a query is not admitted there until a rule's
    # argument says why it may be (the lesson of the refinement, docs/architecture.md).
    # Part of the stage cache key.
    by_cases: bool = True

    def __post_init__(self) -> None:
        from tv_mlir.assume import normalize

        object.__setattr__(self, "assume", normalize(self.assume))  # frozen: set once, here
        _check_positive_number("timeout_s", self.timeout_s)
        _check_positive_int("jobs", self.jobs)
        _check_positive_int("max_unroll", self.max_unroll)
        _check_positive_int("max_input_bytes", self.max_input_bytes)
        _check_positive_number("stage_timeout_s", self.stage_timeout_s)
        _check_positive_number("time_budget_s", self.time_budget_s)
        if self.deadline is not None and (not isinstance(self.deadline, (int, float)) or isinstance(self.deadline, bool)
                                          or not math.isfinite(self.deadline)):
            raise UsageError(f"option deadline must be a finite time in seconds since the epoch, got {self.deadline!r}")
        if not isinstance(self.stage_min_elements, int) or isinstance(self.stage_min_elements, bool) \
                or self.stage_min_elements < 0:
            raise UsageError(f"option stage_min_elements must be an integer >= 0, got {self.stage_min_elements!r}")
        from tv_mlir.stages.pool import Executor

        Executor.parse(self.executor)
        if self.inputs not in INPUT_DOMAINS:
            raise UsageError(f"option inputs must be one of {', '.join(INPUT_DOMAINS)}, got {self.inputs!r}")
        if self.full_size_check not in FULL_SIZE_CHECKS:
            raise UsageError(f"option full_size_check must be one of {', '.join(FULL_SIZE_CHECKS)}, "
                             f"got {self.full_size_check!r}")
        if not isinstance(self.pipeline, str):
            raise UsageError(f"option pipeline must be a name or a file path (str), got {type(self.pipeline).__name__}")


def _check_positive_number(name: str, value: object) -> None:
    # bool is an int subclass; True seconds is a mistake, not 1 s. nan and inf would reach
    # z3 as a timeout in milliseconds (int(nan) raises, inf never ends).
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise UsageError(f"option {name} must be a finite number > 0, got {value!r}")


def _check_positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"option {name} must be an integer >= 1, got {value!r}")
