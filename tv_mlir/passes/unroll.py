"""Unrolling of short counted loops (`lax.fori_loop`, `lax.scan` over a few steps).

Why: the proof merges the other program's values into the reference's as it goes (the
sweep, prove/sweep.py), and it sees only the ops of a function's own blocks, not the ops
of a loop body (run once per trip, the body has no single value to merge). A ring
attention written with `fori_loop` then leaves every trip's online-softmax terms unmerged
and the solver times out, while the same loop unrolled by Python is proved by
simplification alone (docs/jax.md, gen_clients3's `ring_causal_loop`). Copying the body of
a short loop once per trip gives the sweep every trip's values.

Only loops whose trip count is fixed by their own text, and whose body indexes nothing
(`SCAN_OPS`: a scan is left to the staged proof's induction), are unrolled: the condition is
`counter < C` (or <=, !=) of a block argument and a constant of the condition region, the
counter starts at a constant operand and the body returns `counter + step` with a constant
step > 0. Each trip is the body with its arguments replaced by the previous trip's
results and the counter by a constant of its value at that trip, which is what the loop
computes (the condition reads nothing but the counter). Loops past the budgets stay loops.
"""
from __future__ import annotations

import itertools
from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, replace

import numpy as np

from tv_mlir.ir import Block, Module, Op, TensorType
from tv_mlir.passes.rename import fresh_copy, fresh_counter, substitute

# Trips and copied ops per loop: a scan over 126 layers stays a loop (the staged proof
# keeps its layers as instances of one body), a ring of 4 or 8 steps is unrolled.
MAX_TRIPS = 16
MAX_COPIED_OPS = 4000

_DIRECTIONS = {"LT": np.less, "LE": np.less_equal, "NE": np.not_equal}

# A body that indexes values (by the counter, as a scan reads its layer's slice of stacked
# weights and writes its output row) is a scan over layers or microbatches: the staged
# proof keeps those as loops and proves them by induction (stages/loops.py), once per
# body, which unrolling would undo. Loops without them (a ring of ppermutes carrying an
# online softmax, a fixed number of refinement steps) are the ones unrolled.
SCAN_OPS = frozenset({"stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.gather",
                      "stablehlo.scatter", "stablehlo.while"})


@dataclass(frozen=True)
class Counted:
    index: int  # the counter's position among the loop's values
    start: int
    step: int
    trips: int


def _scalar_int(op: Op | None) -> int | None:
    if op is None or op.name != "stablehlo.constant" or len(op.result_types) != 1:
        return None
    t = op.result_types[0]
    if t.shape != () or not t.is_int:
        return None
    return int(np.asarray(op.attrs.get("value")).reshape(()))


def counter_step(body: Block, index: int, body_local: Mapping[str, Op]) -> int | None:
    """The constant step > 0 a while body adds to its value `index` (`i + step`), else None.
    `body_local`: the body's ops by result."""
    inc = body_local.get(body.returns[index])
    if inc is None or inc.name != "stablehlo.add" or body.args[index] not in inc.operands:
        return None
    other = inc.operands[1] if inc.operands[0] == body.args[index] else inc.operands[0]
    step = _scalar_int(body_local.get(other))
    return step if step is not None and step > 0 else None


def counted(op: Op, defs: Mapping[str, Op], max_trips: int | None = None) -> Counted | None:
    """The trip count of a while loop counted by one of its values, else None (also past
    `max_trips`, by default MAX_TRIPS as it is when called: a test sets it to 0 to keep a
    loop). `defs`: the defining ops of the loop's operands (its counter's start)."""
    if max_trips is None:
        max_trips = MAX_TRIPS
    if op.name != "stablehlo.while" or len(op.regions) != 2:
        return None
    cond, body = op.regions
    local = {r: o for o in cond.ops for r in o.results}
    if len(cond.returns) != 1 or any(o.name not in ("stablehlo.constant", "stablehlo.compare") for o in cond.ops):
        return None
    cmp = local.get(cond.returns[0])
    if cmp is None or cmp.name != "stablehlo.compare" or cmp.attrs.get("comparison_direction") not in _DIRECTIONS:
        return None
    a, b = cmp.operands
    if a not in cond.args:
        return None
    index, bound = cond.args.index(a), _scalar_int(local.get(b))
    t: TensorType = cond.arg_types[index]
    start = _scalar_int(defs.get(op.operands[index]))
    if bound is None or start is None or t.dtype not in ("i32", "i64") or cmp.attrs.get("compare_type") == "UNSIGNED":
        return None
    step = counter_step(body, index, {r: o for o in body.ops for r in o.results})
    if step is None:
        return None
    test, limit = _DIRECTIONS[cmp.attrs["comparison_direction"]], 2 ** (t.bit_width - 1) - 1
    trips, i = 0, start
    while test(i, bound):
        trips += 1
        i += step
        if trips > max_trips or i > limit:  # too long, or the counter would wrap: a loop it stays
            return None
    return Counted(index, start, step, trips)


# The prefix of the values an unrolled trip defines.
UNROLLED = "%u"


@dataclass
class _Unroller:
    module: Module
    fresh: itertools.count[int] | None = None

    @property
    def counter(self) -> itertools.count[int]:
        """Names the module does not hold yet (`fresh_counter`), made at the first loop
        unrolled: a program without one pays no walk for it."""
        if self.fresh is None:
            self.fresh = fresh_counter(self.module, UNROLLED)
        return self.fresh

    def block(self, block: Block, outer: MutableMapping[str, Op]) -> Block:
        # A block without a loop is returned as it is, and an op is copied only when its
        # operands or regions change: the pass runs on every program, most of which have
        # no loop, and a 126-layer stack has ~10^5 ops.
        if not any(o.name == "stablehlo.while" for o in block.walk()):
            return block
        ops: list[Op] = []
        mapping: dict[str, str] = {}
        # The enclosing blocks' definitions are read through, not copied: a copy per
        # region (every reduce's body) was quadratic in the function's size.
        defs: ChainMap[str, Op] = ChainMap({}, outer)
        for op in block.ops:
            operands = tuple(mapping.get(o, o) for o in op.operands)
            regions = tuple(self.block(r, defs) for r in op.regions)
            if operands != op.operands or any(a is not b for a, b in zip(regions, op.regions)):
                op = replace(op, operands=operands, regions=regions)
            loop = counted(op, defs)
            body_ops = [o.name for o in op.regions[1].walk()] if loop is not None else []
            if loop is None or len(body_ops) * loop.trips > MAX_COPIED_OPS or SCAN_OPS.intersection(body_ops):
                ops.append(op)
                defs.update((r, op) for r in op.results)
                continue
            values = list(op.operands)
            for trip in range(loop.trips + 1):
                const = self._constant(op, loop, loop.start + trip * loop.step)
                ops.append(const)
                defs[const.results[0]] = const
                values[loop.index] = const.results[0]
                if trip == loop.trips:
                    break
                body, _ = fresh_copy(op.regions[1], UNROLLED, self.counter)
                body = substitute(replace(body, args=()), dict(zip(body.args, values)))
                ops.extend(body.ops)
                defs.update((r, o) for o in body.ops for r in o.results)
                values = list(body.returns)
            mapping.update(zip(op.results, values))
        return substitute(replace(block, ops=ops), mapping)

    def _constant(self, op: Op, loop: Counted, value: int) -> Op:
        t = op.regions[0].arg_types[loop.index]
        return Op("stablehlo.constant", (), (f"{UNROLLED}{next(self.counter)}",), (t,),
                  {"value": np.array(value, dtype=np.int32 if t.dtype == "i32" else np.int64)}, loc=op.loc)


def unroll_loops(module: Module) -> Module:
    """Every short counted while loop (see the module docstring), at any depth, replaced by
    copies of its body, one per trip."""
    unroller = _Unroller(module)
    funcs = {name: replace(f, body=unroller.block(f.body, {})) for name, f in module.funcs.items()}
    return replace(module, funcs=funcs)
