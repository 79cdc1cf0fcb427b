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

def _cholesky_lower(alg: Algebra, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L of a batch [B, n, n] from its lower triangle (strictly upper entries 0), and per
    matrix whether every pivot was positive. Column by column (the spec's
    a = L L^T, solved for L): pivot_j = a[j, j] - sum_k<j L[j, k]^2, L[j, j] = sqrt(pivot_j),
    L[i, j] = (a[i, j] - sum_k<j L[i, k] L[j, k]) / L[j, j] for i > j."""
    b, n = a.shape[0], a.shape[-1]
    low = alg.full((b, n, n), 0, F)
    positive = alg.full((b,), True, Kind.BOOL)
    for j in range(n):
        col = np.array(a[:, j:, j])  # [B, n - j]: the pivot, then the rows below it
        if j:
            sums = alg.dot(np.array(low[:, j:, :j]), np.array(low[:, j:j + 1, :j]), F)  # [B, n - j, 1]
            col = alg.sub(col, sums.reshape(b, n - j), F)
        pivot = col[:, 0]
        pos = alg.compare("GT", pivot, alg.full((b,), 0, F), F, False)
        positive = alg.logic("and", positive, pos, TensorType((b,), "i1"))
        diag = alg.uf("sqrt", [np.array(pivot)])
        low[:, j, j] = diag
        if j + 1 < n:
            low[:, j + 1:, j] = alg.div(np.array(col[:, 1:]), _spread(diag[:, None], (b, n - j - 1)), F)
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


RULES: dict[str, Rule] = {
    "stablehlo.cholesky": _cholesky,
    "stablehlo.triangular_solve": _triangular_solve,
}
