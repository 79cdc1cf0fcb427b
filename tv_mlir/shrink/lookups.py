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

from tv_mlir.ir import Module, Op
from tv_mlir.shrink.facts import ProgramFacts, passed_whole, splat

# Input values evaluated per bounded input (a vocabulary of 128k is 131072).
MAX_RANGE = 1 << 18
INT64 = (-(1 << 63), 1 << 63)  # the values the evaluation holds (int64 arrays)
# Rule (k), partitioned lookups (`guarded_lookups`): an index predicate that only selects,
# device by device, between a gather and zero, summed over a device group in which exactly
# one device selects for every input value, is a gather, not a count. Off: counted.
GATHERS = True
# The partition check of such a lookup (a switch so the tests can show that without it a
# count hides: testdata/shrink_rules/gen_lookup_sums.py).
PARTITION = True
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
    truths: dict[str, bool] = field(default_factory=dict)  # decided compare -> its one outcome (zero_types.py)
    gathers: set[str] = field(default_factory=set)  # compare results that only guard lookups (`guarded_lookups`)
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
            out.truths[op.results[0]] = bool(arr.reshape(-1)[0])
        else:
            out.outcomes[op.results[0]] = (k, np.broadcast_to(arr, (arr.shape[0], max(arr.shape[1], ev.devices)))
                                           .astype(bool))
    return out


class _Evaluator:
    def __init__(self, fa: ProgramFacts, ranges: Sequence[tuple[int, int] | None],
                 constants: dict[str, int | tuple[int, ...]] | None = None) -> None:
        self.fa = fa
        # value name -> its value at the shrunk sizes (the plan's rewritten constants), for
        # checking a lookup's partition there (`guarded_lookups`)
        self.constants = constants or {}
        manual = any(op.name == "sdy.manual_computation" for op in fa.ops())
        self.devices = max(1, fa.module.num_devices) if fa.module.per_device or manual else 1
        self.inputs: dict[str, tuple[int, tuple[int, int]]] = {}
        for k, (arg, r) in enumerate(zip(fa.module.main.body.args, ranges)):
            if isinstance(r, tuple) and all(isinstance(x, (int, np.integer)) for x in r) \
                    and 0 < r[1] - r[0] + 1 <= MAX_RANGE and INT64[0] <= r[0] and r[1] < INT64[1]:
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
        outer = self._outer(v)
        if outer != v:
            return self.value(outer)
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
        if n == "stablehlo.constant" and op.results[0] in self.constants:
            new = self.constants[op.results[0]]
            if isinstance(new, tuple):
                return None  # a rewritten table is read by `_table`, not as a splat
            return None, np.array([[int(new)]], dtype=np.int64)
        if n == "stablehlo.constant":
            value = op.attrs.get("value")
            if not isinstance(value, np.ndarray) or value.size == 0 or np.iscomplexobj(value):
                return None
            flat = value.reshape(-1)
            if not (flat == flat[0]).all() or not (np.issubdtype(value.dtype, np.integer) or value.dtype == bool):
                return None
            if value.dtype != bool and not INT64[0] <= int(flat[0]) < INT64[1]:
                return None  # a ui64 past int64: not evaluated here
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
        if n == "stablehlo.all_gather" and len(op.operands) == 1:
            # Elements from the group's other devices: the same function of the input at
            # their position only when every device of a group computes it alike.
            got = self.value(op.operands[0])
            return got if got is not None and self._uniform(op, got[1]) else None
        if n == "stablehlo.reduce" and len(op.operands) == 2 and len(op.regions[0].ops) == 1 \
                and op.regions[0].ops[0].name in ("stablehlo.and", "stablehlo.or"):
            # over dims of one element only: a reshape
            shape = self._shape(op.operands[0])
            if shape is None or any(shape[d] != 1 for d in op.attrs.get("dimensions", ())):
                return None
            return self.value(op.operands[0])
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
        elif n in ("stablehlo.divide", "stablehlo.remainder") and xs[0].dtype != bool:
            # integer division truncates toward zero, the remainder takes the dividend's sign
            if (xs[1] == 0).any():
                return None
            q = np.sign(xs[0]) * np.sign(xs[1]) * (np.abs(xs[0]) // np.abs(xs[1]))
            out = q if n == "stablehlo.divide" else xs[0] - xs[1] * q
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

    def _outer(self, v: str) -> str:
        return passed_whole(self.fa, v)

    def _shape(self, v: str) -> tuple[int, ...] | None:
        d = self.fa.defs.get(v)
        if d is not None and d[1] < len(d[0].result_types):
            return tuple(d[0].result_types[d[1]].shape)
        return None

    def _uniform(self, op: Op, arr: np.ndarray) -> bool:
        if arr.shape[1] == 1:
            return True  # the same on every device
        groups = _groups(op, self.fa.module)
        return groups is not None and all(
            all(g < arr.shape[1] for g in group) and (arr[:, group] == arr[:, group[:1]]).all() for group in groups)

    def _table(self, op: Op) -> Val | None:
        """A one-element slice of a 1-d constant table at a device-dependent start: the
        partitioned module's per-device offsets."""
        table_def = self.fa.defs.get(self._outer(op.operands[0]))
        sizes = op.attrs.get("slice_sizes") or ()
        if table_def is None or table_def[0].name != "stablehlo.constant" or len(op.operands) != 2 \
                or tuple(sizes) != (1,):
            return None
        table = table_def[0].attrs.get("value")
        if isinstance(self.constants.get(self._outer(op.operands[0])), tuple):
            table = np.array(self.constants[self._outer(op.operands[0])], dtype=np.int64)  # rewritten: q * B'
        if not isinstance(table, np.ndarray) or table.ndim != 1 or not np.issubdtype(table.dtype, np.integer):
            return None
        start = self.value(op.operands[1])
        if start is None or start[0] is not None:
            return None
        i = np.clip(start[1], 0, table.size - 1)
        return None, table.astype(np.int64)[i]


def _groups(op: Op, module: Module) -> list[list[int]] | None:
    """A collective's device groups (partition ids), or None when it has none this can read."""
    from tv_mlir.errors import Unsupported
    from tv_mlir.execute.spmd import process_groups

    if module.num_replicas != 1:
        return None
    try:
        groups = process_groups(op, module.num_replicas, module.num_partitions)
    except (Unsupported, ValueError, KeyError):
        return None
    return groups or None


# Guard ops: a predicate's value passes through them unchanged per position (and, or of
# predicates of the same input; layout; an all_gather or a reduction over one element,
# which `_Evaluator` follows only where they keep it a function of the input there).
_GUARD = frozenset({"stablehlo.and", "stablehlo.or", "stablehlo.not", "stablehlo.broadcast_in_dim",
                    "stablehlo.reshape", "stablehlo.all_gather", "stablehlo.reduce"})


def guarded_lookups(fa: ProgramFacts, lk: IndexPredicates, ranges: Sequence[tuple[int, int] | None] | None,
                    shrunk: tuple[dict[str, int | tuple[int, ...]], Sequence[tuple[int, int] | None]] | None = None
                    ) -> set[str]:
    """Rule (k), partitioned lookups (docs/shrinking.md): the undecided index predicates of
    `lk` whose every use, through guard ops, is the predicate of a `select` between a
    splat zero and a `gather`, summed by an `all_reduce` (an add) whose groups partition
    the assumed range: every device of a group holds the same input elements, and for every
    input value, in every group, exactly one device selects its gather (evaluated exactly,
    at the original sizes, and at the shrunk ones when `shrunk` gives the rewritten
    constants and ranges). Such a sum is one gathered element
    at an index computed from the input alone: a gather, which rule (k) does not count."""
    if not GATHERS or not ranges:
        return set()
    evs = [_Evaluator(fa, ranges)]
    if shrunk is not None:
        evs.append(_Evaluator(fa, shrunk[1], shrunk[0]))
    returns = set(fa.module.main.body.returns)
    out: set[str] = set()
    for p in lk.outcomes:
        selects = _guarded_selects(fa, p, returns)
        if selects is not None and all(_partitions(fa, ev, s) for s in selects for ev in evs):
            out.add(p)
    return out


def _guarded_selects(fa: ProgramFacts, p: str, returns: set[str]) -> list[Op] | None:
    todo, seen, selects = [p], {p}, []
    while todo:
        v = todo.pop()
        if v in returns:
            return None
        for op in fa.uses.get(v, []):
            if op.name == "stablehlo.select" and op.operands[0] == v and v not in op.operands[1:]:
                selects.append(op)
            elif op.name in _GUARD and not (op.name == "stablehlo.reduce" and v in op.operands[len(op.operands) // 2:]):
                for r in op.results:
                    if r not in seen:
                        seen.add(r)
                        todo.append(r)
            else:
                return None
    return selects or None


def _partitions(fa: ProgramFacts, ev: _Evaluator, select: Op) -> bool:
    pred, on_true, on_false = select.operands
    gather_true = _is_gather(fa, on_true) and _is_zero(fa, on_false)
    if not gather_true and not (_is_gather(fa, on_false) and _is_zero(fa, on_true)):
        return False
    uses = fa.uses.get(select.results[0], [])
    if len(uses) != 1 or uses[0].name != "stablehlo.all_reduce" or len(uses[0].regions[0].ops) != 1 \
            or uses[0].regions[0].ops[0].name != "stablehlo.add":
        return False
    got = ev.value(pred)
    groups = _groups(uses[0], fa.module)
    if got is None or got[0] is None or groups is None or not _same_input(fa.module, got[0], groups):
        return False
    arr = np.broadcast_to(got[1], (got[1].shape[0], max(got[1].shape[1], ev.devices))).astype(bool)
    chosen = arr if gather_true else ~arr
    if any(g >= chosen.shape[1] for group in groups for g in group):
        return False
    return all((chosen[:, group].sum(axis=1) == 1).all() for group in groups) if PARTITION else True


def _same_input(module: Module, k: int, groups: list[list[int]]) -> bool:
    """Every device of a group holds the same elements of input k (its shard is the same),
    so that at each position the group's devices test one and the same input value. In a
    global program (a manual computation's replicated argument) every device holds it all."""
    if not module.per_device:
        return True
    s = module.arg_shardings[k] if k < len(module.arg_shardings) else None
    if s is None:
        return False
    coords = s.mesh.coords()
    if any(d not in coords for group in groups for d in group):
        return False
    return all(len({tuple(coords[d][a] for dim in s.dims for a in dim) for d in group}) == 1 for group in groups)


def _is_gather(fa: ProgramFacts, v: str, depth: int = 0) -> bool:
    """A gather's result, or a call's result that its function returns from a gather
    (jnp.take is a private function)."""
    d = fa.defs.get(v)
    if d is None or depth > 8:
        return False
    if d[0].name == "func.call":
        fn = fa.module.funcs.get(d[0].attrs.get("callee", ""))
        return fn is not None and _is_gather(fa, fn.body.returns[d[1]], depth + 1)
    return d[0].name == "stablehlo.gather"


def _is_zero(fa: ProgramFacts, v: str) -> bool:
    d = fa.defs.get(v)
    while d is not None and d[0].name == "stablehlo.broadcast_in_dim":
        d = fa.defs.get(d[0].operands[0])
    return d is not None and d[0].name == "stablehlo.constant" and splat(d[0]) == 0


__all__ = ["GATHERS", "IndexPredicates", "MAX_RANGE", "PARTITION", "guarded_lookups", "index_predicates"]
