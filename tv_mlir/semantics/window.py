"""Windowed ops: reduce_window (pooling) and select_and_scatter (its max-pool gradient),
written over the shape rules and `reduce`, so every algebra has them.

reduce_window (StableHLO spec): the inputs are padded (edges from `padding`, interior
`base_dilations - 1`), and result[i] reduces the window that starts at i * window_strides
and steps by window_dilations, with the init value, by the body. As XLA computes it, the
padding and the dilation holes are skipped (the spec fills them with the init value, which
differs only for an init that is not the body's identity). Only the commutative and
associative bodies (`reduction.FAST_REDUCERS`) are modelled: XLA's order of folding is its
own.

select_and_scatter: each window of the operand selects one element (the first, replaced by
each later one that `select(current, later)` rejects, in row-major window order, as XLA
computes it), and the result is init_value everywhere, combined by `scatter` with the
source value of every window that selected the position, in source order. Only unpadded
operands (what jax emits: it pads with a `pad` op first): with padding, XLA's choice among
equal elements differs from that order."""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.ir import Op, TensorType
from tv_mlir.semantics.common import OpContext, Rule, unsupported
from tv_mlir.semantics.reduction import FAST_REDUCERS, _fast_step, simple_reducer
from tv_mlir.semantics.shape import _pad

_BOOL = TensorType((), "i1")


def _attr(op: Op, name: str, rank: int, default: int) -> tuple[int, ...]:
    v = op.attrs.get(name)
    return tuple(int(x) for x in v) if v is not None else (default,) * rank


def _padding(op: Op, rank: int) -> np.ndarray:
    p = op.attrs.get("padding")
    return np.zeros((rank, 2), dtype=np.int64) if p is None else np.asarray(p, dtype=np.int64).reshape(rank, 2)


def _pad_with(ctx: OpContext, op: Op, x: np.ndarray, value: np.ndarray, padding: np.ndarray,
              interior: tuple[int, ...]) -> np.ndarray:
    attrs = {"edge_padding_low": tuple(int(v) for v in padding[:, 0]),
             "edge_padding_high": tuple(int(v) for v in padding[:, 1]), "interior_padding": interior}
    return _pad(ctx, replace(op, attrs=attrs), [x, value])[0]


def _window_index(out_shape: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...],
                  dilations: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Index arrays into the padded input, of shape out_shape + window: the element at window
    offset w of result position i is at i * stride + w * dilation in every dimension."""
    rank = len(out_shape)
    idx = []
    for d in range(rank):
        shape = [1] * (2 * rank)
        shape[d], shape[rank + d] = out_shape[d], window[d]
        pos = np.arange(out_shape[d])[:, None] * strides[d] + np.arange(window[d])[None, :] * dilations[d]
        idx.append(pos.reshape(shape))
    return tuple(idx)


def _reduce_window(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    alg = ctx.alg
    rank = inputs[0].ndim
    window = _attr(op, "window_dimensions", rank, 1)
    strides = _attr(op, "window_strides", rank, 1)
    base = _attr(op, "base_dilations", rank, 1)
    dil = _attr(op, "window_dilations", rank, 1)
    padding = _padding(op, rank)
    out_shape = tuple(op.result_types[0].shape)
    interior = tuple(b - 1 for b in base)
    idx = _window_index(out_shape, window, strides, dil)
    # Which window elements are operand elements: XLA skips padding and the holes of base
    # dilation (the spec pads with the init values, which only differs for an init that is
    # not the body's identity; XLA is what runs).
    present = np.ones(inputs[0].shape, dtype=bool)
    valid = _pad(ctx, replace(op, attrs={"edge_padding_low": tuple(int(v) for v in padding[:, 0]),
                                         "edge_padding_high": tuple(int(v) for v in padding[:, 1]),
                                         "interior_padding": interior}),
                 [present, np.zeros((), dtype=bool)])[0][idx]
    windows = [_pad_with(ctx, op, x, init, padding, interior)[idx] for x, init in zip(inputs, inits)]
    count = int(np.prod(window, dtype=np.int64))
    flat = [w.reshape(out_shape + (count,)) for w in windows]
    mask = valid.reshape(out_shape + (count,))
    kinds = [ctx.kind(i) for i in range(n)]
    fast = simple_reducer(op.regions[0]) if n == 1 else None
    if fast is None:
        # XLA folds a window in an order of its own choosing (seen: not row-major once the
        # base is dilated), so a body that is not commutative and associative (an argmax
        # whose ties go to the later element) has no one meaning: unknown, not a guess.
        raise unsupported(op, f"{op.name} with a reducer body other than one of "
                              f"{', '.join(sorted(FAST_REDUCERS))} (XLA's order of folding a window is its own)")
    init_b = [_broadcast(i, out_shape) for i in inits]
    if fast == "add" and kinds[0] is not Kind.BOOL:
        zero = alg.full(flat[0].shape, 0, kinds[0])
        terms = np.where(mask, flat[0], zero)  # x + 0 == x for every IEEE value
        total = alg.reduce_sum(terms, (len(out_shape),), kinds[0]) if count else alg.full(out_shape, 0, kinds[0])
        return [alg.add(init_b[0], total, kinds[0])]
    # acc = body(acc, x) over the window's operand elements (any order: the body is
    # commutative and associative).
    acc = init_b[0]
    for j in range(count):
        acc = np.where(mask[..., j], _fast_step(ctx, fast, acc, flat[0][..., j], kinds[0], op), acc)
    return [acc]


def _broadcast(init: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if init.dtype != object:
        return np.broadcast_to(init.reshape(()), shape).copy()
    return _filled(shape, init.reshape(())[()])


# ---------------------------------------------------------------------------
# select_and_scatter


def _const(alg: Algebra, mask: np.ndarray) -> np.ndarray:
    return alg.constant(mask, Kind.BOOL)


def _select_and_scatter(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    operand, source, init = args
    alg = ctx.alg
    kind = ctx.kind(0)
    rank = operand.ndim
    window = _attr(op, "window_dimensions", rank, 1)
    strides = _attr(op, "window_strides", rank, 1)
    padding = _padding(op, rank)
    select_body, scatter_body = op.regions
    if padding.any():
        # XLA breaks ties between equal maxima differently once the operand is padded (seen:
        # a later element of the window wins); jax pads with an explicit `pad` op instead.
        raise unsupported(op, f"{op.name} with padding (XLA's choice among equal elements is not modelled)")
    src_shape = source.shape
    if source.size == 0 or operand.size == 0:
        return [_broadcast(init, operand.shape)]
    # Per window offset: the operand position each window looks at (no padding: every
    # position is in the operand).
    offsets = list(itertools.product(*[range(w) for w in window]))
    grid = np.indices(src_shape)
    positions = [tuple(grid[d] * strides[d] + off[d] for d in range(rank)) for off in offsets]
    elems = [operand[pos] for pos in positions]
    # The selection in row-major window order, as XLA folds it: conds[k] says offset k is the
    # one selected (the first element, replaced by each later one that select rejects).
    cur = elems[0]
    conds: list[np.ndarray] = [_const(alg, np.ones(src_shape, dtype=bool))]
    for e in elems[1:]:
        keep = ctx.runner.run_block(select_body, [cur, e], batched=True)[0].reshape(src_shape)
        take = alg.logic("not", keep, None, _BOOL)
        cur = alg.select(take, e, cur, kind)
        conds = [alg.logic("and", c, keep, _BOOL) for c in conds]
        conds.append(take)
    result = np.broadcast_to(init.reshape(()), operand.shape).copy() if init.dtype != object else \
        _filled(operand.shape, init.reshape(())[()])
    if simple_reducer(scatter_body) == "add" and kind is not Kind.BOOL:
        # init + sum over windows of (source where selected, else 0): the masked terms sit in
        # one flat sum (x + 0 == x for every IEEE value), as scatter-add does.
        zero = alg.full(src_shape, 0, kind)
        for pos, c in zip(positions, conds):
            masked = alg.select(c, source, zero, kind)
            if alg.symbolic:
                result = _scatter_add(alg, result, pos, masked, kind)
            else:
                # Numbers: unbuffered in-place adds (repeated positions accumulate), at
                # the original sizes without a Python step per element.
                np.add.at(result, pos, masked)
        return [result]
    if simple_reducer(scatter_body) is None:
        raise unsupported(op, f"{op.name} with a scatter body other than one of {', '.join(sorted(FAST_REDUCERS))} "
                              "(XLA's order of combining overlapping windows is its own)")
    # Per source element in order, combine where selected.
    for s_idx in np.ndindex(*src_shape):
        for pos, c in zip(positions, conds):
            tgt = tuple(int(p[s_idx]) for p in pos)
            cur_v = result[tgt]
            new = ctx.runner.run_block(scatter_body, [alg.scalar(cur_v), alg.scalar(source[s_idx])])[0]
            result[tgt] = alg.select(alg.scalar(c[s_idx]), new.reshape(()), alg.scalar(cur_v), kind)[()]
    return [result]


def _filled(shape: tuple[int, ...], item: Any) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    out.fill(item)
    return out


def _scatter_add(alg: Algebra, result: np.ndarray, pos: tuple[np.ndarray, ...], masked: np.ndarray,
                 kind: Kind) -> np.ndarray:
    """result[pos] += masked, one source element at a time (overlapping windows add to the
    same position in turn)."""
    for s_idx in np.ndindex(*masked.shape):
        tgt = tuple(int(p[s_idx]) for p in pos)
        result[tgt] = alg.add(alg.scalar(result[tgt]), alg.scalar(masked[s_idx]), kind)[()]
    return result


RULES: dict[str, Rule] = {
    "stablehlo.reduce_window": _reduce_window,
    "stablehlo.select_and_scatter": _select_and_scatter,
}
