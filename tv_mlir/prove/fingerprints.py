"""Numeric runs of both programs on random inputs, and the fingerprints of their values:
equal fingerprints nominate a reference value as the counterpart of another program's
value, which the sweep then proves (a fingerprint is evidence, never a proof)."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.algebra import Kind, NumericAlgebra
from tv_mlir.algebra.numeric import FUNCS
from tv_mlir.assume import FloatRange, Resolved, into
from tv_mlir.errors import Unsupported
from tv_mlir.execute.interp import Interpreter
from tv_mlir.ir import Module, Op, TensorType

# Random input sets. Fingerprints must tell apart values that agree by chance: a select or
# max takes the same branch in all runs with probability 2**-RUNS, and every such
# coincidence costs a failed proof.
RUNS = 8
INT64_END = 1 << 63
# The input set of the run with other functions (`OTHER_FUNCS`), one of the real-valued ones.
OTHER_FUNCS_INPUTS = 1
OTHER_FUNCS_RUN = True  # the switch the tests flip


def _other_exponential(x: np.ndarray) -> np.ndarray:
    """exp(x / 10^38): a function the proofs cannot tell from exp. They know of exp that
    exp(0) = 1, exp(x) > 0 and exp(x) * exp(y) = exp(x + y) (`TermStore._exps`: an online
    softmax rescales by it), and every continuous function with these is exp(c * x) for
    some c > 0. Its values far below 0 are not 0: exp(finfo.min - m) is 0 in floats (f32's
    finfo.min is -3.4e38; here it is exp(-3.4)), so every masked entry of a row with one
    unmasked entry agrees with the unmasked value on every true run (its denominator is
    exactly 1), and as reals it does not: each such match was a failed local proof of
    about 0.3 s. (At ordinary arguments the values are 1: this run tells little else
    apart, which the true runs do.)"""
    with np.errstate(all="ignore"):
        return np.exp(x * 1e-38)


OTHER_FUNCS: dict[str, Any] = {**FUNCS, "exponential": _other_exponential}


def random_inputs(types: Sequence[TensorType], seed: int = 0,
                  bounds: Sequence[Resolved] = (),
                  signs: Sequence[int] = ()) -> list[list[np.ndarray]]:
    """Run 0: small integers (exact arithmetic, readable witnesses); the other runs: real
    values with three decimals (printable, generic enough to avoid ties).

    Integer inputs are small in the first two runs and spread over the largest dimension
    size (and a little past both ends) in the others: an integer input is often an index (a
    token id, a position), and ids that all fall into the first shard's rows make the
    first shard's partial lookup look like the whole lookup (a failed proof per element).
    An input with `bounds` (closed, --assume) is drawn inside them. A float input with
    `signs` 2 (positive) or 1 (non-negative) is drawn so: the proof takes it so (a stage
    input that is a softmax denominator, an rsqrt argument), and a 0 or a negative value
    there makes infinities and NaNs that leave every value after it without a fingerprint,
    and a random counterexample outside the domain the proof assumes. The draws are the
    same as without `signs`, folded into the sign, so the other inputs do not change. A float
    input with `bounds` (assume.FloatRange, closed) is drawn inside them from the same draws
    (`assume.into`: `0:inf` as the sign 1 draws it); the sign a range from 0 or above gives
    is kept by it, and a stage input with a sign has no range (stage options drop `assume`)."""
    rng = np.random.default_rng(seed)
    span = max((d for t in types for d in t.shape), default=4)
    sets = []
    for run in range(RUNS):
        arrays: list[np.ndarray] = []
        for t in types:
            kind = Kind.of(t)
            if kind is Kind.BOOL:
                coin = rng.integers(0, 2, size=t.shape).astype(np.bool_)  # drawn always: the other draws stay
                b = bounds[len(arrays)] if len(arrays) < len(bounds) else None
                arrays.append(np.full(t.shape, bool(b[0])) if b is not None and b[0] == b[1] else coin)
            elif kind is Kind.INT:
                lo, hi = (-4, 5) if run < 2 else (-(span // 4) - 1, span + span // 4 + 2)
                lo = max(lo, 0) if t.is_unsigned else lo
                if t.bit_width < 64:  # within the type's range
                    lo = max(lo, -(1 << (t.bit_width - 1)) if not t.is_unsigned else 0)
                    hi = min(hi, (1 << t.bit_width) if t.is_unsigned else 1 << (t.bit_width - 1))
                b = bounds[len(arrays)] if len(arrays) < len(bounds) else None
                if b is not None and not isinstance(b, FloatRange):  # inside it: the usual range's part, else all
                    inside = max(lo, b[0]), min(hi, b[1] + 1)
                    lo, hi = inside if inside[0] < inside[1] else (b[0], b[1] + 1)
                if hi > INT64_END:  # a ui64 assumed past int64: the runs hold int64 values
                    if lo >= INT64_END:
                        raise Unsupported(f"an input of type {t.dtype} assumed at or above 2**63: the numeric "
                                          f"runs hold int64 values", "", "assume.ui64")
                    hi = INT64_END
                arrays.append(rng.integers(lo, hi, size=t.shape).astype(np.int64))
            else:
                sign = signs[len(arrays)] if len(arrays) < len(signs) else 0
                b = bounds[len(arrays)] if len(arrays) < len(bounds) else None
                if run == 0:
                    x = rng.integers(-3, 4, size=t.shape).astype(np.float64)
                    if isinstance(b, FloatRange):  # a float range (--assume p=0:1): drawn inside it
                        x = into(x, b, exact=True)
                    else:
                        x = np.abs(x) + 1 if sign == 2 else np.abs(x) if sign == 1 else x
                else:
                    x = rng.normal(size=t.shape)
                    if isinstance(b, FloatRange):  # rounded first: `into` ends inside the range
                        x = into(np.round(x, 3), b, exact=False)
                    else:
                        x = np.abs(x) + 0.25 if sign == 2 else np.abs(x) if sign == 1 else x
                        x = np.round(x, 3)
                arrays.append(x)
        sets.append(arrays)
    return sets


@dataclass
class Trace:
    """Numeric values of every top-level value (by SSA name) and the outputs, per run."""

    values: dict[str, list[np.ndarray]] = field(default_factory=dict)
    outputs: list[list[np.ndarray]] = field(default_factory=list)
    checks: list[list[Any]] = field(default_factory=list)  # per run: spmd.ReplicaCheck list
    other_funcs: bool = True  # values carry the run with other functions last (`numeric_trace`)
    # The fingerprints of the small values (`_small_keys`), made together at the first
    # `keys`: name -> (kind, keys, the runs they were made from).
    _small: dict[str, tuple[Kind, list[bytes | None], list[np.ndarray]]] | None = field(default=None, repr=False)

    def keys(self, name: str, kind: Kind) -> list[bytes | None] | None:
        """`fingerprints(self.values[name], kind)`, None for a value without runs. Why a
        method: each call of `fingerprints` costs some 30 us of numpy set-up whatever the
        value's size, and a sweep asks for every value of both programs on every device;
        on a small pair that set-up was a quarter of the symbolic phase. The values below
        KEYS_IN_ONE_BUFFER elements are fingerprinted together at the first call, in one
        array per element type (the keys of a row depend on that row alone, so they are
        the keys `fingerprints` makes of the value by itself)."""
        runs = self.values.get(name)
        if runs is None:
            return None
        if self._small is None:
            self._small = _small_keys(self.values)
        got = self._small.get(name)
        if got is not None and got[0] is kind and len(got[2]) == len(runs) and all(map(operator.is_, got[2], runs)):
            return got[1]
        return fingerprints(runs, kind)


def numeric_trace(module: Module, input_sets: list[list[np.ndarray]], max_unroll: int) -> Trace:
    """The runs on `input_sets`, and for the values' fingerprints only one more run with
    the uninterpreted functions replaced (`OTHER_FUNCS`): a match the proofs cannot show
    because it holds only for the true function is then no match. Its outputs are not
    kept: they are not the programs' values, so they are no counterexample."""
    trace = Trace()

    def record(op: Op, results: list[np.ndarray]) -> None:
        for name, r in zip(op.results, results):
            trace.values.setdefault(name, []).append(r)

    for inputs in input_sets:
        interp = Interpreter(module, NumericAlgebra(), max_unroll, observer=record)
        trace.outputs.append(interp.run(inputs))
        trace.checks.append(interp.replica_checks)
    trace.other_funcs = OTHER_FUNCS_RUN and len(input_sets) > OTHER_FUNCS_INPUTS
    if trace.other_funcs:
        other: dict[str, np.ndarray] = {}

        def keep(op: Op, results: list[np.ndarray]) -> None:
            other.update(zip(op.results, results))
        try:
            Interpreter(module, NumericAlgebra(funcs=OTHER_FUNCS), max_unroll, observer=keep).run(
                input_sets[OTHER_FUNCS_INPUTS])
        except Exception:  # other functions, other control flow (a loop past its unroll limit)
            other = {}
        # All or nothing: a value's runs and an input's (`input_runs`) must be as many for
        # their fingerprints to meet.
        if other.keys() == trace.values.keys():
            for name, r in other.items():
                trace.values[name].append(r)
        else:
            trace.other_funcs = False
    return trace


def align(a: Trace, b: Trace) -> None:
    """Both traces with the run with other functions, or neither: values of the two
    programs meet only with as many runs."""
    for t in (a, b):
        if t.other_funcs and not (a.other_funcs and b.other_funcs):
            for runs in t.values.values():
                runs.pop()
            t.other_funcs = False


def input_runs(trace: Trace, input_sets: list[list[np.ndarray]], k: int) -> list[np.ndarray]:
    """Input k's arrays in the order of a value's runs in `trace` (an input is the same
    with other functions)."""
    runs = [s[k] for s in input_sets]
    if trace.other_funcs:
        runs.append(input_sets[OTHER_FUNCS_INPUTS][k])
    return runs


def fingerprints(runs: list[np.ndarray], kind: Kind) -> list[bytes | None]:
    """The fingerprint of every element (flat, C order), or None where it is useless:
    values rounded to float32 (the runs compute in float64, in each program's own order),
    one per run. Vectorised: this runs for every element of every value (of both programs,
    on every device); on a small pair it was a quarter of the symbolic phase."""
    rows = np.stack([np.asarray(r).reshape(-1) for r in runs], axis=1)
    if kind is Kind.FLOAT:
        rows = rows.astype(np.float32)
        nonzero = (rows != 0).sum(axis=1)
        # A relu output is zero in about half the runs and must still be matched; a value
        # that is zero in all runs but one is too likely to match by coincidence (masks).
        ok = np.isfinite(rows).all(axis=1) & (nonzero >= 2)
    else:
        rows = rows.astype(np.int64)
        ok = (rows != 0).all(axis=1)
    ok &= (rows != rows[:, :1]).any(axis=1)  # run-independent values are constants
    tag = kind.value.encode()
    if len(rows) < KEYS_IN_ONE_BUFFER:
        return [tag + row.tobytes() if good else None for row, good in zip(rows, ok.tolist())]
    return _keys(tag, rows, ok)


# Values of at least this many elements make their fingerprints in one buffer (`_keys`):
# half the time per element past a few hundred, more than the per-row bytes below ~64.
KEYS_IN_ONE_BUFFER = 64


def _keys(tag: bytes, rows: np.ndarray, ok: np.ndarray) -> list[bytes | None]:
    """tag + row.tobytes() per row where ok, else None, made in one buffer (the tag written
    in front of every row) and read out as one void item per row."""
    n = rows.shape[0]
    body = np.ascontiguousarray(rows).view(np.uint8).reshape(n, -1)
    width = len(tag) + body.shape[1]
    buf = np.empty((n, width), np.uint8)
    buf[:, :len(tag)] = np.frombuffer(tag, np.uint8)
    buf[:, len(tag):] = body
    keys: list[Any] = buf.view(np.dtype((np.void, width))).reshape(-1).tolist()  # bytes, one per row
    return [k if good else None for k, good in zip(keys, ok.tolist())]


def _small_keys(values: dict[str, list[np.ndarray]]) -> dict[str, tuple[Kind, list[bytes | None], list[np.ndarray]]]:
    """The fingerprints of every value below KEYS_IN_ONE_BUFFER elements whose runs are
    float or integer arrays, as `fingerprints` makes them with the kind their dtype says
    (`Trace.keys` uses them only when the sweep asks for that kind). The values whose
    first run has one dtype (and as many runs) are put side by side and fingerprinted as
    one value: every step of `fingerprints` reads one row (one element's runs) at a time.

    Why the groups are exact: a value's runs are one op result's, of one shape (the
    interpreter raises ShapeError on any other), so the group is laid out value by value,
    run by run, as `sizes` says (the total is checked). `np.stack` casts a value's runs to
    their common dtype, and so does the group's concatenation, to the group's: a group
    whose concatenation is not of its key's dtype held a run of a wider one (an int64 run
    among uint64 values would make float64 and round large integers) and is left to
    `fingerprints` value by value. Otherwise every run casts into the key's dtype, and each
    value's own common dtype is that dtype too (its first run has it): the same casts as
    `np.stack`'s. Checked per group, not per run: a sweep asks for a fifth of the values of
    a sharded program (devices holding the same terms are observed once), so what the
    batch costs per value must stay well below what a call of `fingerprints` costs."""
    groups: dict[tuple[np.dtype, int], list[tuple[str, list[np.ndarray]]]] = {}
    for name, runs in values.items():
        if not runs or type(runs[0]) is not np.ndarray:
            continue
        first = runs[0]
        dt = first.dtype
        if dt.kind not in "fiu" or first.size >= KEYS_IN_ONE_BUFFER:
            continue
        groups.setdefault((dt, len(runs)), []).append((name, runs))
    out: dict[str, tuple[Kind, list[bytes | None], list[np.ndarray]]] = {}
    for (dt, n_runs), members in groups.items():
        kind = Kind.FLOAT if dt.kind == "f" else Kind.INT
        # Every run of every value one after another (value by value, run by run), then
        # element e of a value of n elements starting at `base` has its run j at base + j*n + e.
        flat = np.concatenate([r for _, runs in members for r in runs], axis=None)  # each flattened
        sizes = np.array([runs[0].size for _, runs in members], np.int64)
        total = int(sizes.sum())
        if flat.dtype != dt or flat.size != total * n_runs:
            continue
        bases = np.concatenate([[0], np.cumsum(sizes * n_runs)[:-1]])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        per_elem_n = np.repeat(sizes, sizes)
        first_run = np.repeat(bases, sizes) + np.arange(total) - np.repeat(starts, sizes)
        rows = flat[first_run[:, None] + np.arange(n_runs)[None, :] * per_elem_n[:, None]]
        keys = fingerprints(list(rows.T), kind)
        at = 0
        for (name, runs), n in zip(members, sizes.tolist()):
            out[name] = (kind, keys[at:at + n], list(runs))
            at += n
    return out
