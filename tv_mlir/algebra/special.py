"""Numeric values of the uninterpreted functions that only chlo and bit-level rules reach:
the special functions (chlo.erfc, erf_inv, lgamma, digamma, polygamma, zeta), next_after,
and a float's bits (bitcast_convert). The symbolic algebras leave them uninterpreted; these
are their values for the numeric interpreter (replay, fingerprints) and for the tests'
evaluator, written to agree with what XLA computes, including at the poles where XLA's
answer (NaN or inf) is a convention that scipy does not share. Float inputs are float64
arrays holding values of the op's type."""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from tv_mlir.algebra.prng import FUNCS as PRNG_FUNCS
from tv_mlir.dtypes import Lazy, ml_dtype

# The float types whose bits and neighbours have functions, with the unsigned integer type
# of the same width.
FLOAT_BITS: Lazy[tuple[type, type]] = Lazy({
    "f16": lambda: (np.float16, np.uint16), "bf16": lambda: (ml_dtype("bfloat16"), np.uint16),
    "f32": lambda: (np.float32, np.uint32), "f64": lambda: (np.float64, np.uint64),
})


def _sc() -> ModuleType:
    """scipy.special, imported when a special function is first evaluated: importing it
    costs ~0.3 s CPU (numpy.testing, f2py, array-API shims), a fifth of the tool's start,
    and only chlo's special functions need it (tests/test_import_cost.py)."""
    import scipy.special  # type: ignore[import-untyped]  # scipy ships no stubs; jax depends on it

    return scipy.special


def erfc(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = _sc().erfc(x)  # scipy's own result, as before it was imported lazily
    return result


def erf_inv(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = _sc().erfinv(x)
    return result


def _nonpositive_integer(x: np.ndarray) -> np.ndarray:
    return (x <= 0) & (np.floor(x) == x)


def lgamma(x: np.ndarray) -> np.ndarray:
    # log|gamma(x)|; XLA: +inf at -inf, where scipy says -inf.
    return np.where(np.isneginf(x), np.inf, _sc().gammaln(x))


def digamma(x: np.ndarray) -> np.ndarray:
    # XLA: NaN at the poles (0, -1, -2, ...); scipy says -inf at 0.
    return np.where(_nonpositive_integer(x), np.nan, _sc().psi(x))


def zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta(s, q) as XLA's chlo.zeta: at a pole q = 0, -1, ... the value is inf for
    s = 1 or an even s, NaN otherwise; q = +inf gives NaN."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    r = _sc().zeta(s, q)
    even = (np.floor(s / 2) * 2 == s)
    r = np.where(_nonpositive_integer(q), np.where((s == 1) | even, np.inf, np.nan), r)
    return np.where(np.isposinf(q), np.nan, r)


def polygamma(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """chlo.polygamma(n, x) as XLA computes it: digamma for n = 0, (-1)^(n+1) n! zeta(n+1, x)
    for a positive integer n, NaN for any other n."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    integral = np.isfinite(n) & (np.floor(n) == n) & (n >= 0)
    safe_n = np.where(integral, n, 1.0)
    higher = (-1.0) ** (safe_n + 1) * _sc().gamma(safe_n + 1) * zeta(safe_n + 1, x)
    return np.where(~integral, np.nan, np.where(n == 0, digamma(x), higher))


def bits_of(dtype: str) -> Callable[[np.ndarray], np.ndarray]:
    """The unsigned integer with a float's bits (as a float64 holding that integer, the
    value of a real-valued function; exact up to 2**53, so below f64)."""
    def fn(x: np.ndarray) -> np.ndarray:
        ftype, utype = FLOAT_BITS[dtype]  # when called: bf16's type costs an import
        return np.asarray(x, np.float64).astype(ftype).view(utype).astype(np.float64)
    return fn


def float_of_bits(dtype: str) -> Callable[[np.ndarray], np.ndarray]:
    """The float whose bits are the unsigned integer u (given as a real)."""
    def fn(u: np.ndarray) -> np.ndarray:
        ftype, utype = FLOAT_BITS[dtype]
        return np.asarray(u, np.float64).astype(utype).view(ftype).astype(np.float64)
    return fn


def next_after(dtype: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The float of type `dtype` next to x in the direction of y (y when x == y, NaN when
    either is NaN), stepping the bit pattern: +-0 steps to the smallest subnormal."""
    def fn(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        ftype, utype = FLOAT_BITS[dtype]
        sign = utype(1) << utype(8 * np.dtype(utype).itemsize - 1)
        x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        xf: np.ndarray = x.astype(ftype)
        bits: np.ndarray = xf.view(utype).copy()
        magnitude = bits & ~sign
        # Away from zero when y is farther out on x's side; toward zero otherwise.
        away = (x < y) == (x > 0)
        stepped = np.where(away, bits + utype(1), bits - utype(1))
        smallest = np.where(y > 0, utype(1), sign | utype(1)).astype(utype)
        out = np.where(magnitude == 0, smallest, stepped).astype(utype).view(ftype).astype(np.float64)
        out = np.where(x == y, y, out)
        return np.where(np.isnan(x) | np.isnan(y), np.nan, out)
    return fn


def unknown_value(*args: np.ndarray) -> np.ndarray:
    """NaN of the arguments' broadcast shape: a value this module does not know."""
    return np.full(np.broadcast(*args).shape, np.nan)


# name -> numeric function; the names and arities are `base.UNINTERPRETED`'s.
FUNCS: dict[str, Callable[..., np.ndarray]] = {
    "erfc": erfc, "erf_inv": erf_inv, "lgamma": lgamma, "digamma": digamma,
    "polygamma": polygamma, "zeta": zeta,
    **{f"next_after_{d}": next_after(d) for d in FLOAT_BITS},
    **{f"bits_of_{d}": bits_of(d) for d in FLOAT_BITS},
    **{f"float_of_bits_{d}": float_of_bits(d) for d in FLOAT_BITS},
    # LAPACK's left-overs of a failed factorisation depend on its implementation: no value
    # here claims to be them (a witness through them needs XLA's replay).
    "lapack_args": unknown_value, "lapack_failed": unknown_value,
    **PRNG_FUNCS,
}
