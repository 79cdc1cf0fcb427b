"""Value ranges of the reference's integer and Boolean values: per top-level value one
interval [lo, hi] that holds every element of it, for every program input within its
bounds (the resolved --assume bounds, else its type's range). An i1 value is an interval
within [0, 1] (False = 0, True = 1); one with lo == hi is *decided*: every element is that
value whatever the inputs.

Why a staged proof needs it: a stage's inputs are free variables, so a stage that takes
flax's embedding mask `ok = (idx >= 0) & (idx <= V - 1)` (an i1 cut value) sees a free
Boolean, and the float `select(ok, gather(E, idx), NaN)` after it may be NaN: every float
value of the stage then carries a symbolic IEEE class. With the token ids bounded in
[0, V), `ok` is True at every element: the stage takes it as that constant (its
`Options.input_bounds`), and `stages/finite.py` takes the select's value as its chosen
branch's fact (finite).

Soundness. A stage proof shows: for every value of the stage's inputs within their
domain, both programs' stage outputs agree. The chain of stages needs this only for the
values the reference actually computes at the program's inputs (the earlier stages
proved that the other program's cut values are those). Every interval here contains
every value the reference can compute for inputs within their bounds, as the verifier's
own semantics computes it (two's complement of the type's width: an integer result is
its mathematical value reduced into the type, `semantics/fixed_width.py`). So narrowing
a stage input to its interval removes only values the reference never computes there,
and the chain is as sound as with the input free. What keeps every interval sound:
- a rule computes the interval of the mathematical result from its operands' intervals,
  and an interval that leaves the result type's range becomes that whole range (the
  reduction may land anywhere in it);
- ops that move, pick or compare elements (`MOVES`, select, min, max, clamp, reductions
  by min / max / and / or) give an interval of elements their operands hold;
- a compare is decided only when the operands' intervals decide it for every pair of
  elements; anything not handled here gets its type's whole range.
Only top-level values are analysed; a name also used inside a region (a loop body's
carried value) is left out, so a loop stage's inputs are never narrowed by it."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tv_mlir.algebra.base import type_range
from tv_mlir.ir import Block, Module, Op, TensorType
from tv_mlir.semantics.fixed_width import int_width
from tv_mlir.semantics.ops import VALUE_IDENTITIES


@dataclass(frozen=True)
class Interval:
    """Every element of a value lies in [lo, hi] (inclusive)."""

    lo: int
    hi: int

    def union(self, other: Interval) -> Interval:
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    @property
    def value(self) -> int | None:
        """The one value of every element, when the interval has one."""
        return self.lo if self.lo == self.hi else None


def type_interval(t: TensorType) -> Interval | None:
    """The range of an integer or i1 element type; None for the types not analysed."""
    if t.is_bool:
        return Interval(0, 1)
    width = int_width(t)
    if width is None:
        return None
    return Interval(*type_range(width, not t.is_unsigned))


# Ops whose result elements are elements of the listed operands (per result: the union of
# those operands' intervals). A gather or dynamic slice clamps its start indices, so its
# elements are still the operand's; pad and dynamic_update_slice add their second operand's.
MOVES: dict[str, tuple[int, ...]] = {
    **{f"stablehlo.{n}": (0,) for n in (
        "broadcast_in_dim", "broadcast", "reshape", "transpose", "slice", "reverse", "gather", "dynamic_slice",
        "copy")},
    "stablehlo.pad": (0, 1),
    "stablehlo.dynamic_update_slice": (0, 1),
}
# Ops whose k-th result is a permutation, a copy or the value of their k-th operand.
PER_OPERAND = frozenset({"stablehlo.sort"}) | VALUE_IDENTITIES
COMPARISONS = {"EQ", "NE", "LT", "LE", "GT", "GE"}


def _fit(iv: Interval, t: TensorType) -> Interval:
    """The mathematical result's interval, or the type's whole range when the reduction
    into the type may wrap it."""
    full = type_interval(t)
    assert full is not None
    return iv if full.lo <= iv.lo and iv.hi <= full.hi else full


def _arith(name: str, a: list[Interval]) -> Interval | None:
    """Interval arithmetic over the mathematical integers (before the reduction)."""
    if name == "stablehlo.add":
        return Interval(a[0].lo + a[1].lo, a[0].hi + a[1].hi)
    if name == "stablehlo.subtract":
        return Interval(a[0].lo - a[1].hi, a[0].hi - a[1].lo)
    if name == "stablehlo.negate":
        return Interval(-a[0].hi, -a[0].lo)
    if name == "stablehlo.multiply":
        p = [x * y for x in (a[0].lo, a[0].hi) for y in (a[1].lo, a[1].hi)]
        return Interval(min(p), max(p))
    if name == "stablehlo.abs":
        lo, hi = a[0].lo, a[0].hi
        return Interval(0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
    if name == "stablehlo.maximum":
        return Interval(max(x.lo for x in a), max(x.hi for x in a))
    if name == "stablehlo.minimum":
        return Interval(min(x.lo for x in a), min(x.hi for x in a))
    if name == "stablehlo.clamp":  # clamp(min, x, max) = min(max(x, min), max)
        low, x, high = a
        m = Interval(max(x.lo, low.lo), max(x.hi, low.hi))
        return Interval(min(m.lo, high.lo), min(m.hi, high.hi))
    return None


# On i1 the algebras read add as or and multiply as and (Kind.BOOL), which on {0, 1} are
# max and min.
_BOOL_ARITH = {"stablehlo.add": "stablehlo.maximum", "stablehlo.multiply": "stablehlo.minimum",
               "stablehlo.or": "stablehlo.maximum", "stablehlo.and": "stablehlo.minimum",
               "stablehlo.maximum": "stablehlo.maximum", "stablehlo.minimum": "stablehlo.minimum"}


def _compare(op: Op, a: Interval, b: Interval, t: TensorType) -> Interval:
    """[1, 1] / [0, 0] when the intervals decide the comparison for every pair of
    elements, else [0, 1]."""
    direction = op.attrs.get("comparison_direction")
    kind = op.attrs.get("compare_type")
    # A comparison read another way than the operands' type is not decided here.
    if (direction not in COMPARISONS or (kind == "UNSIGNED" and t.is_int and not t.is_unsigned)
            or (kind == "SIGNED" and t.is_unsigned) or kind in ("FLOAT", "TOTALORDER")):
        return Interval(0, 1)
    if direction in ("GT", "GE"):
        a, b, direction = b, a, {"GT": "LT", "GE": "LE"}[direction]
    truth: bool | None = None
    if direction in ("EQ", "NE"):
        if a.value is not None and a.value == b.value:
            truth = True
        elif a.hi < b.lo or b.hi < a.lo:
            truth = False
        if truth is not None and direction == "NE":
            truth = not truth
    elif direction == "LT":
        truth = True if a.hi < b.lo else False if a.lo >= b.hi else None
    else:  # LE
        truth = True if a.hi <= b.lo else False if a.lo > b.hi else None
    return Interval(0, 1) if truth is None else Interval(int(truth), int(truth))


def _convert(a: Interval, src: TensorType, dst: TensorType) -> Interval:
    full = type_interval(dst)
    assert full is not None
    if src.is_float or type_interval(src) is None:
        return full  # a float's truncation saturates somewhere in the type
    if dst.is_bool:  # x != 0
        if a.lo == a.hi == 0:
            return Interval(0, 0)
        return Interval(1, 1) if a.hi < 0 or a.lo > 0 else Interval(0, 1)
    return _fit(a, dst)  # an i1 source is 0 / 1 already


def _reducer(block: Block) -> str:
    """The one op of a reduction body that combines its two arguments and returns the
    result ("stablehlo.maximum", ...), else ""."""
    if len(block.ops) != 1 or len(block.args) != 2:
        return ""
    op = block.ops[0]
    if op.name not in _BOOL_ARITH or op.name in ("stablehlo.add", "stablehlo.multiply"):
        return ""
    if sorted(op.operands) != sorted(block.args) or tuple(block.returns) != op.results[:1]:
        return ""
    return op.name


def _reduce(op: Op, a: list[Interval | None], types: list[TensorType]) -> Interval | None:
    """A one-input reduce by min / max (and / or on i1): the result is the init combined
    with the reduced elements, so max(init, x...) lies in [max(init.lo, x.lo),
    max(init.hi, x.hi)] (min likewise). With no element to reduce it is the init."""
    if len(op.operands) != 2 or len(op.regions) != 1 or a[0] is None or a[1] is None:
        return None
    name = _reducer(op.regions[0])
    t = op.result_types[0]
    if not name or (name in ("stablehlo.and", "stablehlo.or") and not t.is_bool):
        return None
    x, init = a[0], a[1]
    if types[0].size == 0:
        return init
    return _arith(_BOOL_ARITH[name], [x, init])


def _union(parts: list[Interval | None]) -> Interval | None:
    """The interval of values whose elements are all elements of `parts` (None: unknown)."""
    out: Interval | None = None
    for x in parts:
        if x is None:
            return None
        out = x if out is None else out.union(x)
    return out


def _rule(op: Op, a: list[Interval | None], types: list[TensorType]) -> list[Interval | None]:
    """The result intervals of one op (None: the type's range, filled in by the caller)."""
    name, n = op.name, len(op.results)
    if all(type_interval(r) is None for r in op.result_types):
        return [None] * n
    t = op.result_types[0] if op.result_types else None
    if name == "stablehlo.constant":
        arr = np.asarray(op.attrs.get("value"))
        if arr.dtype.kind not in "biu" or arr.size == 0:
            return [None]
        return [Interval(int(arr.min()), int(arr.max()))]
    if name == "stablehlo.iota":
        assert t is not None
        dim = t.shape[op.attrs["iota_dimension"]] if t.shape else 1
        return [Interval(0, max(dim - 1, 0))]
    if name in MOVES:
        return [_union([a[k] for k in MOVES[name] if k < len(a)])]
    if name == "stablehlo.concatenate":
        return [_union(a)]
    if name in PER_OPERAND:
        return list(a[:n]) if len(a) >= n else [None] * n
    if t is None or n != 1:
        return [None] * n
    if name == "stablehlo.convert":
        return [None if a[0] is None else _convert(a[0], types[0], t)]
    if name == "stablehlo.compare":
        if a[0] is None or a[1] is None:
            return [Interval(0, 1)]
        return [_compare(op, a[0], a[1], types[0])]
    if name == "stablehlo.select":
        c, x, y = a
        if x is None or y is None:
            return [None]
        if c is not None and c.value is not None:
            return [x if c.value else y]
        return [x.union(y)]
    if name == "stablehlo.reduce":
        return [_reduce(op, a, types)]
    if any(x is None for x in a):
        return [None]
    ivs: list[Interval] = [x for x in a if x is not None]
    if t.is_bool:
        if name == "stablehlo.not":
            return [Interval(1 - ivs[0].hi, 1 - ivs[0].lo)]
        if name == "stablehlo.xor":
            p, q = ivs[0].value, ivs[1].value
            return [None if p is None or q is None else Interval(p ^ q, p ^ q)]
        if name in _BOOL_ARITH:
            return [_arith(_BOOL_ARITH[name], ivs)]
        return [None]
    iv = _arith(name, ivs)
    return [None if iv is None else _fit(iv, t)]


@dataclass(frozen=True)
class Ranges:
    """The interval of every top-level integer or i1 value of a program."""

    intervals: dict[str, Interval]
    types: dict[str, TensorType]

    def decided(self) -> dict[str, bool]:
        """The i1 values whose every element is one truth value, for every input."""
        return {v: bool(iv.lo) for v, iv in self.intervals.items()
                if iv.value is not None and self.types[v].is_bool}

    def narrower(self, value: str, t: TensorType) -> Interval | None:
        """The interval of `value`, when it is narrower than the range of `t` (its type)."""
        iv = self.intervals.get(value)
        full = type_interval(t)
        if iv is None or full is None or self.types[value].dtype != t.dtype or iv == full:
            return None
        return iv


def _names(block: Block, out: set[str]) -> None:
    """Every name a block and the regions inside it define."""
    out.update(block.args)
    for op in block.ops:
        out.update(op.results)
        for region in op.regions:
            _names(region, out)


def value_ranges(module: Module, bounds: Sequence[tuple[int, int] | None] = ()) -> Ranges:
    """The intervals of the top-level values of `module` (a global program) whose inputs
    lie within `bounds` (per input: closed bounds or None for the type's range)."""
    body = module.main.body
    iv: dict[str, Interval | None] = {}
    types: dict[str, TensorType] = {}
    for k, (v, t) in enumerate(zip(body.args, body.arg_types)):
        full = type_interval(t)
        b = bounds[k] if k < len(bounds) else None
        if full is not None and b is not None:
            full = Interval(max(full.lo, b[0]), min(full.hi, b[1]))
        iv[v], types[v] = full, t
    nested: set[str] = set()
    for op in body.ops:
        for region in op.regions:
            _names(region, nested)
        types.update(zip(op.results, op.result_types))
        args = [iv.get(v) for v in op.operands]
        operand_types = [types[v] for v in op.operands if v in types]
        if len(operand_types) != len(op.operands):
            out: list[Interval | None] = [None] * len(op.results)  # a value from outside: unknown
        else:
            out = _rule(op, args, operand_types)
        for r, t, x in zip(op.results, op.result_types, out):
            # An interval that leaves the type (an iota longer than the type counts) is its range.
            iv[r] = type_interval(t) if x is None or type_interval(t) is None else _fit(x, t)
    intervals = {v: x for v, x in iv.items() if x is not None and v not in nested}
    return Ranges(intervals, {v: types[v] for v in intervals})
