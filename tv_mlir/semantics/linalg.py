"""stablehlo.cholesky and stablehlo.triangular_solve as exact substitutions over the
element algebra (the StableHLO spec's definitions, and XLA's behaviour where the spec leaves
it to the implementation).

- triangular_solve is exact: forward or back substitution, divisions and sums of products,
  so a symbolic solve is a rational function of its inputs.
- cholesky is exact but for its square roots: the diagonal is sqrt(pivot), with sqrt the
  algebra's uninterpreted function (listed as an approximation in the verdict).

Both read only the triangle the attributes name (the spec: the other triangle of `a` is
ignored) and treat a batch of matrices matrix by matrix. What the spec leaves open, XLA's
CPU backend decides, and the rules follow it (tests/test_ops_xla_more.py checks both):
cholesky's other triangle is 0, and a matrix that is not positive definite (a pivot <= 0)
gives NaN in every element of that matrix. Complex types are not modelled."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.ir import Op, TensorType
from tv_mlir.semantics.common import OpContext, Rule, unsupported

F = Kind.FLOAT


def _matrices(a: np.ndarray) -> np.ndarray:
    """[..., m, k] as [batch, m, k]."""
    return a.reshape((-1,) + a.shape[-2:])


def _swap(a: np.ndarray) -> np.ndarray:
    """The last two axes exchanged (a batch of transposes), as a fresh array."""
    return np.ascontiguousarray(np.swapaxes(a, -1, -2))


def _float_only(ctx: OpContext, op: Op) -> None:
    for t in ctx.operand_types:
        if Kind.of(t) is not F:
            raise unsupported(op, f"{op.name} on {t.dtype} (only real floats are modelled)")


def _spread(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`a` broadcast to `shape` as a real array (the symbolic algebras map over equal shapes)."""
    return np.array(np.broadcast_to(a, shape))


# ---------------------------------------------------------------------------
# cholesky

def _cholesky_factor(alg: Algebra, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L of a batch [B, n, n] from its lower triangle (strictly upper entries 0), and its
    pivots [B, n]. Column by column (the spec's a = L L^T, solved for L):
    pivot_j = a[j, j] - sum_k<j L[j, k]^2, L[j, j] = sqrt(pivot_j),
    L[i, j] = (a[i, j] - sum_k<j L[i, k] L[j, k]) / L[j, j] for i > j. Every pivot is
    computed, also after a non-positive one (whose sqrt is NaN): the callers decide what a
    failed matrix gives."""
    b, n = a.shape[0], a.shape[-1]
    low = alg.full((b, n, n), 0, F)
    pivots = alg.full((b, n), 0, F)
    for j in range(n):
        col = np.array(a[:, j:, j])  # [B, n - j]: the pivot, then the rows below it
        if j:
            sums = alg.dot(np.array(low[:, j:, :j]), np.array(low[:, j:j + 1, :j]), F)  # [B, n - j, 1]
            col = alg.sub(col, sums.reshape(b, n - j), F)
        pivot = np.array(col[:, 0])
        pivots[:, j] = pivot
        diag = alg.uf("sqrt", [pivot])
        low[:, j, j] = diag
        if j + 1 < n:
            low[:, j + 1:, j] = alg.div(np.array(col[:, 1:]), _spread(diag[:, None], (b, n - j - 1)), F)
    return low, pivots


def _cholesky_lower(alg: Algebra, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L of a batch [B, n, n] (`_cholesky_factor`), and per matrix whether every pivot was
    positive (XLA's test: a NaN pivot fails too)."""
    low, pivots = _cholesky_factor(alg, a)
    b, n = pivots.shape
    positive = alg.full((b,), True, Kind.BOOL)
    for j in range(n):
        pos = alg.compare("GT", np.array(pivots[:, j]), alg.full((b,), 0, F), F, False)
        positive = alg.logic("and", positive, pos, TensorType((b,), "i1"))
    return low, positive


def _cholesky(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    _float_only(ctx, op)
    a = args[0]
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise unsupported(op, f"{op.name} of shape {a.shape} (not square matrices)")
    lower = bool(op.attrs.get("lower", False))
    # The upper form is the lower one of the transposes: U = L(a^T)^T reads a's upper triangle.
    mats = _matrices(a if lower else _swap(a))
    low, positive = _cholesky_lower(ctx.alg, mats)
    ok = _spread(positive[:, None, None], low.shape)
    nan = ctx.alg.full(low.shape, float("nan"), F)
    result = ctx.alg.select(ok, low, nan, F)
    return [(result if lower else _swap(result)).reshape(a.shape)]


# ---------------------------------------------------------------------------
# triangular_solve

def _substitute(alg: Algebra, t: np.ndarray, rhs: np.ndarray, lower: bool, unit: bool) -> np.ndarray:
    """x with t x = rhs, for a batch of triangular t [B, m, m] (lower or upper: only that
    triangle is read, and not the diagonal when `unit`) and rhs [B, m, n]: forward
    substitution for lower t, back substitution for upper t."""
    b, m, n = rhs.shape
    x = alg.full((b, m, n), 0, F)
    rows = range(m) if lower else range(m - 1, -1, -1)
    for i in rows:
        done = list(range(i)) if lower else list(range(i + 1, m))
        row = np.array(rhs[:, i, :])  # [B, n]
        if done:
            # sum_k t[i, k] x[k, :] over the solved rows: [B, n, K] . [B, 1, K] -> [B, n, 1]
            solved = _swap(np.array(x[:, done, :]))
            coeffs = np.array(t[:, i:i + 1, done])
            row = alg.sub(row, alg.dot(solved, coeffs, F).reshape(b, n), F)
        x[:, i, :] = row if unit else alg.div(row, _spread(np.array(t[:, i, i])[:, None], (b, n)), F)
    return x


def _triangular_solve(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    _float_only(ctx, op)
    a, rhs = args
    m = a.shape[-1]
    left = bool(op.attrs.get("left_side", False))
    lower = bool(op.attrs.get("lower", False))
    unit = bool(op.attrs.get("unit_diagonal", False))
    transpose = str(op.attrs.get("transpose_a", "NO_TRANSPOSE"))
    if transpose not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise unsupported(op, f"{op.name} with transpose_a = {transpose}")
    if a.ndim < 2 or a.shape[-2] != m or rhs.shape[-2 if left else -1] != m:
        raise unsupported(op, f"{op.name} of shapes {a.shape} and {rhs.shape}")
    t = _matrices(a)
    if transpose != "NO_TRANSPOSE":  # ADJOINT is TRANSPOSE on reals
        t, lower = _swap(t), not lower
    # x op(a) = b is op(a)^T x^T = b^T: the right-side solve is a left-side one.
    if left:
        return [_substitute(ctx.alg, t, _matrices(rhs), lower, unit).reshape(rhs.shape)]
    x = _substitute(ctx.alg, _swap(t), _swap(_matrices(rhs)), not lower, unit)
    return [_swap(x).reshape(rhs.shape)]


# ---------------------------------------------------------------------------
# jax's CPU LAPACK custom calls: `custom_call @lapack_<p><routine>_ffi`, p = s (f32) or d (f64).
# jax lowers jnp.linalg.cholesky and solve_triangular on CPU to these instead of the
# stablehlo ops. Their attributes are in `mhlo.backend_config` as LAPACK's character
# arguments (ui8: 'L' = 76, 'U' = 85, ...). LAPACK reads column-major matrices, and jax
# says so in operand_layouts (the matrix dims minor-most, the column index fastest); with
# those layouts LAPACK's A(i, j) is the tensor's a[..., i, j]. Any other layout would make
# LAPACK read the transpose, so only jax's layouts are accepted.

LAPACK_FLOATS = {"s": "f32", "d": "f64"}  # c and z are complex, which is not modelled
# Functions of a failed factorisation's left-over matrix (`_failed`); the numeric value is
# NaN (not LAPACK's), so a counterexample through them is confirmed by XLA replay or unknown.
ARGS_UF, FAILED_UF = "lapack_args", "lapack_failed"


def _lapack_char(op: Op, name: str, allowed: str) -> str:
    config = op.attrs.get("mhlo.backend_config")
    value = config.get(name) if isinstance(config, dict) else None
    char = chr(value) if isinstance(value, int) and 0 <= value < 128 else None
    if char is None or char not in allowed:
        raise unsupported(op, f"custom_call @{op.attrs.get('call_target_name')} with {name} = {value!r} "
                              f"(LAPACK's {'/'.join(allowed)} expected in mhlo.backend_config)")
    return char


def _lapack_layouts(ctx: OpContext, op: Op, matrices: tuple[int, ...]) -> None:
    """The operands and results are laid out as jax lays them out: matrices (the operands and
    results numbered in `matrices`) column-major with the batch dims major-most in order,
    every other result row-major. `num_batch_dims`, when present, is the rank less 2."""
    target = op.attrs.get("call_target_name")

    def matrix(rank: int) -> tuple[int, ...]:
        return (rank - 2, rank - 1, *range(rank - 3, -1, -1))

    def check(layouts: object, types: tuple[TensorType, ...], which: str) -> None:
        if not isinstance(layouts, tuple) or len(layouts) != len(types):
            raise unsupported(op, f"custom_call @{target} without {which} (LAPACK's column-major order is "
                                  "not known to hold)")
        for i, (lay, t) in enumerate(zip(layouts, types)):
            rank = len(t.shape)
            want = matrix(rank) if (i in matrices and rank >= 2) else tuple(range(rank - 1, -1, -1))
            if tuple(int(x) for x in np.asarray(lay).reshape(-1)) != want:
                raise unsupported(op, f"custom_call @{target} with {which}[{i}] = {np.asarray(lay).tolist()} "
                                      f"(jax's {list(want)} expected)")

    check(op.attrs.get("operand_layouts"), ctx.operand_types, "operand_layouts")
    check(op.attrs.get("result_layouts"), op.result_types, "result_layouts")
    batch = (op.attrs.get("mhlo.frontend_attributes") or {}).get("num_batch_dims")
    rank = len(ctx.operand_types[0].shape)
    if batch is not None and str(batch) != str(rank - 2):
        raise unsupported(op, f"custom_call @{target} with num_batch_dims = {batch} on rank {rank}")


def _lapack_types(ctx: OpContext, op: Op, prefix: str) -> None:
    want = LAPACK_FLOATS[prefix]
    for t in (*ctx.operand_types, *op.result_types):
        if t.is_float and t.dtype != want:
            raise unsupported(op, f"custom_call @{op.attrs.get('call_target_name')} on {t.dtype} ({want} expected)")
    _float_only(ctx, op)


def _failed(alg: Algebra, tri: list[tuple[int, int]], mats: np.ndarray) -> np.ndarray:
    """What a failed factorisation leaves in the read triangle: LAPACK's partial work, which
    depends on the implementation (the unblocked and the blocked algorithm stop at different
    points). Modelled as an unknown function of the whole read triangle, one per position:
    lapack_failed(position, lapack_args(...lapack_args(a_0, a_1)..., a_last)). Nested binary
    uninterpreted functions are as general as one function of all the elements (a proof holds
    for every interpretation, an injective pairing included), and a proof that needs their
    values fails instead of guessing. [B, len(tri)]."""
    b = mats.shape[0]
    if not tri:  # 0x0 matrices: nothing is left
        return alg.full((b, 0), 0, F)
    elems = [np.array(mats[:, i, j]) for i, j in tri]
    chain = elems[0]
    for e in elems[1:]:
        chain = alg.uf(ARGS_UF, [chain, e])
    out = [alg.uf(FAILED_UF, [alg.full((b,), float(k), F), chain]) for k in range(len(tri))]
    return np.stack(out, axis=1)


def _pivot_fails(alg: Algebra, pivot: np.ndarray) -> np.ndarray:
    """LAPACK's test of a pivot (OpenBLAS's potrf, which jax calls on CPU): `pivot <= 0`, so
    a NaN pivot does not fail (reference LAPACK's potrf2 would also fail on NaN; XLA here
    does not)."""
    return alg.compare("LE", pivot, alg.full(pivot.shape, 0, F), F, False)


def _potrf(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    """?potrf: (a) -> (factor, info). `uplo` names the triangle read and written; the other
    triangle is returned as it came (LAPACK does not reference it). info (per matrix) is the
    1-based index of the first pivot <= 0, or 0; on success the read triangle holds the
    factor, on failure LAPACK's left-overs (`_failed`). A NaN pivot is not a failure (the
    LAPACK jax calls on CPU tests `ajj <= 0` only): the NaN runs on through the factor."""
    alg = ctx.alg
    target = str(op.attrs.get("call_target_name"))
    _lapack_types(ctx, op, target[len("lapack_")])
    _lapack_layouts(ctx, op, matrices=(0,))
    a = args[0]
    if len(args) != 1 or len(op.result_types) != 2 or a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise unsupported(op, f"custom_call @{target} of {len(args)} operands and shape {a.shape}")
    lower = _lapack_char(op, "uplo", "LU") == "L"
    mats = _matrices(a if lower else _swap(a))
    b, n = mats.shape[0], mats.shape[-1]
    tri = [(i, j) for i in range(n) for j in range(i + 1)]
    rows, cols = (np.array([p[k] for p in tri], dtype=np.int64) for k in (0, 1))
    low, pivots = _cholesky_factor(alg, mats)  # reads the lower triangle only
    info = alg.full((b,), 0, Kind.INT)
    for j in range(n - 1, -1, -1):  # the first failure wins: the innermost select
        fails = _pivot_fails(alg, np.array(pivots[:, j]))
        info = alg.select(fails, alg.full((b,), j + 1, Kind.INT), info, Kind.INT)
    ok = alg.compare("EQ", info, alg.full((b,), 0, Kind.INT), Kind.INT, False)
    written = alg.select(_spread(ok[:, None], (b, len(tri))), np.array(low[:, rows, cols]), _failed(alg, tri, mats), F)
    out = np.array(mats)
    out[:, rows, cols] = written
    factor = (out if lower else _swap(out)).reshape(a.shape)
    return [factor, info.reshape(a.shape[:-2])]


_TRANS = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}


def _trsm(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    """?trsm: (a, b) -> x with op(a) x = b (side L) or x op(a) = b (side R); `uplo` is the
    triangle of a read, `diag` U a unit diagonal (not read), `trans_x` N/T/C op(a). This is
    triangular_solve with LAPACK's arguments spelt as characters (alpha is 1: jax passes
    none)."""
    target = str(op.attrs.get("call_target_name"))
    _lapack_types(ctx, op, target[len("lapack_")])
    _lapack_layouts(ctx, op, matrices=(0, 1))
    if len(args) != 2 or len(op.result_types) != 1:
        raise unsupported(op, f"custom_call @{target} with {len(args)} operands and {len(op.result_types)} results")
    attrs = {"left_side": _lapack_char(op, "side", "LR") == "L", "lower": _lapack_char(op, "uplo", "LU") == "L",
             "unit_diagonal": _lapack_char(op, "diag", "NU") == "U",
             "transpose_a": _TRANS[_lapack_char(op, "trans_x", "NTC")]}
    return _triangular_solve(ctx, replace(op, attrs={**op.attrs, **attrs}), args)


LAPACK_ROUTINES: dict[str, Rule] = {"potrf": _potrf, "trsm": _trsm}


def lapack_rule(target: str) -> Rule | None:
    """The rule of a LAPACK custom_call target (`lapack_spotrf_ffi`, ...), or None: another
    routine (getrf, geqrf, syevd, gesdd, ...) or a complex type."""
    if not (target.startswith("lapack_") and target.endswith("_ffi")):
        return None
    name = target[len("lapack_"):-len("_ffi")]
    if name[:1] not in LAPACK_FLOATS:
        return None
    return LAPACK_ROUTINES.get(name[1:])


RULES: dict[str, Rule] = {
    "stablehlo.cholesky": _cholesky,
    "stablehlo.triangular_solve": _triangular_solve,
}
