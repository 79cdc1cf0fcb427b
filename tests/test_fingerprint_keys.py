"""The fingerprints made in one buffer (`fingerprints._keys`, values of KEYS_IN_ONE_BUFFER
elements or more) are the bytes the per-row path makes: the kind's tag, then the row's
float32 (or int64) bytes, None where the row is useless. A buffer that drops or misplaces
the tag, or reads rows with another stride, fails here."""
from __future__ import annotations

import numpy as np
import pytest

from tv_mlir.algebra import Kind
from tv_mlir.prove import fingerprints as F


def _spec(runs: list[np.ndarray], kind: Kind) -> list[bytes | None]:
    """The docstring's definition, one element at a time."""
    n = np.asarray(runs[0]).size
    out: list[bytes | None] = []
    for i in range(n):
        vals = [np.asarray(r).reshape(-1)[i] for r in runs]
        if kind is Kind.FLOAT:
            row = np.array(vals, np.float64).astype(np.float32)
            good = bool(np.isfinite(row).all() and (row != 0).sum() >= 2)
        else:
            row = np.array(vals).astype(np.int64)
            good = bool((row != 0).all())
        good = good and bool((row != row[0]).any())
        out.append(kind.value.encode() + row.tobytes() if good else None)
    return out


def _runs(kind: Kind, n: int, seed: int) -> list[np.ndarray]:
    """Nine runs of a value of n elements (a 2-d value when n is even): random elements,
    and where n allows, the rows the fingerprint leaves out: a NaN, an infinity, zero in
    all runs but one, the same in every run."""
    rng = np.random.default_rng(seed)
    if kind is Kind.FLOAT:
        x = np.round(rng.normal(size=(9, n)), 3)
        x[rng.random((9, n)) < 0.2] = 0.0  # relu-like zeros
        special = [(0, np.nan), (1, np.inf), (2, -np.inf)]
        for col, v in special:
            if col + 1 < n:
                x[4, col + 1] = v
        if n > 4:
            x[:, 4] = 0.0
            x[6, 4] = 1.5  # zero in all runs but one
        if n > 5:
            x[:, 5] = 2.0  # the same in every run
    else:
        x = rng.integers(-3, 4, size=(9, n)).astype(np.int64)
        if n > 2:
            x[:, 2] = 7
    return [r.reshape(n // 2, 2) if n % 2 == 0 else r for r in x]


@pytest.mark.parametrize("kind", [Kind.FLOAT, Kind.INT])
@pytest.mark.parametrize("n", [1, 5, 63, 64, 130])
@pytest.mark.parametrize("threshold", [0, 10_000, None])
def test_keys_are_the_per_row_bytes(kind: Kind, n: int, threshold: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if threshold is not None:
        monkeypatch.setattr(F, "KEYS_IN_ONE_BUFFER", threshold)
    runs = _runs(kind, n, seed=n)
    got = F.fingerprints(runs, kind)
    want = _spec(runs, kind)
    assert got == want
    if n >= 5:  # the case is not vacuous: kept and left-out rows both occur
        assert any(k is not None for k in want) and any(k is None for k in want)


def test_a_buffer_without_the_tag_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: a buffer path that leaves the tag out gives other keys."""
    monkeypatch.setattr(F, "KEYS_IN_ONE_BUFFER", 0)
    real = F._keys
    monkeypatch.setattr(F, "_keys", lambda tag, rows, ok: real(b"", rows, ok))
    runs = _runs(Kind.FLOAT, 64, seed=3)
    assert F.fingerprints(runs, Kind.FLOAT) != _spec(runs, Kind.FLOAT)


def _trace_values(seed: int) -> dict[str, list[np.ndarray]]:
    """Values of every element type the runs hold, of sizes below and past the batch's
    threshold, 1-d to 3-d; uint64 values past 2**53 next to int64 ones (one float64
    array for both would round them alike); one value with a run of another dtype."""
    rng = np.random.default_rng(seed)
    values: dict[str, list[np.ndarray]] = {}
    dtypes = [np.float64, np.float32, np.int64, np.int32, np.uint64, np.bool_]
    for k in range(36):
        n = int(rng.integers(1, 90))
        shape = [(n,), (1, n), (n, 1, 1)][k % 3]
        dt = dtypes[k % len(dtypes)]
        runs = []
        for _ in range(F.RUNS + 1):
            if dt is np.uint64:
                x = (np.uint64(1) << np.uint64(60)) + rng.integers(0, 3, size=shape).astype(np.uint64)
            elif np.dtype(dt).kind in "iu":
                x = rng.integers(-3, 4, size=shape).astype(dt)
            elif dt is np.bool_:
                x = rng.integers(0, 2, size=shape).astype(np.bool_)
            else:
                x = np.round(rng.normal(size=shape), 2).astype(dt)
                x.reshape(-1)[::5] = 0.0
            runs.append(x)
        values[f"%{k}"] = runs
    # Two ui64 values whose elements differ past float64's precision, and an int64 one.
    values["%big_a"] = [np.full(3, (1 << 62) + 1 + j, np.uint64) for j in range(F.RUNS + 1)]
    values["%big_b"] = [np.full(3, (1 << 62) + 2 + j, np.uint64) for j in range(F.RUNS + 1)]
    values["%mixed"] = [np.arange(4, dtype=np.float64 if j % 2 else np.float32) * (j + 1) for j in range(F.RUNS + 1)]
    # A ui64 value with an i64 run: its own runs stack to float64; in one array with the
    # other ui64 values it would make theirs float64 too.
    values["%ui_then_i"] = [np.full(2, 5 + j, np.uint64 if j == 0 else np.int64) for j in range(F.RUNS + 1)]
    return values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trace_keys_are_each_values_own(seed: int) -> None:
    """`Trace.keys` (small values fingerprinted together) gives each value the keys
    `fingerprints` makes of it alone, for the kind asked."""
    values = _trace_values(seed)
    trace = F.Trace(values=values)
    for name, runs in values.items():
        if runs[0].dtype == np.bool_:
            continue
        for kind in (Kind.FLOAT, Kind.INT):
            assert trace.keys(name, kind) == F.fingerprints(runs, kind), (name, kind)
    assert trace._small is not None and len(trace._small) > 10  # the batch did the work
    assert trace.keys("%missing", Kind.FLOAT) is None
    assert F.fingerprints(values["%big_a"], Kind.INT) != F.fingerprints(values["%big_b"], Kind.INT)


def test_trace_keys_follow_the_runs() -> None:
    """Keys made before a value's runs change (`align` drops the run with other
    functions) are not given for the new runs."""
    values = _trace_values(4)
    trace = F.Trace(values=values)
    name = next(k for k, r in values.items() if r[0].dtype == np.float64 and r[0].size < F.KEYS_IN_ONE_BUFFER)
    before = trace.keys(name, Kind.FLOAT)
    values[name] = values[name][:-1]
    assert trace.keys(name, Kind.FLOAT) == F.fingerprints(values[name], Kind.FLOAT) != before
