"""Shape ops, written once with numpy indexing; they work on numeric and object arrays
alike. Only data-dependent positions (dynamic_slice starts, gather/scatter indices) need
the algebra: a symbolic position becomes a chain of selects over the admissible ones."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.ir import Op
from tv_mlir.semantics.common import OpContext, Rule, unsupported
from tv_mlir.semantics.reduction import simple_reducer

MAX_CANDIDATES = 4096  # symbolic positions enumerated per element before giving up


def _reshape(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [args[0].reshape(op.result_types[0].shape)]


def _transpose(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.transpose(args[0], op.attrs["permutation"]).copy()]


def _broadcast_in_dim(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    dims = list(op.attrs["broadcast_dimensions"])
    out_shape = op.result_types[0].shape
    order = sorted(range(len(dims)), key=dims.__getitem__)  # np.argsort's order: the dims are distinct
    x = np.transpose(x, order) if x.ndim > 1 else x
    shape = [1] * len(out_shape)
    for src, d in enumerate(sorted(dims)):
        shape[d] = x.shape[src]
    return [np.broadcast_to(x.reshape(shape), out_shape).copy()]


def _concatenate(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate(args, axis=op.attrs["dimension"])]


def _slice(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    starts, limits = op.attrs["start_indices"], op.attrs["limit_indices"]
    strides = op.attrs.get("strides") or (1,) * len(starts)
    return [args[0][tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))].copy()]


def _reverse(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.flip(args[0], axis=tuple(op.attrs["dimensions"])).copy()]


def _iota(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    t = op.result_types[0]
    values = np.indices(t.shape)[op.attrs["iota_dimension"]] if t.shape else np.zeros(())
    return [ctx.alg.constant(values, Kind.of(t))]


def _constant(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    t = op.result_types[0]
    value = np.asarray(op.attrs["value"])
    if value.shape != t.shape:
        value = np.broadcast_to(value, t.shape)
    return [ctx.alg.constant(value, Kind.of(t))]


def _pad(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, pad_value = args
    lo, hi, interior = op.attrs["edge_padding_low"], op.attrs["edge_padding_high"], op.attrs["interior_padding"]
    pv = pad_value.reshape(())
    # Interior padding first, then positive edges grow and negative edges crop.
    grown = [n + max(n - 1, 0) * it for n, it in zip(x.shape, interior)]
    inner = np.empty(grown, dtype=x.dtype)
    inner[...] = pv[()] if x.dtype == object else pv
    inner[tuple(slice(None, None, it + 1) for it in interior)] = x
    full_shape = [g + max(l, 0) + max(h, 0) for g, l, h in zip(grown, lo, hi)]
    out = np.empty(full_shape, dtype=x.dtype)
    out[...] = pv[()] if x.dtype == object else pv
    out[tuple(slice(max(l, 0), max(l, 0) + g) for l, g in zip(lo, grown))] = inner
    crop = tuple(slice(max(-l, 0), s - max(-h, 0)) for l, h, s in zip(lo, hi, full_shape))
    return [out[crop].copy()]


# ---------------------------------------------------------------------------
# Data-dependent positions


def _clamped_candidates(alg: Algebra, s: Any, hi: int) -> list[tuple[int, Any]]:
    return alg.positions(s, hi, clamp=True)


def _select_chain(alg: Algebra, kind: Kind, options: Sequence[tuple[Any, Any]]) -> Any:
    return alg.choose(options, kind)


def _combos(per_dim: list[list[tuple[int, Any]]], op: Op, alg: Algebra) -> list[tuple[tuple[int, ...], Any]]:
    total = 1
    for c in per_dim:
        total *= len(c)
    if total > MAX_CANDIDATES:
        raise unsupported(op, f"{op.name} with {total} possible symbolic positions")
    return [(tuple(p for p, _ in combo), alg.all_of([c for _, c in combo])) for combo in itertools.product(*per_dim)]


def _dynamic_slice(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, starts = args[0], [a.reshape(())[()] for a in args[1:]]
    sizes = op.attrs["slice_sizes"]
    per_dim = [_clamped_candidates(ctx.alg, s, n - k) for s, n, k in zip(starts, x.shape, sizes)]
    combos = _combos(per_dim, op, ctx.alg)
    if len(combos) == 1:
        start = combos[0][0]
        return [x[tuple(slice(s, s + k) for s, k in zip(start, sizes))].copy()]
    out = np.empty(tuple(sizes), dtype=object)
    kind = ctx.kind(0)
    for idx in np.ndindex(*sizes):
        out[idx] = _select_chain(ctx.alg, kind,
                                 [(c, x[tuple(s + i for s, i in zip(start, idx))]) for start, c in combos])
    return [out]


def _dynamic_update_slice(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, upd, starts = args[0], args[1], [a.reshape(())[()] for a in args[2:]]
    per_dim = [_clamped_candidates(ctx.alg, s, n - k) for s, n, k in zip(starts, x.shape, upd.shape)]
    combos = _combos(per_dim, op, ctx.alg)
    out = x.copy()
    if len(combos) == 1:
        start = combos[0][0]
        out[tuple(slice(s, s + k) for s, k in zip(start, upd.shape))] = upd
        return [out]
    kind = ctx.kind(0)
    for pos in np.ndindex(*x.shape):
        options = []
        for start, c in combos:
            rel = tuple(p - s for p, s in zip(pos, start))
            if all(0 <= r < k for r, k in zip(rel, upd.shape)):
                options.append((c, upd[rel]))
        if options:
            options.append((True, x[pos]))
            out[pos] = _select_chain(ctx.alg, kind, options)
    return [out]


def _index_vector(indices: np.ndarray, batch_index: tuple[int, ...], ivd: int) -> list[Any]:
    if ivd >= indices.ndim:
        return [indices[batch_index]]
    sel = list(batch_index[:ivd]) + [slice(None)] + list(batch_index[ivd:])
    return list(indices[tuple(sel)])


def _gather(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, indices = args
    dn = op.attrs["dimension_numbers"]
    slice_sizes = op.attrs["slice_sizes"]
    out_shape = op.result_types[0].shape
    batch_dims = [d for d in range(len(out_shape)) if d not in dn.offset_dims]
    window_operand_dims = [d for d in range(x.ndim)
                           if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    out = np.empty(out_shape, dtype=x.dtype)
    kind = ctx.kind(0)
    cache: dict[tuple[int, ...], list[tuple[tuple[int, ...], Any]]] = {}
    for ridx in np.ndindex(*out_shape):
        bidx = tuple(ridx[d] for d in batch_dims)
        if bidx not in cache:
            start_vec = _index_vector(indices, bidx, dn.index_vector_dim)
            per_dim: list[list[tuple[int, Any]]] = [[(0, True)] for _ in range(x.ndim)]
            for d_start, d_op in enumerate(dn.start_index_map):
                per_dim[d_op] = _clamped_candidates(ctx.alg, start_vec[d_start], x.shape[d_op] - slice_sizes[d_op])
            for ob, ib in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
                pos = ib if ib < dn.index_vector_dim else ib - 1
                per_dim[ob] = [(bidx[pos], True)]
            cache[bidx] = _combos(per_dim, op, ctx.alg)
        offs = [ridx[d] for d in dn.offset_dims]
        full_off = [0] * x.ndim
        for d_op, o in zip(window_operand_dims, offs):
            full_off[d_op] = o
        options = [(c, x[tuple(s + o for s, o in zip(start, full_off))]) for start, c in cache[bidx]]
        out[ridx] = _select_chain(ctx.alg, kind, options)
    return [out]


def _scatter(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    n = (len(args) - 1) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    dn = op.attrs["scatter_dimension_numbers"]
    body = op.regions[0]
    kinds = [ctx.kind(i) for i in range(n)]
    results = [a.copy() if a.dtype != object else a.copy() for a in inputs]
    shape = results[0].shape
    upd_shape = updates[0].shape
    scatter_dims = [d for d in range(len(upd_shape)) if d not in dn.update_window_dims]
    window_input_dims = [d for d in range(len(shape))
                         if d not in dn.inserted_window_dims and d not in dn.input_batching_dims]
    window_sizes = [upd_shape[d] for d in dn.update_window_dims]
    full_window = [1] * len(shape)
    for d_in, size in zip(window_input_dims, window_sizes):
        full_window[d_in] = size
    if not ctx.alg.symbolic:
        done = _numeric_scatter(op, results, indices, updates, kinds, scatter_dims, window_input_dims, full_window)
        if done is not None:
            return done
    pending: dict[tuple[int, ...], list[Any]] = {}  # masked updates at symbolic positions, to add
    # A scatter-add of one operand adds masked updates (`_apply`): the 0 they are masked to.
    adds = n == 1 and kinds[0] is not Kind.BOOL and simple_reducer(body) == "add"
    zero = ctx.alg.constant(np.zeros(()), kinds[0])[()] if adds else None
    # The window's start candidates depend on the scatter index alone: worked out once per
    # index, not once per element of its window (an embedding gradient's row of H).
    starts: dict[tuple[int, ...], list[tuple[tuple[int, ...], Any]]] = {}
    for uidx in np.ndindex(*upd_shape):
        sidx = tuple(uidx[d] for d in scatter_dims)
        candidates = starts.get(sidx)
        if candidates is None:
            start_vec = _index_vector(indices, sidx, dn.index_vector_dim)
            start: list[Any] = [0] * len(shape)
            for d_start, d_in in enumerate(dn.scatter_dims_to_operand_dims):
                start[d_in] = start_vec[d_start]
            for ib, sb in zip(dn.input_batching_dims, dn.scatter_indices_batching_dims):
                pos = sb if sb < dn.index_vector_dim else sb - 1
                start[ib] = sidx[pos]
            # XLA skips an update whose whole window does not fit in the operand, so only
            # in-window start positions are candidates.
            per_dim = [ctx.alg.positions(s, shape[d] - full_window[d], clamp=False) for d, s in enumerate(start)]
            candidates = starts[sidx] = _combos(per_dim, op, ctx.alg)
        widx = [0] * len(shape)
        for d_in, d_upd in zip(window_input_dims, dn.update_window_dims):
            widx[d_in] = uidx[d_upd]
        upd_vals = [u[uidx] for u in updates]
        for start_pos, cond in candidates:
            _apply(ctx, body, results, tuple(p + w for p, w in zip(start_pos, widx)), upd_vals, kinds, cond, pending,
                   zero)
    # One sum per position of all its masked updates: added one at a time, the k-th update
    # would copy the k - 1 summands before it (quadratic in the updates a row may receive:
    # an embedding gradient's tokens).
    for pos, summands in pending.items():
        items = np.empty(len(summands) + 1, dtype=object)
        items[0] = results[0][pos]
        items[1:] = summands
        results[0][pos] = ctx.alg.reduce_sum(items, (0,), kinds[0])[()]
    return results


# The numeric ufuncs a scatter body `op(%cur, %upd)` computes, elementwise: each is the
# numeric algebra's own operation (`NumericAlgebra.add/max/min/mul` call exactly these).
_UFUNCS: dict[str, np.ufunc] = {"stablehlo.add": np.add, "stablehlo.maximum": np.maximum,
                                "stablehlo.minimum": np.minimum, "stablehlo.multiply": np.multiply}
VECTOR_SCATTER = True  # the switch the tests flip


def _numeric_scatter(op: Op, results: list[np.ndarray], indices: np.ndarray, updates: list[np.ndarray],
                     kinds: list[Kind], scatter_dims: list[int], window_input_dims: list[int],
                     full_window: list[int]) -> list[np.ndarray] | None:
    """A numeric float scatter whose body is `add/maximum/minimum/multiply(%cur, %upd)`
    in one ufunc.at call, else None (the general path runs the body per update element).

    Why: the numeric runs (three random inputs, each program) ran the body through the
    region interpreter once per update element, a third of their time on the Llama
    training step. Why the values are the same, bit for bit: the general path applies
    `cur = f(cur, upd)` for the update elements in row-major order of the update tensor;
    ufunc.at is unbuffered and applies `f(a[i], b)` for its index list in order, so with
    the update elements flattened row-major the same float64 operations run in the same
    order on each position (rounding, signed zeros and NaN operands included). Only the
    body's operand order (%cur, %upd) is taken: max/min of +0 and -0, and which NaN an add
    returns, follow the operand order. Only floats: integer results are wrapped to their
    width after the op, which this does not change, but an unsigned or 64-bit wrap is not
    worth the argument here. Updates whose window leaves the operand are skipped, as XLA
    (and the general path, `positions(..., clamp=False)`) skip them."""
    body = op.regions[0]
    if (not VECTOR_SCATTER or len(results) != 1 or kinds[0] is not Kind.FLOAT or len(body.ops) != 1
            or len(body.args) != 2):
        return None
    bop = body.ops[0]
    ufunc = _UFUNCS.get(bop.name)
    if (ufunc is None or tuple(bop.operands) != tuple(body.args) or tuple(body.returns) != tuple(bop.results)
            or results[0].dtype != np.float64 or updates[0].dtype != np.float64):
        return None
    dn = op.attrs["scatter_dimension_numbers"]
    out = results[0]
    shape, upd = out.shape, updates[0]
    scatter_shape = tuple(upd.shape[d] for d in scatter_dims)
    # Per scatter index: its window's start and whether the window fits (as the general path).
    starts = np.zeros(scatter_shape + (len(shape),), dtype=np.int64)
    fits = np.zeros(scatter_shape, dtype=bool)
    for sidx in np.ndindex(*scatter_shape):
        start_vec = _index_vector(indices, sidx, dn.index_vector_dim)
        start = [0] * len(shape)
        for d_start, d_in in enumerate(dn.scatter_dims_to_operand_dims):
            start[d_in] = int(start_vec[d_start])
        for ib, sb in zip(dn.input_batching_dims, dn.scatter_indices_batching_dims):
            start[ib] = sidx[sb if sb < dn.index_vector_dim else sb - 1]
        starts[sidx] = start
        fits[sidx] = all(0 <= s <= n - w for s, n, w in zip(start, shape, full_window))
    grid = np.indices(upd.shape, dtype=np.int64)
    at_sidx = tuple(grid[d] for d in scatter_dims)
    # (operand dims,) + update shape; broadcast, as an update without scatter dims (one
    # window, the whole update) indexes `starts` with () and gets one start vector.
    first = np.moveaxis(starts[at_sidx], -1, 0)
    first = first.reshape(first.shape + (1,) * (1 + upd.ndim - first.ndim))
    pos = np.broadcast_to(first, (len(shape),) + upd.shape).copy()
    for d_in, d_upd in zip(window_input_dims, dn.update_window_dims):
        pos[d_in] += grid[d_upd]
    keep = np.broadcast_to(fits[at_sidx], upd.shape)  # boolean masks read row-major: the general path's order
    flat_pos = np.ravel_multi_index(tuple(p[keep] for p in pos), shape) if len(shape) else np.zeros(
        int(keep.sum()), dtype=np.int64)
    acc = out.reshape(-1)  # out is a fresh copy (C order): a view
    ufunc.at(acc, flat_pos, upd[keep])
    return [acc.reshape(shape)]


def _apply(ctx: OpContext, body: Any, results: list[np.ndarray], pos: tuple[int, ...],
           upd_vals: list[Any], kinds: list[Kind], cond: Any, pending: dict[tuple[int, ...], list[Any]],
           zero: Any) -> None:
    """`zero`: the 0 of a scatter-add's one operand (None for any other scatter)."""
    cur = [r[pos] for r in results]
    if cond is not True and zero is not None:
        # A scatter-add to a symbolic position: cur + (update where cond, else 0), not
        # select(cond, cur + update, cur). The same value (x + 0 == x, for inf and NaN
        # too), but the updates stay side by side in one sum instead of nesting one
        # select per update, so a sum of updates at data-dependent rows (an embedding's
        # gradient) is a flat polynomial whose summands each depend on one index. The
        # sum is built once all updates are known (`pending`); addition commutes, also
        # for the IEEE classes, so the updates at concrete positions may come before.
        pending.setdefault(pos, []).append(ctx.alg.choose([(cond, upd_vals[0]), (True, zero)], kinds[0]))
        return
    new = _combine(ctx, body, cur, upd_vals)
    for r, c, nv, k in zip(results, cur, new, kinds):
        if cond is True:
            r[pos] = nv
        else:
            r[pos] = _select_chain(ctx.alg, k, [(cond, nv), (True, c)])


def _combine(ctx: OpContext, body: Any, cur: list[Any], upd: list[Any]) -> list[Any]:
    # The common bodies (`return %upd` for .set, `add` for .add) skip the region interpreter.
    if len(body.ops) == 0 and len(cur) == 1 and body.returns == (body.args[1],):
        return list(upd)
    args = [_scalar(ctx.alg, v) for v in cur + upd]
    outs = ctx.runner.run_block(body, args)
    return [o.reshape(())[()] for o in outs]


def _scalar(alg: Algebra, v: Any) -> np.ndarray:
    return alg.scalar(v)


RULES: dict[str, Rule] = {
    "stablehlo.reshape": _reshape,
    "stablehlo.transpose": _transpose,
    "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.concatenate": _concatenate,
    "stablehlo.slice": _slice,
    "stablehlo.reverse": _reverse,
    "stablehlo.iota": _iota,
    "stablehlo.constant": _constant,
    "stablehlo.pad": _pad,
    "stablehlo.dynamic_slice": _dynamic_slice,
    "stablehlo.dynamic_update_slice": _dynamic_update_slice,
    "stablehlo.gather": _gather,
    "stablehlo.scatter": _scatter,
}
