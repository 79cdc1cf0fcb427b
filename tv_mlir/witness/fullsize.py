"""The numeric check at the original sizes (issue 12, item 3). A pair proved equal at its
shrunk sizes is equal at the original sizes only by the shrinking argument
(docs/shrinking.md), whose rules can be wrong for a program they did not foresee (two
constants that collapse to one value, a top-2 mask over a class shrunk to 2, a
transpose of a square weight whose dims shrink to 1). Before such a pair is printed as
`equivalent`, both original programs run on XLA on a few input sets (random ones, and
boundary ones: one-hot rows, integer inputs at 0, n-1 and shard boundaries), within a
memory and compute budget (`cost.py`). A clear difference is a counterexample at the
original sizes; one above float noise but not clearly a bug is reported as marginal."""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.assume import FloatRange, Resolved, into
from tv_mlir.errors import TvError
from tv_mlir.ir import Module, TensorType
from tv_mlir.options import FULL_SIZE_MAX_FLOPS, FULL_SIZE_MEMORY_FRACTION
from tv_mlir.verdict import Counterexample, FullSizeCheck, Replay
from tv_mlir.witness.cost import Cost, mem_available, module_cost
from tv_mlir.witness.replay import py_value, run_on_xla

KINDS = ("random small integers", "random normal", "one-hot rows", "boundary indices")
# Shard counts whose block boundaries are tried as integer values and one-hot positions.
SHARD_COUNTS = (2, 4, 8)
# Minimisation of a full-size witness: at most this many extra pairs of runs (halving
# a 16-million-element input down to one element takes 24).
MINIMISE_RUNS = 32

# Per output element type: (noise, clear) bounds on the largest |ref - other| relative to
# the output's scale. Below `noise` the outputs agree (reduction order in f32 moves a sum
# of 10^4 products by ~1e-5 of its scale; chains of matmuls and exp a little more);
# above `clear` they differ; in between the check says "marginal" and decides nothing.
# Integers and booleans must be equal.
_FLOAT_TOLERANCE = {"f64": (1e-9, 1e-6), "f32": (1e-3, 1e-2), "f16": (3e-2, 0.2)}
_LOW_PRECISION = (0.1, 0.5)  # bf16 and the f8/f6/f4 types
# An output whose values are all below this (in magnitude) is compared on this scale:
# a mathematically zero output is float noise in both programs, not a 100% difference.
_SCALE_FLOOR = 1e-3


@dataclass(frozen=True)
class Budget:
    """Whether the original programs may run, and why (not)."""

    run: bool
    reason: str
    estimate: dict[str, Any]
    memory_fits: bool


# The compute budget of one replay of a counterexample at the original sizes, per program
# run. The full-size check runs on every shrunk `equivalent` (both programs on every input
# set of KINDS), so it keeps to FULL_SIZE_MAX_FLOPS (~1-2 s); a replay runs only once a
# counterexample was found, on one input set (at most one more per embedding layout), and
# decides between exit 1 and exit 2, so it may take longer: XLA does 30-50 GFLOP/s on large
# f32 matmuls on this machine's 2 cores, so a run at this cap is ~3-10 s (a ring matmul
# at Llama-3-8B widths, 2048x4096 @ 4096x4096, is 68.7 GFLOP).
REPLAY_MAX_FLOPS = 150_000_000_000
PURPOSES = ("replay", "check")


def budget(ref: Module, other: Module, mode: str, purpose: str = "replay") -> Budget:
    """`auto`: memory and FLOPs within budget; `on`: memory only; `off`: never. `purpose`:
    "replay" (one run of each program: a counterexample's replay, the default) or "check"
    (the full-size check: every input set), which sets the FLOP limit."""
    assert purpose in PURPOSES, purpose
    max_flops = REPLAY_MAX_FLOPS if purpose == "replay" else FULL_SIZE_MAX_FLOPS
    costs = {"ref": module_cost(ref), "other": module_cost(other)}
    estimate: dict[str, Any] = {k: {"bytes": c.bytes, "flops": c.flops} for k, c in costs.items()}
    avail = mem_available()
    limit = int(avail * FULL_SIZE_MEMORY_FRACTION) if avail else None
    # Programs run one after the other: the larger one must fit.
    biggest: Cost = max(costs.values(), key=lambda c: c.memory)
    flops = max(c.flops for c in costs.values())
    memory_fits = limit is None or biggest.memory <= limit
    estimate["memory_bytes"] = biggest.memory
    if limit is not None:
        estimate["memory_limit_bytes"] = limit
    estimate["flops_limit"] = max_flops
    if mode == "off":
        return Budget(False, "off (--full-size-check off)", estimate, memory_fits)
    if not memory_fits:
        return Budget(False, f"over the memory budget: ~{_mib(biggest.memory)} of op results and input copies "
                             f"against half of MemAvailable ({_mib(limit or 0)})", estimate, False)
    if mode == "auto" and flops > max_flops:
        return Budget(False, f"over the {purpose} compute budget: {flops / 1e9:.1f} GFLOP per run against "
                             f"{max_flops / 1e9:.0f} (--full-size-check on runs it anyway)",
                      estimate, True)
    return Budget(True, "", estimate, True)


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


# ---------------------------------------------------------------------------
# Input sets


def input_sets(types: Sequence[TensorType], seed: int = 0,
               bounds: Sequence[Resolved] = ()) -> list[tuple[str, list[np.ndarray]]]:
    """One set per kind in KINDS, in the style of prove/fingerprints.random_inputs; integer
    inputs with `bounds` (closed, --assume) clipped into them, float inputs with a range
    (assume.FloatRange) moved into it (`assume.into`)."""
    rng = np.random.default_rng(seed)
    span = max((d for t in types for d in t.shape), default=4)
    boundary = _boundary_values(span)
    sets: list[tuple[str, list[np.ndarray]]] = []
    for kind in KINDS:
        arrays: list[np.ndarray] = []
        for t in types:
            k = Kind.of(t)
            if k is Kind.BOOL:
                arrays.append(np.ones(t.shape, np.bool_) if kind == "one-hot rows" else
                              rng.integers(0, 2, size=t.shape).astype(np.bool_))
            elif k is Kind.INT:
                b = bounds[len(arrays)] if len(arrays) < len(bounds) else None
                ints = _ints(rng, t, kind, span, boundary)
                arrays.append(ints if b is None else np.clip(ints, b[0], b[1]))
            else:
                if kind == "random small integers":
                    x = rng.integers(-3, 4, size=t.shape).astype(np.float64)
                elif kind == "one-hot rows":
                    x = _one_hot(rng, t.shape)
                else:
                    x = np.round(rng.normal(size=t.shape), 3)
                b = bounds[len(arrays)] if len(arrays) < len(bounds) else None
                # A float's bound is its --assume range: the draws moved inside it.
                arrays.append(x if not isinstance(b, FloatRange) else into(x, b, exact=kind != "random normal"))
        sets.append((kind, arrays))
    return sets


def _boundary_values(n: int) -> np.ndarray:
    """0, 1, n-2, n-1, and both sides of every shard boundary of n."""
    vals = {0, 1, n - 2, n - 1}
    for s in SHARD_COUNTS:
        if n % s == 0:
            for k in range(1, s):
                vals.update({k * n // s - 1, k * n // s})
    return np.array(sorted(v for v in vals if v >= 0), dtype=np.int64)


def _ints(rng: np.random.Generator, t: TensorType, kind: str, span: int, bounds: np.ndarray) -> np.ndarray:
    if kind == "random small integers":
        lo, hi = -4, 5
    elif kind == "random normal":  # spread over the largest dim and a little past both ends
        lo, hi = -(span // 4) - 1, span + span // 4 + 2
    else:
        arr = rng.choice(bounds, size=t.shape) if t.shape else np.array(bounds[-1])
        return _clip(np.asarray(arr, dtype=np.int64), t)
    return _clip(rng.integers(lo, hi, size=t.shape).astype(np.int64), t)


def _clip(arr: np.ndarray, t: TensorType) -> np.ndarray:
    if t.bit_width >= 64:
        return arr
    lo, hi = (0, (1 << t.bit_width) - 1) if t.is_unsigned else (-(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1)
    return np.clip(arr, lo, hi)


def _one_hot(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A 1.0 in every row (last axis) at a boundary position of the row (first, last,
    shard boundaries), chosen per row; zeros elsewhere."""
    if not shape:
        return np.array(1.0)
    out = np.zeros(shape, dtype=np.float64)
    n = shape[-1]
    if n == 0 or out.size == 0:
        return out
    cols = rng.choice(_boundary_values(n)[_boundary_values(n) < n], size=shape[:-1])
    np.put_along_axis(out, np.asarray(cols, dtype=np.int64)[..., None], 1.0, axis=-1)
    return out


# ---------------------------------------------------------------------------
# Comparison


@dataclass
class Difference:
    """The largest difference of one comparison: `rel` relative to its output's scale,
    `score` the same over that output's `clear` bound (> 1: a clear difference)."""

    rel: float = 0.0
    score: float = 0.0
    noisy: bool = False  # above the noise bound somewhere
    max_rel: float = 0.0  # the largest relative difference of any output
    output: int = -1
    index: tuple[int, ...] = ()
    ref_value: Any = None
    other_value: Any = None


def tolerance(dtype: str) -> tuple[float, float]:
    if dtype.startswith(("i", "ui")):
        return (0.0, 0.0)
    return _FLOAT_TOLERANCE.get(dtype, _LOW_PRECISION)


def compare(ref: Sequence[np.ndarray], other: Sequence[np.ndarray], dtypes: Sequence[str]) -> Difference:
    worst = Difference()
    for j, (a, b, dtype) in enumerate(zip(ref, other, dtypes)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.size == 0:
            continue
        noise, clear = tolerance(dtype)
        rel = _relative_difference(a, b, dtype)
        k = int(np.argmax(rel)) if rel.size else 0
        top = float(rel.reshape(-1)[k]) if rel.size else 0.0
        score = top / clear if clear > 0 else (np.inf if top > 0 else 0.0)
        worst.noisy = worst.noisy or top > noise
        worst.max_rel = max(worst.max_rel, top)
        if score > worst.score or (worst.output < 0 and top > 0):
            index = tuple(int(i) for i in np.unravel_index(k, a.shape)) if a.shape else ()
            worst.rel, worst.score, worst.output, worst.index = top, score, j, index
            worst.ref_value, worst.other_value = py_value(a[index]), py_value(b[index])
    return worst


def _relative_difference(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """Per element: |a - b| over the output's scale; inf where they differ in kind (NaN
    against a number, different infinities); 0 where both are NaN or the same infinity."""
    if dtype.startswith(("i", "ui")) or a.dtype.kind in "biu":
        return np.where(a != b, np.inf, 0.0)
    x, y = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(x) & np.isfinite(y)
    scale = max(float(np.max(np.abs(x[finite]), initial=0.0)), float(np.max(np.abs(y[finite]), initial=0.0)),
                _SCALE_FLOOR)
    with np.errstate(invalid="ignore"):
        rel = np.where(finite, np.abs(x - y) / scale, 0.0)
        same_special = (np.isnan(x) & np.isnan(y)) | (x == y)
    return np.where(finite | same_special, rel, np.inf)


# ---------------------------------------------------------------------------
# The check


@dataclass
class Outcome:
    check: FullSizeCheck
    counterexample: Counterexample | None = None
    unknown: str = ""  # "on" was asked for and could not run, or a marginal difference


def check(ref: Module, other: Module, mode: str, runner: Any, arg_names: Sequence[str],
          bounds: Sequence[Resolved] = ()) -> Outcome:
    """Run both original programs on the input sets and compare. `runner`: the XlaRunner
    shared by every XLA run of this verification; `bounds`: per input, closed --assume
    bounds that its values are kept in."""
    from tv_mlir.execute.xla import XlaRunError

    t0 = time.perf_counter()
    b = budget(ref, other, mode, purpose="check")
    if not b.run:
        out = Outcome(FullSizeCheck(False, "skipped", b.reason, estimate=b.estimate))
        if mode == "on" and not b.memory_fits:
            out.unknown = f"the full-size check was asked for (--full-size-check on) and cannot run: {b.reason}"
        return out
    types = ref.global_arg_types()
    # A value computed at a narrower float type anywhere (a bf16 sum whose result is
    # converted back to f32: a precision finding, not a difference) sets the tolerance.
    inner = _coarser(_coarsest_float(ref), _coarsest_float(other))
    dtypes = [_coarser(_coarser(r.dtype, o.dtype), inner)
              for r, o in zip(ref.global_result_types(), other.global_result_types())]
    kinds: list[str] = []
    worst = Difference()  # the largest score over the sets
    max_rel, noisy = 0.0, False
    found: tuple[Difference, list[np.ndarray]] | None = None
    run = _numeric_run if _small(b.estimate) else (lambda m, arrays: run_on_xla(runner, m, arrays)[0])
    try:
        for kind, arrays in input_sets(types, bounds=bounds):
            r = run(ref, arrays)
            o = run(other, arrays)
            kinds.append(kind)
            d = compare(r, o, dtypes)
            max_rel, noisy = max(max_rel, d.max_rel), noisy or d.noisy
            if d.score > worst.score or worst.output < 0:
                worst = d
            if d.score > 1:
                found = (d, arrays)
                break
    except (XlaRunError, TvError, MemoryError) as exc:
        msg = f"XLA could not run the original programs: {exc}"
        out = Outcome(FullSizeCheck(False, "failed", msg, len(kinds), kinds, max_rel if kinds else None,
                                    b.estimate, round(time.perf_counter() - t0, 3)))
        if mode == "on":
            out.unknown = f"the full-size check was asked for (--full-size-check on) and failed: {msg}"
        return out
    if found is not None and run is _numeric_run:
        # Found by the float64 interpreter: XLA must show it too (it confirms the witness).
        try:
            xr, _ = run_on_xla(runner, ref, found[1])
            xo, _ = run_on_xla(runner, other, found[1])
            confirmed = compare(xr, xo, dtypes).score > 1
        except (XlaRunError, TvError, MemoryError) as exc:
            confirmed, why = False, f"XLA could not run it: {exc}"
        else:
            why = "XLA does not show it"
        if not confirmed:
            d = found[0]
            reason = (f"the float64 interpreter shows output {d.output} differing at index {list(d.index)} at the "
                      f"original sizes, but {why}")
            return Outcome(FullSizeCheck(True, "marginal", reason, len(kinds), kinds, max_rel, b.estimate,
                                         round(time.perf_counter() - t0, 3)),
                           unknown=f"proved equal at the shrunk sizes, but the full-size check is marginal: {reason}")
    if found is not None:
        try:
            found = _minimise(ref, other, runner, dtypes, *found)
        except (XlaRunError, TvError, MemoryError):
            pass  # the witness as found still shows the difference
    elapsed = round(time.perf_counter() - t0, 3)
    n = len(kinds)
    engine = "the float64 interpreter" if run is _numeric_run else "XLA"
    where = f"{n} input sets ({', '.join(kinds)}) on {engine}"
    if found is not None:
        d, arrays = found
        c = Counterexample({name: _py_list(a) for name, a in zip(arg_names, arrays)}, d.output, list(d.index),
                           d.ref_value, d.other_value, what=f"output {d.output}", confirmed=True,
                           confirmed_at="original sizes", found_by="full-size check",
                           replay=[Replay("xla, original sizes", d.ref_value, d.other_value, True)])
        reason = (f"ran on {where}: output {d.output} differs at index {list(d.index)} "
                  f"(relative difference {d.rel:.3g})")
        return Outcome(FullSizeCheck(True, "differ", reason, n, kinds, max_rel, b.estimate, elapsed), c)
    if noisy:
        reason = (f"ran on {where}: the largest relative difference {worst.rel:.3g} (output {worst.output} at "
                  f"index {list(worst.index)}) is above float noise but not clearly a bug")
        return Outcome(FullSizeCheck(True, "marginal", reason, n, kinds, max_rel, b.estimate, elapsed),
                       unknown=f"proved equal at the shrunk sizes, but the full-size check is marginal: {reason}")
    reason = f"ran on {where}: the outputs agree (largest relative difference {max_rel:.3g})"
    return Outcome(FullSizeCheck(True, "agree", reason, n, kinds, max_rel, b.estimate, elapsed))


# Programs this small run on the project's float64 interpreter instead of XLA: XLA's
# compile (1-2 s per module on this machine) would be most of a small pair's time. A
# difference found there is confirmed on XLA before it counts.
NUMERIC_MAX_BYTES = 8 * 2**20
NUMERIC_MAX_FLOPS = 20_000_000


def _small(estimate: dict[str, Any]) -> bool:
    sides = [estimate.get(k, {}) for k in ("ref", "other")]
    return all(c.get("bytes", math.inf) <= NUMERIC_MAX_BYTES and c.get("flops", math.inf) <= NUMERIC_MAX_FLOPS
               for c in sides)


def _numeric_run(m: Module, arrays: list[np.ndarray]) -> list[np.ndarray]:
    from tv_mlir.algebra import NumericAlgebra
    from tv_mlir.execute.interp import Interpreter

    return Interpreter(m, NumericAlgebra()).run([np.asarray(a) for a in arrays])


def _coarsest_float(m: Module) -> str:
    types = {t.dtype for f in m.funcs.values() for op in f.body.walk() for t in op.result_types if t.is_float}
    types |= {t.dtype for t in m.main.arg_types if t.is_float}
    return max(types, key=lambda d: tolerance(d)[1], default="f64")


def _coarser(a: str, b: str) -> str:
    """The element type whose tolerance is the larger (a bf16 program against an f32 one
    is compared at bf16's)."""
    return max((a, b), key=lambda d: tolerance(d)[1])


def _minimise(ref: Module, other: Module, runner: Any, dtypes: Sequence[str], d: Difference,
              arrays: list[np.ndarray]) -> tuple[Difference, list[np.ndarray]]:
    """Zero whole inputs, then halves of what is left of each (largest input first),
    while the difference stays clear, within MINIMISE_RUNS pairs of runs: a full-size
    witness is printed and stored as JSON, and zeros print as `zeros(shape) except ...`."""
    runs = 0

    def still(trial: list[np.ndarray]) -> Difference | None:
        nonlocal runs
        runs += 1
        r, _ = run_on_xla(runner, ref, trial)
        o, _ = run_on_xla(runner, other, trial)
        d2 = compare(r, o, dtypes)
        return d2 if d2.score > 1 else None

    order = sorted(range(len(arrays)), key=lambda k: -np.asarray(arrays[k]).size)
    for k in order:
        if runs >= MINIMISE_RUNS or not np.any(arrays[k]):
            continue
        trial = list(arrays)
        trial[k] = np.zeros_like(arrays[k])
        if (d2 := still(trial)) is not None:
            d, arrays = d2, trial
    for k in order:
        flat = np.asarray(arrays[k]).reshape(-1)
        lo, hi = 0, flat.size
        while hi - lo > 1 and runs < MINIMISE_RUNS:
            mid = (lo + hi) // 2
            for keep in ((lo, mid), (mid, hi)):
                kept = np.zeros_like(flat)
                kept[keep[0]:keep[1]] = flat[keep[0]:keep[1]]
                trial = list(arrays)
                trial[k] = kept.reshape(np.shape(arrays[k]))
                if (d2 := still(trial)) is not None:
                    d, arrays, (lo, hi) = d2, trial, keep
                    break
            else:
                break
    return d, arrays


def _py_list(arr: np.ndarray) -> Any:
    from tv_mlir.witness.settle import py_list

    return py_list(np.asarray(arr))


__all__ = ["KINDS", "Outcome", "budget", "check", "compare", "input_sets", "tolerance"]
