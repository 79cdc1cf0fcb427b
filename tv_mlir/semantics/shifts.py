"""Bit shifts on fixed-width integers, built from the algebra's integer arithmetic so that
every algebra has them (the interpreter then reduces the results into their type, see
`fixed_width`). As XLA computes them, the shift amount is read as unsigned: an amount of
the width or more (or a negative one) shifts everything out: 0 for shift_left and
shift_right_logical, the sign for shift_right_arithmetic."""
from __future__ import annotations

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.ir import Op, TensorType
from tv_mlir.semantics.common import OpContext, Rule, unsupported
from tv_mlir.semantics.fixed_width import int_width

I = Kind.INT
_MAX_CONST_SHIFT = 62  # 2**62 is the largest power of two the numeric algebra's int64 holds


def _full(alg: Algebra, x: np.ndarray, v: int) -> np.ndarray:
    return alg.full(x.shape, v, I)


def _times_power(alg: Algebra, x: np.ndarray, k: int) -> np.ndarray:
    """x * 2**k, in steps an int64 can hold (the product wraps, as XLA's does)."""
    while k > 0:
        step = min(k, _MAX_CONST_SHIFT)
        x = alg.mul(x, _full(alg, x, 1 << step), I)
        k -= step
    return x


def _floor_div_power(alg: Algebra, x: np.ndarray, k: int) -> np.ndarray:
    """floor(x / 2**k) for 0 <= k <= 62, from the truncating division."""
    d = _full(alg, x, 1 << k)
    q = alg.div(x, d, I)
    zero = _full(alg, x, 0)
    inexact_negative = alg.logic("and", alg.compare("LT", x, zero, I, False),
                                 alg.compare("NE", alg.rem(x, d, I), zero, I, False), TensorType((), "i1"))
    return alg.select(inexact_negative, alg.sub(q, _full(alg, x, 1), I), q, I)


def _as_signed(alg: Algebra, x: np.ndarray, w: int, t: TensorType) -> np.ndarray:
    """An unsigned type's values read as two's complement of the same width."""
    if not t.is_unsigned:
        return x
    big = alg.compare("GT", x, _full(alg, x, (1 << (w - 1)) - 1), I, False)
    return alg.select(big, alg.sub(x, _full(alg, x, 1 << w), I), x, I)


def _shift_by(alg: Algebra, name: str, x: np.ndarray, k: int, w: int, t: TensorType) -> np.ndarray:
    """x shifted by a known amount k, 0 <= k <= w (w: shifted out entirely)."""
    if name == "shift_left":
        return _full(alg, x, 0) if k >= w else _times_power(alg, x, k)
    if name == "shift_right_arithmetic":
        s = _as_signed(alg, x, w, t)
        if k >= w - 1:  # only the sign is left
            return alg.select(alg.compare("LT", s, _full(alg, x, 0), I, False), _full(alg, x, -1), _full(alg, x, 0), I)
        return _floor_div_power(alg, s, k)
    # shift_right_logical
    if k >= w:
        return _full(alg, x, 0)
    if k == 0:
        return x
    if t.is_unsigned:
        return _floor_div_power(alg, x, k) if k <= _MAX_CONST_SHIFT else _full(alg, x, 0)
    # Signed: the arithmetic shift with the copies of the sign bit masked off.
    return alg.logic("and", _shift_by(alg, "shift_right_arithmetic", x, k, w, t), _full(alg, x, (1 << (w - k)) - 1), t)


def _rule(name: str) -> Rule:
    def rule(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
        from tv_mlir.semantics.elementwise import _same_shape  # elementwise adds these rules to its own

        x, n = _same_shape(args)
        t = ctx.operand_types[0]
        w = int_width(t)
        if w is None:
            raise unsupported(op, f"{op.name} on {t.dtype}")
        alg = ctx.alg
        cache: dict[int, np.ndarray] = {}

        def by(k: int) -> np.ndarray:
            if k not in cache:
                cache[k] = _shift_by(alg, name, x, k, w, t)
            return cache[k]

        amounts = [alg.index_value(e) for e in n.reshape(-1)]
        if all(a is not None for a in amounts):
            keys = np.array([a if a is not None and 0 <= a < w else w for a in amounts]).reshape(n.shape)
            out = by(int(keys.reshape(-1)[0])) if keys.size else x
            for k in sorted(set(keys.reshape(-1).tolist())):
                out = np.where(keys == k, by(int(k)), out)
            return [out]
        # A symbolic amount: the w + 1 outcomes, chosen by comparing it with 0 .. w - 1
        # (as unsigned, a negative amount is past the width).
        out = by(w)
        for k in range(w - 1, -1, -1):
            out = alg.select(alg.compare("EQ", n, _full(alg, n, k), I, False), by(k), out, I)
        return [out]
    return rule


RULES: dict[str, Rule] = {f"stablehlo.{name}": _rule(name)
                          for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic")}
