"""Contractions and orderings: reduce, dot_general, sort, chlo.top_k."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.ir import Block, DotDims, Op
from tv_mlir.semantics.common import OpContext, Rule

# Reducer bodies recognised as a single op on the two block arguments.
FAST_REDUCERS = {"stablehlo.add": "add", "stablehlo.maximum": "max", "stablehlo.minimum": "min",
                 "stablehlo.multiply": "mul", "stablehlo.and": "and", "stablehlo.or": "or"}


def simple_reducer(body: Block) -> str | None:
    """The algebra operation of a reducer body that is one of `FAST_REDUCERS` applied to
    its two arguments, else None (a custom body runs element by element)."""
    if len(body.ops) != 1 or len(body.args) != 2:
        return None
    op = body.ops[0]
    if op.name in FAST_REDUCERS and set(op.operands) == set(body.args) and body.returns == op.results:
        return FAST_REDUCERS[op.name]
    return None


def _reduce(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    dims = tuple(op.attrs["dimensions"])
    body = op.regions[0]
    keep_shape = tuple(s for d, s in enumerate(inputs[0].shape) if d not in dims)
    kinds = [ctx.kind(i) for i in range(n)]
    # The reduced length explicitly: reshape(..., -1) is ambiguous when a kept dim is empty.
    count = int(np.prod([inputs[0].shape[d] for d in dims], dtype=np.int64))
    moved = [np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim))).reshape(keep_shape + (count,))
             for x in inputs]
    fast = simple_reducer(body) if n == 1 else None
    alg = ctx.alg
    init_b = [np.broadcast_to(i.reshape(()), keep_shape).copy() if i.dtype != object
              else _fill(keep_shape, i.reshape(())[()]) for i in inits]
    if fast == "add" and kinds[0] is not Kind.BOOL:
        total = alg.reduce_sum(moved[0], (moved[0].ndim - 1,), kinds[0]) if count else alg.full(keep_shape, 0, kinds[0])
        return [alg.add(init_b[0], total, kinds[0])]
    accs = init_b
    for j in range(count):
        items = [m[..., j] for m in moved]
        if fast is not None:
            accs = [_fast_step(ctx, fast, accs[0], items[0], kinds[0], op)]
        else:
            outs = ctx.runner.run_block(body, accs + items, batched=True)
            accs = [o.reshape(keep_shape) if o.shape != keep_shape else o for o in outs]
    return accs


def _fill(shape: tuple[int, ...], item: Any) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    out.fill(item)
    return out


def _fast_step(ctx: OpContext, name: str, acc: np.ndarray, x: np.ndarray, kind: Kind, op: Op) -> np.ndarray:
    alg = ctx.alg
    if name in ("and", "or"):
        return alg.logic(name, acc, x, ctx.operand_types[0])
    return {"add": alg.add, "max": alg.max, "min": alg.min, "mul": alg.mul}[name](acc, x, kind)


def _dot_general(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    lhs, rhs = args
    dn = op.attrs["dot_dimension_numbers"]
    lb, rb, lc, rc = list(dn.lhs_batch), list(dn.rhs_batch), list(dn.lhs_contracting), list(dn.rhs_contracting)
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    # math.prod of the dimension sizes (Python ints): np.prod of a list costs microseconds
    # per call, six per dot, in every numeric and symbolic run.
    size = lambda x, ds: math.prod([x.shape[d] for d in ds])  # noqa: E731
    a = np.transpose(lhs, lb + lf + lc).reshape(size(lhs, lb), size(lhs, lf), size(lhs, lc))
    b = np.transpose(rhs, rb + rf + rc).reshape(size(rhs, rb), size(rhs, rf), size(rhs, rc))
    kind = ctx.kind(0)
    if Kind.of(op.result_types[0]) is not kind:
        # Mixed-type dots (e.g. i8 x i8 -> i32) compute in the result type.
        a = ctx.alg.convert(a, ctx.operand_types[0], op.result_types[0])
        b = ctx.alg.convert(b, ctx.operand_types[1], op.result_types[0])
        kind = Kind.of(op.result_types[0])
    out = ctx.alg.dot(a, b, kind)
    return [out.reshape(op.result_types[0].shape)]


def _dot(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    """stablehlo.dot (what XLA's HLO converts back to): vector·vector, matrix·vector and
    matrix·matrix, contracting the lhs's last dimension with the rhs's first."""
    lhs, rhs = args
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise ValueError(f"dot of ranks {lhs.ndim} and {rhs.ndim}")
    dims = DotDims((), (), (lhs.ndim - 1,), (0,))
    return _dot_general(ctx, replace(op, attrs={**op.attrs, "dot_dimension_numbers": dims}), args)


def _sort_network(ctx: OpContext, columns: list[np.ndarray], kinds: list[Kind], less: Any) -> list[np.ndarray]:
    """Odd-even transposition sort along the last axis. Adjacent elements swap only when the
    later one is strictly less, so equal elements never cross: the sort is stable."""
    cols = [[c[..., j] for j in range(c.shape[-1])] for c in columns]
    n = columns[0].shape[-1]
    for rnd in range(n):
        for i in range(rnd % 2, n - 1, 2):
            a = [c[i] for c in cols]
            b = [c[i + 1] for c in cols]
            swap = less(b, a)
            for c, k in zip(cols, kinds):
                lo = ctx.alg.select(swap, c[i + 1], c[i], k)
                hi = ctx.alg.select(swap, c[i], c[i + 1], k)
                c[i], c[i + 1] = lo, hi
    return [np.stack(c, axis=-1) for c in cols]


def _sort(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    dim = op.attrs.get("dimension", -1)
    dim = dim if dim >= 0 else args[0].ndim + dim
    body = op.regions[0]
    kinds = [ctx.kind(i) for i in range(len(args))]
    moved = [np.moveaxis(a, dim, -1) for a in args]

    def less(b: list[np.ndarray], a: list[np.ndarray]) -> np.ndarray:
        interleaved = [x for pair in zip(b, a) for x in pair]
        return ctx.runner.run_block(body, interleaved, batched=True)[0]

    if moved[0].shape[-1] <= 1:
        return [a.copy() for a in args]
    out = _sort_network(ctx, moved, kinds, less)
    return [np.moveaxis(o, -1, dim).copy() for o in out]


def _top_k(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    k = op.attrs["k"]
    kind = ctx.kind(0)
    idx = ctx.alg.constant(np.broadcast_to(np.arange(x.shape[-1]), x.shape).copy(), Kind.INT)

    def greater(b: list[np.ndarray], a: list[np.ndarray]) -> np.ndarray:
        return ctx.alg.compare("GT", b[0], a[0], kind, True)

    if x.shape[-1] <= 1:
        vals, inds = x, idx
    else:
        vals, inds = _sort_network(ctx, [x, idx], [kind, Kind.INT], greater)
    return [vals[..., :k].copy(), inds[..., :k].copy()]


RULES: dict[str, Rule] = {
    "stablehlo.reduce": _reduce,
    "stablehlo.dot_general": _dot_general,
    "stablehlo.dot": _dot,
    "stablehlo.sort": _sort,
    "chlo.top_k": _top_k,
}
