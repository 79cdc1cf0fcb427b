"""Bit-level integer ops: popcnt, count_leading_zeros and bitcast_convert.

Integers are exact: a bit or a byte of x is floor(x / 2**k) mod 2**n, which for a negative
x is its two's complement bit pattern too, so no unsigned view of a 64-bit value is needed.
A float's bits are not a polynomial of its value: `bits_of_<type>` (a float to the unsigned
integer with its bits) and `float_of_bits_<type>` are uninterpreted functions in the
symbolic algebras, so a bitcast from or to a float is an approximation (equal values give
equal bits; signed zeros are not modelled, as everywhere). The numeric algebra reinterprets
the bits exactly with numpy views, for every width."""
from __future__ import annotations

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.algebra.special import FLOAT_BITS
from tv_mlir.ir import Op, TensorType
from tv_mlir.semantics.common import OpContext, Rule, unsupported
from tv_mlir.semantics.fixed_width import int_width
from tv_mlir.semantics.shifts import _floor_div_power

I = Kind.INT


def _full(alg: Algebra, x: np.ndarray, v: int) -> np.ndarray:
    return alg.full(x.shape, v, I)


def _indicator(alg: Algebra, cond: np.ndarray, x: np.ndarray) -> np.ndarray:
    return alg.select(cond, _full(alg, x, 1), _full(alg, x, 0), I)


def _low_bits(alg: Algebra, x: np.ndarray, k: int, n: int) -> np.ndarray:
    """Bits k .. k + n - 1 of x's two's complement pattern, as an integer in [0, 2**n)."""
    q = _floor_div_power(alg, x, k) if k else x
    m = _full(alg, x, 1 << n)
    r = alg.rem(q, m, I)  # truncating: negative for a negative q
    return alg.select(alg.compare("LT", r, _full(alg, x, 0), I, False), alg.add(r, m, I), r, I)


def _width(op: Op, t: TensorType) -> int:
    w = int_width(t)
    if w is None:
        raise unsupported(op, f"{op.name} on {t.dtype}")
    return w


def _popcnt(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, t, alg = args[0], ctx.operand_types[0], ctx.alg
    w = _width(op, t)
    if w == 64 and t.is_unsigned:
        raise unsupported(op, f"{op.name} on ui64")
    # A negative x has the bits of 2**w + x: w - popcnt(-x - 1) ones (its complement's zeros).
    # For v >= 0: popcnt(v) = v - sum_{j >= 1} floor(v / 2**j) (each bit j contributes
    # 2**j - (2**(j-1) + ... + 1) = 1), with the truncating division exact at v >= 0.
    signed = not t.is_unsigned
    negative = alg.compare("LT", x, _full(alg, x, 0), I, False) if signed else None
    v = alg.select(negative, alg.sub(_full(alg, x, -1), x, I), x, I) if negative is not None else x
    ones = v
    for j in range(1, w - 1 if signed else w):
        ones = alg.sub(ones, alg.div(v, _full(alg, x, 1 << j), I), I)
    if negative is None:
        return [ones]
    return [alg.select(negative, alg.sub(_full(alg, x, w), ones, I), ones, I)]


def _count_leading_zeros(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, t, alg = args[0], ctx.operand_types[0], ctx.alg
    w = _width(op, t)
    if w == 64 and t.is_unsigned:
        raise unsupported(op, f"{op.name} on ui64")
    # For 0 <= x < 2**w: clz(x) = #{j in 0..w-1 : x < 2**j}. A signed x < 0 has its top bit
    # set (0 leading zeros); a signed x >= 0 is below 2**(w-1), the last term, always.
    top = w - 1 if not t.is_unsigned else w
    count = _full(alg, x, w - top)
    for j in range(top):
        count = alg.add(count, _indicator(alg, alg.compare("LT", x, _full(alg, x, 1 << j), I, False), x), I)
    if t.is_unsigned:
        return [count]
    return [alg.select(alg.compare("LT", x, _full(alg, x, 0), I, False), _full(alg, x, 0), count, I)]


# ---------------------------------------------------------------------------
# bitcast_convert


def _np_dtype(t: TensorType) -> np.dtype:
    if t.is_float:
        if t.dtype not in FLOAT_BITS:
            raise ValueError(t.dtype)
        return np.dtype(FLOAT_BITS[t.dtype][0])
    return np.dtype(f"{'u' if t.is_unsigned else ''}int{t.bit_width}")


def _bitcast_numeric(x: np.ndarray, src: TensorType, dst: TensorType) -> np.ndarray:
    """Exact: the values in their own type, the same bytes read as the other type (XLA's CPU
    is little-endian, as numpy's views here)."""
    s, d = _np_dtype(src), _np_dtype(dst)
    vals = np.asarray(x).astype(s) if src.is_float else np.asarray(x, np.int64).astype(s)
    out = np.ascontiguousarray(vals).view(d).reshape(dst.shape)
    return out.astype(np.float64) if dst.is_float else out.astype(np.int64)


def _uint(w: int) -> TensorType:
    return TensorType((), f"ui{w}")


def _bits_of(alg: Algebra, x: np.ndarray, t: TensorType) -> tuple[np.ndarray, TensorType]:
    """x as an integer with its bit pattern, and that integer's type: a float's bits through
    the uninterpreted `bits_of` (a real holding an unsigned integer), made an integer by an
    exact conversion."""
    if not t.is_float:
        return x, t
    real_bits = alg.uf(f"bits_of_{t.dtype}", [x])
    u = _uint(t.bit_width)
    return alg.convert(real_bits, TensorType(t.shape, t.dtype), TensorType(t.shape, u.dtype)), u


def _from_bits(alg: Algebra, u: np.ndarray, w: int, dst: TensorType) -> np.ndarray:
    """The element of type dst whose bits are the integer u (any representative mod 2**w)."""
    if not dst.is_float:
        return alg.wrap(u, dst)
    unsigned = alg.wrap(u, TensorType(dst.shape, f"ui{w}"))
    as_real = alg.convert(unsigned, TensorType(dst.shape, f"ui{w}"), TensorType(dst.shape, dst.dtype))
    return alg.uf(f"float_of_bits_{dst.dtype}", [as_real])


def _bitcast_convert(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, src, dst = args[0], ctx.operand_types[0], op.result_types[0]
    for t in (src, dst):
        if t.is_bool or (t.is_float and t.dtype not in FLOAT_BITS):
            raise unsupported(op, f"{op.name} from {src.dtype} to {dst.dtype}")
    if not ctx.alg.symbolic:
        return [_bitcast_numeric(x, src, dst)]
    alg = ctx.alg
    ws, wd = src.bit_width, dst.bit_width
    if src.is_float and dst.is_float and src.dtype == dst.dtype:
        return [x]
    bits, _ = _bits_of(alg, x, src)
    if ws == wd:
        return [_from_bits(alg, bits, wd, dst)]
    if ws > wd:
        # Narrowing: a new last dimension of ws / wd pieces, the lowest bits first.
        pieces = [_from_bits(alg, _low_bits(alg, bits, k * wd, wd), wd, dst) for k in range(ws // wd)]
        return [np.stack(pieces, axis=-1)]
    # Widening: the last dimension's ws-bit pieces, lowest first, make one wd-bit element.
    total = None
    for k in range(wd // ws):
        piece = _low_bits(alg, bits[..., k], 0, ws)
        term = piece if k == 0 else alg.mul(piece, alg.full(piece.shape, 1 << (k * ws), I), I)
        total = term if total is None else alg.add(total, term, I)
    assert total is not None
    return [_from_bits(alg, total, wd, dst)]


# Elementwise (same shapes): `elementwise` adds these to its own table.
ELEMENTWISE_RULES: dict[str, Rule] = {
    "stablehlo.popcnt": _popcnt,
    "stablehlo.count_leading_zeros": _count_leading_zeros,
}
# A bitcast between widths adds or removes a last dimension.
RULES: dict[str, Rule] = {
    "stablehlo.bitcast_convert": _bitcast_convert,
}
