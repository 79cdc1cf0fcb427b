"""IEEE float64 / int64 / bool evaluation: the numeric interpreter used for replaying
counterexamples and cross-checking the symbolic rules against XLA."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.algebra.base import Kind
from tv_mlir.algebra.special import FUNCS as SPECIAL_FUNCS
from tv_mlir.ir import TensorType

_NP = {Kind.FLOAT: np.float64, Kind.INT: np.int64, Kind.BOOL: np.bool_}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _logistic(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # overflow-free form of 1/(1+exp(-x))


FUNCS: dict[str, Callable[..., np.ndarray]] = {
    "exponential": np.exp, "log": np.log, "log_plus_one": np.log1p, "exponential_minus_one": np.expm1,
    "tanh": np.tanh, "logistic": _logistic, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt, "sine": np.sin, "cosine": np.cos, "tan": np.tan, "erf": _erf,
    "atan2": np.arctan2, "power": np.power,
    **SPECIAL_FUNCS,
}


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # XLA: integer division truncates toward zero and x / 0 == -1. From floor division, not
    # from |a| // |b|: |INT64_MIN| is not an int64. INT_MIN // -1 wraps to INT_MIN, as in XLA.
    a = np.asarray(a, dtype=np.int64)
    safe = np.where(b == 0, 1, b).astype(np.int64)
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, safe)
        q = q + ((a - q * safe != 0) & ((a < 0) != (safe < 0)))
    return np.where(b == 0, -1, q)


@dataclass
class NumericAlgebra:
    symbolic: bool = False
    # The functions the symbolic algebras leave uninterpreted, by name: their true values
    # by default; fingerprints also run once with other functions (`fingerprints`).
    funcs: Mapping[str, Callable[..., np.ndarray]] = field(default_factory=lambda: FUNCS)

    def constant(self, values: np.ndarray, kind: Kind) -> np.ndarray:
        return np.asarray(values).astype(_NP[kind])

    def full(self, shape: Sequence[int], value: Any, kind: Kind) -> np.ndarray:
        return np.full(tuple(shape), value, dtype=_NP[kind])

    def add(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return (a | b) if kind is Kind.BOOL else a + b

    def sub(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return a - b

    def mul(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return (a & b) if kind is Kind.BOOL else a * b

    def div(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            with np.errstate(all="ignore"):
                return a / b
        return _trunc_div(a, b)

    def rem(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            with np.errstate(all="ignore"):
                return np.fmod(a, b)
        return np.where(b == 0, a, a - b * _trunc_div(a, b))

    def neg(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        return -a

    def abs(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        return np.abs(a)

    def sign(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        return np.sign(a)

    def max(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return np.maximum(a, b)

    def min(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return np.minimum(a, b)

    def floor(self, a: np.ndarray) -> np.ndarray:
        return np.floor(a)

    def ceil(self, a: np.ndarray) -> np.ndarray:
        return np.ceil(a)

    def round_even(self, a: np.ndarray) -> np.ndarray:
        return np.round(a)

    def round_afz(self, a: np.ndarray) -> np.ndarray:
        return np.sign(a) * np.floor(np.abs(a) + 0.5)

    def is_finite(self, a: np.ndarray) -> np.ndarray:
        return np.isfinite(a)

    def compare(self, direction: str, a: np.ndarray, b: np.ndarray, kind: Kind, total_order: bool) -> np.ndarray:
        if kind is Kind.FLOAT and total_order:
            # XLA's total order reads the sign bit: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
            # numpy's NaNs carry the platform's sign (x86: 0/0 is -NaN), as XLA's do.
            an, bn = np.isnan(a), np.isnan(b)
            ra = np.where(an, np.where(np.signbit(a), -1, 1), 0)
            rb = np.where(bn, np.where(np.signbit(b), -1, 1), 0)
            with np.errstate(invalid="ignore"):
                zero_lt = (a == 0) & (b == 0) & np.signbit(a) & ~np.signbit(b)
                zero_eq = ~((a == 0) & (b == 0)) | (np.signbit(a) == np.signbit(b))
                lt = np.where(ra != rb, ra < rb, ~an & ((a < b) | zero_lt))
                eq = (ra == rb) & (an | ((a == b) & zero_eq))
            return {"EQ": eq, "NE": ~eq, "LT": lt, "LE": lt | eq, "GT": ~(lt | eq), "GE": ~lt}[direction]
        with np.errstate(invalid="ignore"):
            return {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
                    "GT": np.greater, "GE": np.greater_equal}[direction](a, b)

    def select(self, pred: np.ndarray, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return np.where(pred, a, b)

    def logic(self, op: str, a: np.ndarray, b: np.ndarray | None, t: TensorType) -> np.ndarray:
        if op == "not":
            if t.is_bool:
                return ~a
            out = ~a.astype(np.int64)
            # Unsigned values are non-negative: keep the type's bits (~0 : ui8 is 255, not -1).
            return out & ((1 << t.bit_width) - 1) if t.is_unsigned and t.bit_width < 64 else out
        assert b is not None, f"{op} takes two operands"
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return fn(a, b)

    def convert(self, a: np.ndarray, src: TensorType, dst: TensorType) -> np.ndarray:
        if dst.is_bool:
            return a != 0
        if dst.is_float:
            return a.astype(np.float64)
        if src.is_float:
            # XLA: truncate toward zero, saturate, NaN -> 0.
            info = np.iinfo(f"{'u' if dst.is_unsigned else ''}int{dst.bit_width}")
            with np.errstate(invalid="ignore"):
                out = np.trunc(np.nan_to_num(a, nan=0.0, posinf=info.max, neginf=info.min))
            return np.clip(out, info.min, info.max).astype(np.int64)
        return a.astype(np.int64)

    def wrap(self, a: np.ndarray, t: TensorType) -> np.ndarray:
        """Integers reduced into the range of their type, as XLA's fixed-width arithmetic
        leaves them. int64 arithmetic is exact modulo 2**64, which every narrower width
        divides, so one reduction after each op gives XLA's value."""
        w = t.bit_width
        if w >= 64:
            return np.asarray(a, dtype=np.int64)
        lo = 0 if t.is_unsigned else -(1 << (w - 1))
        return ((np.asarray(a, dtype=np.int64) - lo) & ((1 << w) - 1)) + lo

    def uf(self, name: str, args: Sequence[np.ndarray]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self.funcs[name](*args)

    def dot(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.BOOL:
            return np.einsum("bmk,bnk->bmn", a.astype(np.int64), b.astype(np.int64)) != 0
        return np.einsum("bmk,bnk->bmn", a, b)

    def reduce_sum(self, a: np.ndarray, axes: tuple[int, ...], kind: Kind) -> np.ndarray:
        if kind is Kind.BOOL:
            return np.any(a, axis=axes)
        return np.sum(a, axis=axes)

    def index_value(self, x: Any) -> int | None:
        return int(x)

    def positions(self, s: Any, hi: int, clamp: bool) -> list[tuple[int, Any]]:
        v = int(s)
        if clamp:
            return [(min(max(v, 0), hi), True)]
        return [(v, True)] if 0 <= v <= hi else []

    def choose(self, options: Sequence[tuple[Any, Any]], kind: Kind) -> Any:
        for cond, val in options:
            if cond:
                return val
        raise ValueError("no option holds")

    def all_of(self, conds: Sequence[Any]) -> Any:
        return all(bool(c) for c in conds)

    def constant_value(self, x: Any, kind: Kind) -> float | int | bool | None:
        return x.item() if hasattr(x, "item") else x

    def scalar(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def canonical(self, arr: np.ndarray) -> np.ndarray:
        return arr

    def content_key(self, arr: Any) -> None:
        return None  # numeric runs are cheap: nothing to share

    def element_keys(self, arr: Any) -> None:
        return None
