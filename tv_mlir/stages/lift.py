"""A failed stage's bug, shown at program inputs without proving the pair whole.

A stage's counterexample is over its free inputs, which no program input may reach. But
when a stage fails because of a real bug, the random runs usually show it already: an
output of the two programs differs on one of them, clearly past float rounding. That
run's inputs are a witness at program inputs. It is minimised (fewest non-zero inputs,
small integers) while the float64 interpreter, with the real functions for the
approximated ops and within the f32 range, still shows the difference, and it counts only
when XLA shows it too (on the programs given here: `verify` then carries a shrunk witness
to the original sizes). A witness XLA does not show, or no differing run at all (a replica
divergence, a bug the random inputs miss), leaves the pair to the whole proof."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tv_mlir.assume import within
from tv_mlir.errors import TvError
from tv_mlir.ir import Module
from tv_mlir.semantics.common import Budget
from tv_mlir.semantics.ops import TRANSCENDENTAL_OPS
from tv_mlir.verdict import Counterexample, Replay
from tv_mlir.witness import fullsize
from tv_mlir.witness.replay import py_value, xla_replay
from tv_mlir.witness.settle import OutOfRange, _range_guard, minimize, py_list

Element = tuple[int, tuple[int, ...]]  # (output, index)


def _outputs(module: Module, arrays: Sequence[np.ndarray], max_unroll: int, max_elements: int
             ) -> list[np.ndarray] | None:
    """The outputs on the float64 interpreter within the f32 range, or None when the run
    leaves it (an overflow is no difference of the real functions) or cannot be run."""
    from tv_mlir.algebra import NumericAlgebra
    from tv_mlir.execute.interp import Interpreter

    budget = Budget(max_iterations=max_unroll, max_elements=max_elements, calls=[module.entry])
    try:
        with np.errstate(all="ignore"):
            return Interpreter(module, NumericAlgebra(), max_unroll, observer=_range_guard,
                               budget=budget).run(list(arrays))
    except (TvError, OutOfRange):
        return None


class _Runs:
    """Both programs on the interpreter, compared as the full-size check compares outputs
    (per output: relative to its scale, tolerances by the coarsest float type used)."""

    def __init__(self, ref: Module, other: Module, max_unroll: int, max_elements: int,
                 bounds: Sequence[tuple[int, int] | None]):
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


def numeric_witness(ref: Module, other: Module, input_sets: Sequence[list[np.ndarray]], names: list[str],
                    max_unroll: int, max_elements: int, bounds: Sequence[tuple[int, int] | None] = (),
                    runner: Any = None) -> Counterexample | None:
    """The first random run on which an output differs, minimised and confirmed on XLA, or
    None. `first_divergence` is left to the caller (the stage that failed knows it)."""
    runs = _Runs(ref, other, max_unroll, max_elements, bounds)
    types = ref.global_arg_types()
    for inputs in input_sets:
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
                                  minimized=candidate is smaller and smaller is not arrays, found_by="random run")
        return None  # XLA does not show the run's difference: the whole proof decides
    return None
