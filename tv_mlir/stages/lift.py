"""A failed stage's bug, shown at program inputs without proving the pair whole.

A stage's counterexample is over its free inputs, which no program input may reach. But
when a stage fails because of a real bug, the random runs usually show it already: an
output of the two programs differs on one of them, clearly past float rounding. That
run's inputs are a witness at program inputs. It is minimised (fewest non-zero inputs,
small integers) while the float64 interpreter, with the real functions for the
approximated ops and without float64 overflow (`witness/overflow.py`), still shows the
difference, and it counts only when XLA shows it too (on the programs given here: `verify`
then carries a shrunk witness to the original sizes). A witness XLA does not show, or no
differing run at all (a replica divergence, a bug the random inputs miss), leaves the pair
to the whole proof.

Some bugs do not show at unit scale. `clip_by_global_norm(1.0)` rescales every gradient
whose norm passes 1, and Adam divides by the root of the second moment, so a gradient
mean divided by 4 instead of 2 changes nothing a unit-scale run can see: only gradients
of norm below 1 show it. `scaled_runs` are the random-normal runs with their float inputs
scaled by 2^-k (SCALE_POWERS): the staged proof compares both programs' outputs on them
once the unit-scale runs agree, before proving any stage when that is cheap (else when a
stage fails), and lifts a difference as above.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tv_mlir.assume import Resolved, within
from tv_mlir.errors import TvError
from tv_mlir.ir import Module
from tv_mlir.semantics.common import Budget
from tv_mlir.semantics.ops import TRANSCENDENTAL_OPS
from tv_mlir.verdict import Counterexample, Replay
from tv_mlir.witness import fullsize
from tv_mlir.witness.overflow import OutOfRange, OverflowGuard
from tv_mlir.witness.replay import py_value, xla_replay
from tv_mlir.witness.settle import minimize, py_list

Element = tuple[int, tuple[int, ...]]  # (output, index)

# Whether the staged proof also compares the outputs on the scaled runs (off: only a bug
# that shows at unit scale, or a stage's proof, reports a difference).
SCALED_RUNS = True
# The scales, 2^-k: a factor 2 at a time (not to step over a narrow band where a
# difference is both unclipped and past the runs' tolerance), down to 1/16 of a unit-scale
# run's values; each k costs a run of both programs per random-normal run (three).
SCALE_POWERS = (1, 2, 3, 4)
# Before any stage is proved the scaled runs are tried only while all of them together
# run at most this many tensor elements (runs x the larger program's): the FSDP step's
# 12 runs are 0.4 M (0.6 s CPU), the 8B 32-layer stack's at its shrunk sizes 14 M (~11 s
# CPU, as much as its whole verify). A larger pair runs them when a stage fails instead,
# next to the unit-scale runs' lift.
EARLY_SCALED_ELEMENTS = 1_000_000


def _outputs(module: Module, arrays: Sequence[np.ndarray], max_unroll: int, max_elements: int
             ) -> list[np.ndarray] | None:
    """The outputs on the float64 interpreter, or None when float64 overflows in the run (an
    overflow is no difference of the real functions) or it cannot be run."""
    from tv_mlir.algebra import NumericAlgebra
    from tv_mlir.execute.interp import Interpreter

    budget = Budget(max_iterations=max_unroll, max_elements=max_elements, calls=[module.entry])
    try:
        with np.errstate(all="ignore"):
            return Interpreter(module, NumericAlgebra(), max_unroll,
                               observer=OverflowGuard.of(module, arrays), budget=budget).run(list(arrays))
    except (TvError, OutOfRange):
        return None


class _Runs:
    """Both programs on the interpreter, compared as the full-size check compares outputs
    (per output: relative to its scale, tolerances by the coarsest float type used)."""

    def __init__(self, ref: Module, other: Module, max_unroll: int, max_elements: int,
                 bounds: Sequence[Resolved]):
        self.ref, self.other, self.max_unroll, self.bounds = ref, other, max_unroll, bounds
        self.max_elements = max_elements
        inner = fullsize._coarser(fullsize._coarsest_float(ref), fullsize._coarsest_float(other))
        self.dtypes = [fullsize._coarser(fullsize._coarser(r.dtype, o.dtype), inner)
                       for r, o in zip(ref.global_result_types(), other.global_result_types())]

    def both(self, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        r = _outputs(self.ref, arrays, self.max_unroll, self.max_elements)
        o = _outputs(self.other, arrays, self.max_unroll, self.max_elements) if r is not None else None
        return None if r is None or o is None else (r, o)

    def first(self, arrays: Sequence[np.ndarray]) -> Element | None:
        """The element that differs most clearly, when one does."""
        runs = self.both(arrays)
        if runs is None:
            return None
        d = fullsize.compare(*runs, self.dtypes)
        return (d.output, d.index) if d.score > 1 else None

    def element(self, arrays: Sequence[np.ndarray], at: Element) -> tuple[Any, Any] | None:
        """The two values of one element when it still differs clearly (inside --assume)."""
        if not within(arrays, self.bounds):
            return None
        runs = self.both(arrays)
        if runs is None:
            return None
        k, idx = at
        a, b = np.asarray(runs[0][k]), np.asarray(runs[1][k])
        if a.shape != b.shape:
            return None
        rel = fullsize._relative_difference(a, b, self.dtypes[k])
        _, clear = fullsize.tolerance(self.dtypes[k])
        return (py_value(a[idx]), py_value(b[idx])) if float(rel[idx]) > clear else None


def _approximates(module: Module) -> bool:
    return any(op.name in TRANSCENDENTAL_OPS for f in module.funcs.values() for op in f.body.walk())


@dataclass(frozen=True)
class ScaledRun:
    """A random run with its float inputs scaled by 2^-power."""

    power: int
    arrays: list[np.ndarray]

    @property
    def found_by(self) -> str:
        return f"random run scaled by 2^-{self.power}"


def scaled_runs(input_sets: Sequence[list[np.ndarray]], bounds: Sequence[Resolved],
                powers: Sequence[int] = SCALE_POWERS) -> list[ScaledRun]:
    """`input_sets` (the random-normal runs) with every float input scaled by 2^-k, k in
    `powers` (smallest k first). Integer and boolean inputs are indices, counts and masks,
    not magnitudes: kept. A float input stays as drawn when scaling could leave its
    --assume bounds (a lower bound above 0 or an upper one below): scaling toward 0 keeps
    [lo, hi] only when it holds 0. Powers of two scale float64 values exactly."""
    out = []
    for k in powers:
        for inputs in input_sets:
            arrays = []
            for i, a in enumerate(inputs):
                a = np.asarray(a)
                b = bounds[i] if i < len(bounds) else None
                if a.dtype.kind == "f" and (b is None or b[0] <= 0 <= b[1]):
                    a = np.ldexp(a, -k)
                arrays.append(a)
            if any(x is not y for x, y in zip(arrays, inputs)):  # a run without floats is the unit-scale run
                out.append(ScaledRun(k, arrays))
    return out


def numeric_witness(ref: Module, other: Module, input_sets: Sequence[list[np.ndarray]], names: list[str],
                    max_unroll: int, max_elements: int, bounds: Sequence[Resolved] = (),
                    runner: Any = None, found_by: Sequence[str] = ()) -> Counterexample | None:
    """The first random run on which an output differs, minimised and confirmed on XLA, or
    None. `first_divergence` is left to the caller (the stage that failed knows it).
    `found_by`: per run, how it was drawn (default "random run")."""
    runs = _Runs(ref, other, max_unroll, max_elements, bounds)
    types = ref.global_arg_types()
    for j, inputs in enumerate(input_sets):
        how = found_by[j] if j < len(found_by) else "random run"
        arrays = [np.asarray(a) for a in inputs]
        at = runs.first(arrays)
        if at is None:
            continue
        values = runs.element(arrays, at)
        if values is None:
            continue
        def still(xs: list[np.ndarray], at: Element = at) -> tuple[Any, Any] | None:
            return runs.element(xs, at)

        smaller, small_values = minimize(arrays, still, types)
        tried = [(smaller, small_values)] if small_values is not None and smaller is not arrays else []
        tried.append((arrays, values))
        for candidate, (r, o) in tried:
            replay = xla_replay(ref, other, list(candidate), at[0], at[1], runner=runner)
            if not replay.confirmed:
                continue
            return Counterexample({n: py_list(x) for n, x in zip(names, candidate)}, at[0], list(at[1]), r, o,
                                  uses_approximation=_approximates(ref) or _approximates(other), what=f"output {at[0]}",
                                  replay=[Replay("numeric", r, o, True), replay], confirmed=True,
                                  minimized=candidate is smaller and smaller is not arrays, found_by=how)
        return None  # XLA does not show the run's difference: the whole proof decides
    return None
