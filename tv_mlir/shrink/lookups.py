"""Rule (k), index predicates under assumed ranges (docs/shrinking.md, rule k "lookups").

A lookup guards its index: jnp.take writes `t < 0 ? t + V : t` and fills where `0 <= t'
<= V - 1` fails; a vocabulary-parallel lookup tests whether the token lies in the device's
shard (`clamp(t) < offset[pid]`, `> offset[pid] + 7999`). These compares read program data
(the token), so rule (k) counts them as data predicates: 2^m types of positions for m of
them, and a pin for more than 4. But each of them is a function of one integer input at
the position alone, through index arithmetic (constants, the partition id and offset
tables indexed by it). When the user bounds that input (`--assume tokens=0:32000`), the
predicates can be evaluated on every value of the range on every device, exactly:

- a predicate with one outcome on the whole range and every device is *decided*: it is no
  data predicate (a constant), and rule (k) does not follow it;
- the others split the range into *types*: two input values are of one type when every
  such predicate of the program has the same outcome for them on every device. The
  positions' types are what rule (k)'s argument splits on; their number T replaces 2^m
  (a vocabulary sharded 4 ways, tested by 2 predicates per device: 4 types, not 2^16).

Nothing here is guessed: a compare whose operands this evaluator cannot follow exactly
(anything but the ops below, an input without a bound, a range over MAX_RANGE values, an
intermediate outside int32) is left to rule (k) as before."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tv_mlir.ir import Op
from tv_mlir.shrink.facts import ProgramFacts

# Input values evaluated per bounded input (a vocabulary of 128k is 131072).
MAX_RANGE = 1 << 18
_INT32 = (-(1 << 31), (1 << 31) - 1)
_PASS = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"})
_CMP = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "EQ": np.equal,
        "NE": np.not_equal}
_BIN = {"stablehlo.add": np.add, "stablehlo.subtract": np.subtract, "stablehlo.multiply": np.multiply,
        "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum, "stablehlo.and": np.logical_and,
        "stablehlo.or": np.logical_or}

# (input index or None for values no input reaches, array [range values or 1, devices])
Val = tuple[int | None, np.ndarray]


@dataclass
class IndexPredicates:
    """What the evaluator decided for one program."""

    decided: set[str] = field(default_factory=set)  # compare results constant on the assumed range
    outcomes: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)  # compare -> (input, [R, P])

    def types(self, predicates: set[str]) -> int | None:
        """T for these predicates (all evaluated): per input the number of distinct outcome
        rows over every predicate on it and every device, multiplied over the inputs. None
        when one of them was not evaluated."""
        if any(p not in self.outcomes for p in predicates):
            return None
        by_input: dict[int, list[np.ndarray]] = {}
        for p in sorted(predicates):
            k, arr = self.outcomes[p]
            by_input.setdefault(k, []).append(arr)
        t = 1
        for arrs in by_input.values():
            rows = np.concatenate(arrs, axis=1)
            t *= len(np.unique(rows, axis=0))
        return t


def index_predicates(fa: ProgramFacts, ranges: Sequence[tuple[int, int] | None] | None) -> IndexPredicates:
    """Every compare of the program evaluated on the assumed ranges of its inputs (closed
    bounds per entry argument, as `assume.resolve` gives them), where it can be."""
    out = IndexPredicates()
    if not ranges:
        return out
    ev = _Evaluator(fa, ranges)
    for op in fa.ops():
        if op.name != "stablehlo.compare" or op.results[0] in fa.unreachable:
            continue
        v = ev.value(op.results[0])
        if v is None or v[0] is None:
            continue
        k: int = v[0]
        arr = v[1]
        if arr.min() == arr.max():
            out.decided.add(op.results[0])
        else:
            out.outcomes[op.results[0]] = (k, np.broadcast_to(arr, (arr.shape[0], max(arr.shape[1], ev.devices)))
                                           .astype(bool))
    return out


class _Evaluator:
    def __init__(self, fa: ProgramFacts, ranges: Sequence[tuple[int, int] | None]) -> None:
        self.fa = fa
        self.devices = max(1, fa.module.num_devices) if fa.module.per_device else 1
        self.inputs: dict[str, tuple[int, tuple[int, int]]] = {}
        for k, (arg, r) in enumerate(zip(fa.module.main.body.args, ranges)):
            if isinstance(r, tuple) and all(isinstance(x, (int, np.integer)) for x in r) \
                    and 0 < r[1] - r[0] + 1 <= MAX_RANGE:
                self.inputs[arg] = (k, (int(r[0]), int(r[1])))
        self.memo: dict[str, Val | None] = {}

    def value(self, v: str) -> Val | None:
        if v not in self.memo:
            self.memo[v] = None  # cycles (loop-carried values) are not followed
            self.memo[v] = self._value(v)
        return self.memo[v]

    def _value(self, v: str) -> Val | None:
        fa = self.fa
        if v in self.inputs:
            k, (lo, hi) = self.inputs[v]
            return k, np.arange(lo, hi + 1, dtype=np.int64)[:, None]
        if v in fa.entry_args:
            return None
        if v in fa.callers:
            # A function called from several sites: one column block per call site (every
            # argument of the function lists its sites in one order), so a compare inside
            # it has an outcome per site, device and input value.
            got = [self.value(call.operands[i]) for call, i in fa.callers[v]]
            if not got or any(g is None for g in got) or len({g[0] for g in got if g is not None}) > 1:
                return None
            blocks = [np.broadcast_to(g[1], (g[1].shape[0], max(g[1].shape[1], self.devices)))
                      for g in got if g is not None]
            if len({b.shape for b in blocks}) > 1:
                return None
            return got[0][0] if got[0] is not None else None, np.concatenate(blocks, axis=1)
        if v not in fa.defs:
            return None
        op, idx = fa.defs[v]
        return self._op(op, idx)

    def _op(self, op: Op, idx: int) -> Val | None:
        n = op.name
        if n == "stablehlo.constant":
            value = op.attrs.get("value")
            if not isinstance(value, np.ndarray) or value.size == 0 or np.iscomplexobj(value):
                return None
            flat = value.reshape(-1)
            if not (flat == flat[0]).all() or not (np.issubdtype(value.dtype, np.integer) or value.dtype == bool):
                return None
            return None, np.array([[flat[0]]], dtype=bool if value.dtype == bool else np.int64)
        if n in ("stablehlo.partition_id", "stablehlo.replica_id"):
            ids = np.arange(self.devices, dtype=np.int64) if n == "stablehlo.partition_id" else \
                np.zeros(self.devices, dtype=np.int64)
            return None, ids[None, :]
        if n == "func.call":
            fn = self.fa.module.funcs.get(op.attrs.get("callee", ""))
            return self.value(fn.body.returns[idx]) if fn is not None else None
        if n == "stablehlo.dynamic_slice":
            return self._table(op)
        args = [self.value(o) for o in op.operands]
        if any(a is None for a in args):
            return None
        srcs = {a[0] for a in args if a is not None and a[0] is not None}
        if len(srcs) > 1:
            return None  # two inputs at one position: not one input's predicate
        src = next(iter(srcs), None)
        xs = [a[1] for a in args if a is not None]
        try:
            np.broadcast_shapes(*(x.shape for x in xs))
        except ValueError:
            return None  # column blocks of different call sites
        if n in _PASS:
            out = xs[0]
            if n == "stablehlo.convert":
                out = out.astype(bool) if op.result_types and getattr(op.result_types[0], "is_bool", False) else \
                    out.astype(np.int64)
        elif n == "stablehlo.compare":
            cmp = _CMP.get(op.attrs.get("comparison_direction", ""))
            if cmp is None:
                return None
            out = cmp(xs[0], xs[1])
        elif n in _BIN:
            out = _BIN[n](xs[0], xs[1])
        elif n == "stablehlo.select":
            out = np.where(xs[0], xs[1], xs[2])
        elif n == "stablehlo.clamp":
            out = np.minimum(np.maximum(xs[1], xs[0]), xs[2])
        elif n == "stablehlo.not":
            out = np.logical_not(xs[0]) if xs[0].dtype == bool else np.invert(xs[0])
        elif n == "stablehlo.negate":
            out = -xs[0]
        else:
            return None
        if out.dtype != bool and (out.min() < _INT32[0] or out.max() > _INT32[1]):
            return None  # a wrap this evaluator does not model
        return src, out

    def _table(self, op: Op) -> Val | None:
        """A one-element slice of a 1-d constant table at a device-dependent start: the
        partitioned module's per-device offsets."""
        table_def = self.fa.defs.get(op.operands[0])
        sizes = op.attrs.get("slice_sizes") or ()
        if table_def is None or table_def[0].name != "stablehlo.constant" or len(op.operands) != 2 \
                or tuple(sizes) != (1,):
            return None
        table = table_def[0].attrs.get("value")
        if not isinstance(table, np.ndarray) or table.ndim != 1 or not np.issubdtype(table.dtype, np.integer):
            return None
        start = self.value(op.operands[1])
        if start is None or start[0] is not None:
            return None
        i = np.clip(start[1], 0, table.size - 1)
        return None, table.astype(np.int64)[i]


__all__ = ["IndexPredicates", "MAX_RANGE", "index_predicates"]
