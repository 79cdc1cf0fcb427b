"""Control flow and ops that are the identity over the reals."""
from __future__ import annotations

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.errors import Unsupported
from tv_mlir.ir import Block, Op, TensorType
from tv_mlir.passes.unroll import counter_step
from tv_mlir.semantics import linalg
from tv_mlir.semantics.common import OpContext, Rule, concrete_bool, unsupported
from tv_mlir.semantics.ops import CALLS, NOOP_CUSTOM_CALLS, VALUE_IDENTITIES, called_function, is_noop_custom_call


def _while(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    cond, body = op.regions
    values = list(args)
    while True:  # ends: every trip is charged to the run's loop budget
        pred = ctx.runner.run_block(cond, values)[0]
        decided = concrete_bool(ctx.alg, pred.reshape(())[()])
        if decided is None:
            trips = guard_trips(op, [ctx.alg.index_value(v.reshape(())[()]) if v.size == 1 else None
                                     for v in values])
            if trips is None:
                raise unsupported(op, "while loop whose condition does not fold to a constant (data-dependent "
                                      "trip count) and is not bounded by a counter (`i < N` and-ed into it)")
            return _guarded(ctx, op, values, pred, trips)
        if not decided:
            return values
        ctx.budget.iteration(op)
        values = ctx.runner.run_block(body, values)


# A data-dependent loop with a counter guard (`while (~done) & (i < N)`: a decode loop, an
# iteration to convergence with a cap) is run as at most `trips` guarded trips, each
# `values = select(cond(values), body(values), values)`. That is the loop's meaning, not an
# approximation: a trip not taken leaves the values as they were, so the condition, a pure
# function of them, stays false and every later trip is not taken either; and after `trips`
# taken trips the counter has reached its bound (`guard_trips` proves it: the counter starts
# at a known value, the body adds a positive constant to it, it cannot wrap, and its test
# is and-ed into the condition), so the real loop has stopped by then.
MAX_GUARDED_TRIPS = 64


def guard_trips(op: Op, start: list[int | None]) -> int | None:
    """How many more trips a while loop can take at most, from a counter test and-ed into
    its condition (`i < N`, `i <= N`, `N > i`, `N >= i`, signed, N a constant), the body
    adding a positive constant to `i`, and `start[i]` (each carried value as an int when it
    is a known scalar, else None); None when no such counter bounds it, or past
    MAX_GUARDED_TRIPS."""
    cond, body = op.regions
    if len(cond.returns) != 1:
        return None
    # Single-result ops only: a value is then its op's result 0, whose type the walk reads.
    local = {o.results[0]: o for o in cond.ops if len(o.results) == 1}
    body_local = {o.results[0]: o for o in body.ops if len(o.results) == 1}
    best: int | None = None
    todo = [cond.returns[0]]
    while todo:  # the conjuncts: through `and` ops only (an `or` or a `not` bounds nothing)
        o = local.get(todo.pop())
        if o is None:
            continue
        if o.name == "stablehlo.and" and o.result_types[0].dtype == "i1":
            todo.extend(o.operands)
            continue
        same = _same_bool(o, local)
        if same is not None:
            todo.append(same)
            continue
        trips = _counter_trips(o, cond, local, body, body_local, start)
        if trips is not None and (best is None or trips < best):
            best = trips
    return best if best is not None and best <= MAX_GUARDED_TRIPS else None


def _same_bool(o: Op, local: dict[str, Op]) -> str | None:
    """The i1 value `o` is equal to, as jax writes `a & b` of a comparison: `convert` of an
    i1 to i1, `x != false`, `x == true` (the constant possibly broadcast); else None."""
    if o.result_types[0].dtype != "i1" or o.result_types[0].shape != ():
        return None
    if o.name == "stablehlo.convert":
        src = local.get(o.operands[0])
        return o.operands[0] if src is not None and src.result_types[0].dtype == "i1" else None
    if o.name != "stablehlo.compare" or len(o.operands) != 2:
        return None
    direction = str(o.attrs.get("comparison_direction", "")).rsplit(".", 1)[-1].upper()
    for x, c in (o.operands, o.operands[::-1]):
        src, k = local.get(x), _bool_const(local.get(c), local)
        if src is None or src.result_types[0].dtype != "i1" or k is None:
            continue
        if (direction, k) in (("NE", False), ("EQ", True)):
            return x
    return None


def _bool_const(o: Op | None, local: dict[str, Op]) -> bool | None:
    while o is not None and o.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"):
        if o.name == "stablehlo.convert" and o.result_types[0].dtype != "i1":
            return None
        o = local.get(o.operands[0])
    if o is None or o.name != "stablehlo.constant":
        return None
    v = np.asarray(o.attrs.get("value"))
    return bool(v.reshape(-1)[0]) if v.size == 1 and v.dtype == bool else None


_FLIP = {"GT": "LT", "GE": "LE", "LT": "GT", "LE": "GE"}


def _counter_trips(cmp: Op, cond: Block, local: dict[str, Op], body: Block, body_local: dict[str, Op],
                   start: list[int | None]) -> int | None:
    if cmp.name != "stablehlo.compare" or cmp.attrs.get("compare_type") not in (None, "SIGNED"):
        return None
    direction = str(cmp.attrs.get("comparison_direction", "")).rsplit(".", 1)[-1].upper()
    a, b = cmp.operands
    if b in cond.args and a not in cond.args:
        a, b, direction = b, a, _FLIP.get(direction, "")
    if a not in cond.args or direction not in ("LT", "LE"):
        return None
    index = cond.args.index(a)
    t: TensorType = cond.arg_types[index]
    bound, i = _const_int(local.get(b)), start[index]
    if t.dtype not in ("i8", "i16", "i32", "i64") or t.shape != () or bound is None or i is None:
        return None
    step = counter_step(body, index, body_local)  # the counted loops' reading (passes/unroll)
    if step is None:
        return None
    last = bound if direction == "LE" else bound - 1  # the largest counter value the test passes
    trips = 0 if i > last else (last - i) // step + 1
    if i + trips * step > 2 ** (t.bit_width - 1) - 1:  # the counter would wrap and pass the test again
        return None
    return trips


def _const_int(op: Op | None) -> int | None:
    if op is None or op.name != "stablehlo.constant":
        return None
    v = np.asarray(op.attrs.get("value"))
    if v.size != 1 or v.dtype.kind not in "iu":
        return None
    return int(v.reshape(-1)[0])


def _guarded(ctx: OpContext, op: Op, values: list[np.ndarray], pred: np.ndarray, trips: int) -> list[np.ndarray]:
    cond, body = op.regions
    kinds = [Kind.of(t) for t in op.result_types]
    for k in range(trips):
        if k:
            pred = ctx.runner.run_block(cond, values)[0]
        p = pred.reshape(())[()]
        decided = concrete_bool(ctx.alg, p)
        if decided is False:
            return values
        ctx.budget.iteration(op)
        new = ctx.runner.run_block(body, values)
        if decided:
            values = new
            continue
        values = [ctx.alg.select(np.full(n.shape, p, dtype=object) if ctx.alg.symbolic else np.full(n.shape, p),
                                 n, v, kind) for n, v, kind in zip(new, values, kinds)]
    return values


def _branch_merge(ctx: OpContext, op: Op, conds: list, branches: list) -> list[np.ndarray]:
    """Run every branch whose condition is not known false and merge the results."""
    outs = []
    for b in branches:  # a loop, not a comprehension: one Python frame less per nesting level
        outs.append(ctx.runner.run_block(b, []))
    merged = outs[-1]
    for cond, out in zip(reversed(conds[:-1]), reversed(outs[:-1])):
        merged = [ctx.alg.select(np.full(o.shape, cond, dtype=object) if ctx.alg.symbolic else np.full(o.shape, cond),
                                 o, m, Kind.of(t)) for o, m, t in zip(out, merged, op.result_types)]
    return merged


def _case(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    index = args[0].reshape(())[()]
    n = len(op.regions)
    v = ctx.alg.index_value(index)
    if v is not None:
        # Out-of-range indices run the last branch (StableHLO spec).
        return ctx.runner.run_block(op.regions[v if 0 <= v < n else n - 1], [])
    positions = ctx.alg.positions(index, n - 1, clamp=False)
    conds = [c for _, c in positions[: n - 1]] + [True]
    return _branch_merge(ctx, op, conds, list(op.regions))


def _if(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    pred = args[0].reshape(())[()]
    decided = concrete_bool(ctx.alg, pred)
    if decided is not None:
        return ctx.runner.run_block(op.regions[0 if decided else 1], [])
    return _branch_merge(ctx, op, [pred, True], list(op.regions))


def _call(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    name = called_function(op)
    if not isinstance(name, str):  # the error RegionRunner.func raises for a name it does not know
        raise Unsupported(f"call to unknown function @{name}", op.loc, "func.call")
    return ctx.runner.run_call(op, name, args)


def _identity(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return list(args)


def _custom_call(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    target = op.attrs.get("call_target_name", "?")
    if is_noop_custom_call(op, ctx.operand_types):
        return list(args)
    if target in NOOP_CUSTOM_CALLS:
        raise unsupported(op, f"custom_call @{target} whose results' types {list(map(str, op.result_types))} are "
                              f"not its operands' {list(map(str, ctx.operand_types))} (XLA refuses it)")
    rule = linalg.lapack_rule(str(target))
    if rule is not None:
        return rule(ctx, op, args)
    raise unsupported(op, f"custom_call @{target} has no semantics")


def _hint(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    """An op with no results that only guides sharding propagation (sdy.sharding_group:
    its operands are to be sharded alike): nothing to compute."""
    if op.results:
        raise unsupported(op, f"{op.name} with results")
    return []


RULES: dict[str, Rule] = {
    "stablehlo.while": _while,
    "stablehlo.case": _case,
    "stablehlo.if": _if,
    **{name: _call for name in CALLS},
    **{name: _identity for name in VALUE_IDENTITIES},
    "stablehlo.custom_call": _custom_call,
    "sdy.sharding_group": _hint,
}
