"""Which ui64 values of a function stay below 2**63, by interval arithmetic over its integer ops.

The numeric algebra holds a ui64 as its int64 bits and the symbolic ones as its unsigned
value. The two agree on every value below 2**63, and there every op reads the same number
either way: ordering, shifting right, converting. jax's `random_bits` counts its Threefry
counters in ui64 (`iota_2x32_shape`: iota, times the row length, plus the device's offset
in the partitioned module, the high word by a shift of 32, both words converted to ui32),
and those counts are bounded by the array's element count. So a ui64 op outside the
generator-state set of `read.UI64_OPS` is read when every ui64 it takes or makes is shown
to lie in [0, 2**63) here; anything not shown is refused as before.

An interval is kept only where it is proved: constants, iota, unsigned types narrower than
64 bits (their type's range), signed types (their type's range), and ops that move,
select, add, multiply, shift or convert such values. Nothing else has one."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tv_mlir import ir as tir

Interval = tuple[int, int]
LIMIT = 1 << 63  # the first value whose int64 bits read differently from the ui64

# Ops whose results are some of operand 0's elements (or, for concatenate, any operand's).
_MOVES = frozenset({
    "stablehlo.reshape", "stablehlo.broadcast_in_dim", "stablehlo.transpose", "stablehlo.slice",
    "stablehlo.dynamic_slice", "stablehlo.reverse", "stablehlo.optimization_barrier", "mhlo.copy",
    "sdy.sharding_constraint", "sdy.reshard", "stablehlo.all_gather", "stablehlo.all_to_all",
    "stablehlo.collective_broadcast",
})
# Moves that leave zeros where nothing arrives (a device outside every source-target pair).
_MOVES_OR_ZERO = frozenset({"stablehlo.collective_permute"})
_UNIONS = frozenset({"stablehlo.concatenate", "stablehlo.maximum", "stablehlo.minimum"})

# ui64 ops read within [0, 2**63): both representations give XLA's value there.
ARITHMETIC = frozenset({
    "stablehlo.iota", "stablehlo.add", "stablehlo.multiply", "stablehlo.shift_right_logical",
    "stablehlo.convert", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.and",
})


def type_interval(t: tir.TensorType) -> Interval | None:
    """Every value of an integer type narrower than ui64 (None for floats and ui64)."""
    dtype = t.dtype
    if dtype == "i1":
        return (0, 1)
    for prefix, signed in (("ui", False), ("i", True)):
        if dtype.startswith(prefix) and dtype[len(prefix):].isdigit():
            w = int(dtype[len(prefix):])
            if not signed and w >= 64:
                return None
            return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    return None


def _fits(iv: Interval | None, t: tir.TensorType) -> Interval | None:
    """iv when the result type holds all of it, else the type's own range."""
    if iv is None:
        return type_interval(t)
    if t.dtype == "ui64":
        return iv if 0 <= iv[0] and iv[1] < LIMIT else None
    whole = type_interval(t)
    if whole is None:
        return None
    return iv if whole[0] <= iv[0] and iv[1] <= whole[1] else whole


def _op_interval(op: tir.Op, ins: Sequence[Interval | None]) -> Interval | None:
    name, t = op.name, op.result_types[0]
    if name == "stablehlo.constant":
        value = np.asarray(op.attrs.get("value"))
        if value.size == 0 or value.dtype.kind not in "iub":
            return None
        return _fits((int(value.min()), int(value.max())), t)
    if name == "stablehlo.iota":
        n = t.shape[int(op.attrs.get("iota_dimension", 0))] if t.shape else 1
        return _fits((0, max(n - 1, 0)), t)
    if not ins or any(i is None for i in ins):
        return _fits(None, t)
    known: list[Interval] = [i for i in ins if i is not None]
    if name in _MOVES or name == "stablehlo.convert":
        return _fits(known[0], t)
    if name in _MOVES_OR_ZERO:
        return _fits((min(known[0][0], 0), max(known[0][1], 0)), t)
    if name in _UNIONS:
        return _fits((min(i[0] for i in known), max(i[1] for i in known)), t)
    if name == "stablehlo.select" and len(known) == 3:
        return _fits((min(known[1][0], known[2][0]), max(known[1][1], known[2][1])), t)
    if name == "stablehlo.add" and len(known) == 2:
        return _fits((known[0][0] + known[1][0], known[0][1] + known[1][1]), t)
    if name == "stablehlo.multiply" and len(known) == 2:
        products = [a * b for a in known[0] for b in known[1]]
        return _fits((min(products), max(products)), t)
    if name == "stablehlo.shift_right_logical" and len(known) == 2:
        (lo, hi), (s_lo, s_hi) = known
        if lo >= 0 and s_lo >= 0:
            return _fits((lo >> min(s_hi, 64), hi >> s_lo), t)
    if name == "stablehlo.and" and len(known) == 2 and known[0][0] >= 0 and known[1][0] >= 0:
        return _fits((0, min(known[0][1], known[1][1])), t)
    return _fits(None, t)


def intervals(f: tir.Func) -> dict[str, Interval]:
    """The proved interval of each integer value of `f` (ops in definition order; region
    arguments only by their type)."""
    out: dict[str, Interval] = {}
    for name, t in zip(f.body.args, f.body.arg_types):
        iv = type_interval(t)
        if iv is not None:
            out[name] = iv
    for op in f.body.walk():
        for region in op.regions:
            for name, t in zip(region.args, region.arg_types):
                iv = type_interval(t)
                if iv is not None:
                    out[name] = iv
        if len(op.results) != 1:
            for name, t in zip(op.results, op.result_types):
                iv = type_interval(t)
                if iv is not None:
                    out[name] = iv
            continue
        iv = _op_interval(op, [out.get(v) for v in op.operands])
        if iv is not None:
            out[op.results[0]] = iv
    return out


def below_limit(iv: Interval | None) -> bool:
    return iv is not None and 0 <= iv[0] and iv[1] < LIMIT
