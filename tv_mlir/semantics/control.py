"""Control flow and ops that are the identity over the reals."""
from __future__ import annotations

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.errors import Unsupported
from tv_mlir.ir import Op
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
            raise unsupported(op, "while loop whose condition does not fold to a constant (data-dependent trip count)")
        if not decided:
            return values
        ctx.budget.iteration(op)
        values = ctx.runner.run_block(body, values)


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
