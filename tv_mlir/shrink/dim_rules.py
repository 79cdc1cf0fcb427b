"""What each op does to dimension classes (`dims.py`), one rule per op name, in the spirit
of the semantics table: `rule(walker, op, why)` joins the dims the op forces equal, records
scale and product relations, and marks or pins classes. An op without a rule is pinned:
`PINNING` lists the ops for which that is the decided answer, with the reason that goes
into the pin; any other op is pinned as "not analysed". Every op of the semantics table
is in one of the two (tests/test_dim_rules.py)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tv_mlir.frontend.classify import parse_gspmd
from tv_mlir.ir import ConvDims, Op, ScatterDims, Sharding, TensorType
from tv_mlir.semantics.ops import (
    ASSOCIATIVE_REDUCERS,
    BRANCHES,
    BROADCASTING_ELEMENTWISE,
    DEVICE_IDS,
    DOTS,
    DYNAMIC_SLICES,
    ELEMENTWISE,
    NOOP_CUSTOM_CALLS,
    SAME_SHAPE_COLLECTIVES,
    SHARD_CALLS,
    VALUE_IDENTITIES,
)
from tv_mlir.shrink.scatters import DataScatter, data_scatter
from tv_mlir.shrink.walker import Node, Walker

DimRule = Callable[[Walker, Op, str], None]  # (walker, op, "op at loc")

# Rule (h) for scatter (docs/shrinking.md, "Scatter and convolution"): window dims a
# scatter takes whole are elementwise, and a window written at constant start indices is a
# slice of the operand at constant distances from its ends. Off: every scatter pins.
SCATTER = True
# The scatter's end zones: a window written at constant indices is read at distances up
# to its start and end from the dim's ends (halo width), and widens the result's zones by
# them. Off: no zone (a row written at index 5 falls off a class shrunk below 6, where the
# scatter skips it in both twins: scatter_row).
SCATTER_ZONES = True
# Rule (h) for convolution: batch and output features are free, input features summed
# (Newton, like a contraction), spatial dims an offset (stride 1) or a scale by the stride
# (plus a constant) of the output's. Off: every convolution pins.
CONVOLUTION = True
# The convolution's end zones: its padding widens the result's zones and the window's
# reach (padding, K - 1) is a halo width of the input's class, as slices and pads are.
# Off: the convolution adds no zone (a bug at interior positions hides: conv_interior).
CONV_ZONES = True
# Halves (docs/shrinking.md, "Halves"): a slice of exactly the front or back half of a dim
# ([0:n/2], [n/2:n], RoPE's rotate-half) and a concatenation of k pieces of one size are
# the dim read as a product (k, n/k), its major factor the piece index, pinned at k: the
# pieces are the minor factor's class. Off: a bound in the middle and equal pieces pin.
HALVES = True
# Halves by padding: a pad of a dim by exactly its own size on one side (`pad(x, lo=n)`,
# the transpose of a half slice, written by jax for RoPE's backward) is the concatenation
# of x with an equally large piece of the padding value, read as halves are. Off: an
# offset of n, which pins where the class is also sharded or reshaped.
PAD_HALVES = True


def _elementwise(w: Walker, op: Op, why: str) -> None:
    # Lower-rank operands are scalars (select's predicate, clamp's bounds): no dims to join.
    for o in op.results:
        for i in op.operands:
            if len(w.types[i].shape) == len(w.types[o].shape):
                w.same(i, o, why)


def _bitcast_convert(w: Walker, op: Op, why: str) -> None:
    # Same bit width: elementwise. A width change adds or drops a minor dim of the width
    # ratio, whose positions are bytes of one element: the shared dims join, that one pins.
    src, out = op.operands[0], op.results[0]
    rs, ro = len(w.types[src].shape), len(w.types[out].shape)
    w.same(src, out, why, [(d, d) for d in range(min(rs, ro))])
    if rs != ro:
        v = src if rs > ro else out
        w.uf.pin(w.node(v, max(rs, ro) - 1), f"bitcast_convert at {op.loc} changes the bit width")


def _constant(w: Walker, op: Op, why: str) -> None:
    # A splat is the same at every position; a table of distinct values is not.
    value = op.attrs.get("value")
    if value is not None and getattr(value, "size", 1) > 1 and len(set(value.reshape(-1).tolist())) > 1:
        w.pin_all(op.results[0], f"non-splat constant at {op.loc}")


def _iota(w: Walker, op: Op, why: str) -> None:
    w.uf.mark(w.node(op.results[0], int(op.attrs.get("iota_dimension", 0))), "iota", op.loc)


def _broadcast_in_dim(w: Walker, op: Op, why: str) -> None:
    # A size-1 operand dim broadcast to a larger one is a new dim, not the operand's.
    src, out = op.operands[0], op.results[0]
    shape = w.types[src].shape
    dims = list(op.attrs.get("broadcast_dimensions", ()))
    w.same(src, out, why, [(j, d) for j, d in enumerate(dims) if shape[j] != 1 or w.types[out].shape[d] == 1])


def _transpose(w: Walker, op: Op, why: str) -> None:
    perm = list(op.attrs["permutation"])
    w.same(op.operands[0], op.results[0], why, [(p, i) for i, p in enumerate(perm)])


def _same_shape(w: Walker, op: Op, why: str) -> None:
    # all_reduce sums across devices, not along a dimension: shapes are kept.
    for i, o in zip(op.operands, op.results):
        w.same(i, o, why)


def _gather_or_scatter_collective(w: Walker, op: Op, why: str) -> None:
    gathers = op.name.endswith("gather")
    dim = int(op.attrs["all_gather_dim" if gathers else "scatter_dimension"])
    for i, o in zip(op.operands, op.results):
        w.same(i, o, why, [(d, d) for d in range(len(w.types[i].shape)) if d != dim])
        big, small = (o, i) if gathers else (i, o)
        k = max(1, w.types[big].shape[dim] // max(1, w.types[small].shape[dim]))
        w.scale(w.node(big, dim), w.node(small, dim), k)


def _all_to_all(w: Walker, op: Op, why: str) -> None:
    sd, cd, k = int(op.attrs["split_dimension"]), int(op.attrs["concat_dimension"]), int(op.attrs["split_count"])
    for i, o in zip(op.operands, op.results):
        w.same(i, o, why, [(d, d) for d in range(len(w.types[i].shape)) if d not in (sd, cd)])
        if sd != cd:
            w.scale(w.node(i, sd), w.node(o, sd), k)
            w.scale(w.node(o, cd), w.node(i, cd), k)
        else:
            w.same(i, o, why, [(sd, sd)])


def _no_dims(w: Walker, op: Op, why: str) -> None:
    """Device ids are scalars: nothing to join or pin."""


def anchor(p: int, n: int) -> tuple[bool, int] | None:
    """A slice bound `p` of a dim of size `n`, counted from the nearer end: (True, p) from
    the front, (False, n - p) from the back; None when both ends are as near (the middle
    of the dim: a half is no halo). The rewrite keeps the bound at that distance from that
    end (`rewrite.py`)."""
    if 2 * p < n:
        return True, p
    if 2 * p > n:
        return False, n - p
    return None


def _pad(w: Walker, op: Op, why: str) -> None:
    # A pad by constant amounts (no interior padding) is an offset relation: the result is
    # the operand plus lo + hi; lo and hi are the halo widths it adds.
    src, out = op.operands[0], op.results[0]
    lo, hi, inner = (op.attrs.get(k, ()) for k in ("edge_padding_low", "edge_padding_high", "interior_padding"))
    for d, n in enumerate(w.types[src].shape):
        if lo[d] == hi[d] == inner[d] == 0:
            w.same(src, out, why, [(d, d)])
        elif HALVES and PAD_HALVES and inner[d] == 0 and n > 0 and (lo[d], hi[d]) in ((n, 0), (0, n)):
            # A pad by the operand's own size is the concatenation of it with a piece of
            # the padding value as large (the transpose of a half slice: RoPE's backward).
            piece = _pieces(w, out, d, 2, n, f"pad at {op.loc}")
            w.uf.union(w.node(src, d), piece, why)
        elif inner[d] == 0 and w.types[src].shape[d] > 0:
            w.offset(w.node(src, d), w.node(out, d), lo[d] + hi[d], lo[d], hi[d], f"pad at {op.loc}", out)
        else:
            w.uf.pin(w.node(src, d), f"pad at {op.loc}")
            w.uf.pin(w.node(out, d), f"pad at {op.loc}")


def _concatenate(w: Walker, op: Op, why: str) -> None:
    # The largest operand is the class; the other pieces have constant widths (a halo
    # received from a neighbour, a pad written as a concatenation): pinned, and the result
    # is an offset of the largest one. Two pieces as large as each other pin everything.
    out = op.results[0]
    dim = int(op.attrs["dimension"])
    sizes = [w.types[i].shape[dim] for i in op.operands]
    for i in op.operands:
        w.same(i, out, why, [(d, d) for d in range(len(w.types[i].shape)) if d != dim])
    big = max(range(len(sizes)), key=lambda k: sizes[k]) if sizes else 0
    if HALVES and len(sizes) >= 2 and len(set(sizes)) == 1 and sizes[0] > 0:
        # k pieces of one size stacked along the dim: the result is (k, piece) row-major,
        # the piece index its major factor (pinned at k), each piece the minor factor.
        minor = _pieces(w, out, dim, len(sizes), sizes[0], f"concatenate at {op.loc}")
        for i in op.operands:
            w.uf.union(w.node(i, dim), minor, why)
        return
    if len(sizes) < 2 or sorted(sizes)[-2] == sizes[big]:
        for i in op.operands:
            w.uf.pin(w.node(i, dim), f"concatenate at {op.loc}")
        w.uf.pin(w.node(out, dim), f"concatenate at {op.loc}")
        return
    front, back = sum(sizes[:big]), sum(sizes[big + 1:])
    for k, i in enumerate(op.operands):
        if k != big:
            w.uf.pin(w.node(i, dim), f"a piece of constant width {sizes[k]} concatenated at {op.loc}")
    w.offset(w.node(op.operands[big], dim), w.node(out, dim), front + back, front, back,
             f"concatenate at {op.loc}", out)


def _custom_call(w: Walker, op: Op, why: str) -> None:
    target = op.attrs.get("call_target_name")
    ins, outs = op.operands, op.results
    if target in NOOP_CUSTOM_CALLS and ins and len(ins) == len(outs):
        # Identities in the semantics too (semantics/control.py): each result is its operand.
        for a, b in zip(ins, outs):
            w.same(a, b, why)
    elif target in SHARD_CALLS:
        to_shard = target == "SPMDFullToShardShape"
        text = op.attrs.get("tv.full_sharding" if to_shard else "mhlo.sharding")
        g, loc = (ins[0], outs[0]) if to_shard else (outs[0], ins[0])
        s = parse_gspmd(text, len(w.types[g].shape), w.module.num_devices, op.loc) if text else None
        w.sharded(g, loc, s if isinstance(s, Sharding) else None, why)
    else:
        for v in ins + outs:
            w.pin_all(v, f"custom_call @{target} at {op.loc}")


def _manual_computation(w: Walker, op: Op, why: str) -> None:
    body = op.regions[0]
    w.bind(body.args, body.arg_types)
    for g, loc, s in zip(op.operands, body.args, op.attrs.get("in_shardings", ())):
        w.sharded(g, loc, s, why)
    w.ops(body)
    for g, loc, s in zip(op.results, body.returns, op.attrs.get("out_shardings", ())):
        w.sharded(g, loc, s, why)


def _while(w: Walker, op: Op, why: str) -> None:
    ins, outs = op.operands, op.results
    for r in op.regions:
        w.bind(r.args, r.arg_types)
        for a, i in zip(r.args, ins):
            w.same(a, i, why)
        w.ops(r)
    for ret, i, o in zip(op.regions[1].returns, ins, outs):
        w.same(ret, o, why)
        w.same(i, o, why)


def _branches(w: Walker, op: Op, why: str) -> None:
    for r in op.regions:
        w.ops(r)
        for ret, o in zip(r.returns, op.results):
            w.same(ret, o, why)


def _call(w: Walker, op: Op, why: str) -> None:
    # The callee's body is walked once, as a function of the module: a call joins its
    # arguments and results with the call's operands and results.
    ins, outs = op.operands, op.results
    callee = w.module.funcs.get(op.attrs.get("callee", ""))
    if callee is None:
        for v in ins + outs:
            w.pin_all(v, f"call to an unknown function at {op.loc}")
        return
    for a, i in zip(callee.body.args, ins):
        w.same(a, i, why)
    for ret, o in zip(callee.body.returns, outs):
        w.same(ret, o, why)


def _reduce(w: Walker, op: Op, why: str) -> None:
    ins, outs = op.operands, op.results
    n = len(ins) // 2
    dims = set(op.attrs["dimensions"])
    body = op.regions[0].ops
    by = body[0].name if len(body) == 1 else "a custom reducer"
    for i in ins[:n]:
        kept = [d for d in range(len(w.types[i].shape)) if d not in dims]
        for o in outs:
            w.same(i, o, why, list(zip(kept, range(len(kept)))))
        for d in dims:
            w.uf.mark(w.node(i, d), "reduced", by)
            if by not in ASSOCIATIVE_REDUCERS:
                w.uf.pin(w.node(i, d), f"reduce with {by} at {op.loc}")


def _dot(w: Walker, op: Op, why: str) -> None:
    lhs, rhs = op.operands
    out = op.results[0]
    dn = op.attrs.get("dot_dimension_numbers")
    rl, rr = len(w.types[lhs].shape), len(w.types[rhs].shape)
    lb, rb = (list(dn.lhs_batch), list(dn.rhs_batch)) if dn else ([], [])
    lc, rc = (list(dn.lhs_contracting), list(dn.rhs_contracting)) if dn else ([rl - 1], [0])
    for a, b in zip(lb, rb):
        w.uf.union(w.node(lhs, a), w.node(rhs, b), why)
    for a, b in zip(lc, rc):
        w.uf.union(w.node(lhs, a), w.node(rhs, b), why)
        w.uf.mark(w.node(lhs, a), "reduced", "stablehlo.dot_general")
    lf = [d for d in range(rl) if d not in lb and d not in lc]
    rf = [d for d in range(rr) if d not in rb and d not in rc]
    result_axes = [(lhs, d) for d in lb] + [(lhs, d) for d in lf] + [(rhs, d) for d in rf]
    for k, (v, d) in enumerate(result_axes):
        w.uf.union(w.node(v, d), w.node(out, k), why)


def _slice(w: Walker, op: Op, why: str) -> None:
    # Each bound is counted from the nearer end (`anchor`): both from one end is a piece of
    # constant width (a halo sent to a neighbour: pinned); start from the front and limit
    # from the back is an offset relation (the operand minus both). Strides pin.
    src, dst = op.operands[0], op.results[0]
    starts, limits = op.attrs["start_indices"], op.attrs["limit_indices"]
    strides = op.attrs.get("strides") or (1,) * len(starts)
    for d, n in enumerate(w.types[src].shape):
        if starts[d] == 0 and limits[d] == n and strides[d] == 1:
            w.same(src, dst, why, [(d, d)])
            continue
        a, b = anchor(starts[d], n), anchor(limits[d], n)
        where = f"slice [{starts[d]}:{limits[d]}] at {op.loc}"
        if HALVES and strides[d] == 1 and n % 2 == 0 and n >= 2 and \
                (starts[d], limits[d]) in ((0, n // 2), (n // 2, n)):
            # The front or back half: piece 0 or 1 of the dim read as (2, n/2).
            w.uf.union(w.node(dst, d), _pieces(w, src, d, 2, n // 2, where), why)
            continue
        if strides[d] != 1 or a is None or b is None or (not a[0] and b[0]):
            w.uf.pin(w.node(src, d), where)
            w.uf.pin(w.node(dst, d), where)
        elif a[0] == b[0]:
            w.uf.pin(w.node(dst, d), f"a piece of constant width {limits[d] - starts[d]}: {where}")
            w.halos.append((w.node(src, d), max(a[1], b[1]), where, dst, 0, 0))
        else:
            w.offset(w.node(src, d), w.node(dst, d), -(a[1] + b[1]), -a[1], -b[1], where, dst)


def _pieces(w: Walker, whole: str, d: int, k: int, piece: int, where: str) -> Node:
    """Dim d of `whole` as the product (k, piece): a major atom of size k, pinned (the
    pieces' count is no size of the program's data), and a minor atom, returned, that the
    pieces join. Named after the whole's dim, so both halves of one dim share them."""
    major, minor = f"{whole}~pieces{d}x{k}", f"{whole}~piece{d}x{k}"  # k: two splits of one dim differ
    w.bind((major, minor), (TensorType((k,), "atom"), TensorType((piece,), "atom")))
    w.uf.pin(w.node(major, 0), f"the {k} pieces of a dim ({where})")
    w.products.append((w.node(whole, d), (w.node(major, 0), w.node(minor, 0))))
    return w.node(minor, 0)


def _dynamic_slice(w: Walker, op: Op, why: str) -> None:
    """Full-size dims keep their class; a block of a dim that the block size divides is
    a scale relation, with the start offsets tied to the block size (shrink.constants
    checks them); anything else pins."""
    if op.name == "stablehlo.dynamic_slice":
        big, small, also = op.operands[0], op.results[0], None
    else:
        big, small, also = op.operands[0], op.operands[1], op.results[0]
    if also is not None:
        w.same(big, also, why)
    for d, n in enumerate(w.types[big].shape):
        m = w.types[small].shape[d]
        if m == n:
            w.same(big, small, why, [(d, d)])
        elif m > 0 and n % m == 0:
            w.scale(w.node(big, d), w.node(small, d), n // m)
            w.uf.mark(w.node(big, d), "blocked", op.loc)
        else:
            w.uf.pin(w.node(big, d), f"{op.name} at {op.loc}")
            w.uf.pin(w.node(small, d), f"{op.name} at {op.loc}")


def _gather(w: Walker, op: Op, why: str) -> None:
    """The data-indexed take (take_along_axis, an embedding lookup): collapsed dims of
    slice size 1 are indexed by data; dims taken whole keep their class; batching
    dims pair with the indices'. Other gathers pin."""
    operand, indices = op.operands[:2]
    out = op.results[0]
    g = op.attrs.get("dimension_numbers")
    sizes = tuple(op.attrs.get("slice_sizes", ()))
    ot, it = w.types[operand], w.types[indices]
    if g is None or len(sizes) != len(ot.shape):
        for v in (operand, indices, out):
            w.pin_all(v, f"gather at {op.loc}")
        return
    index_dims = [d for d in range(len(it.shape)) if d != g.index_vector_dim]
    batch_out = [d for d in range(len(w.types[out].shape)) if d not in g.offset_dims]
    for d_in, d_out in zip(index_dims, batch_out):
        w.same(indices, out, why, [(d_in, d_out)])
    for a, b in zip(g.operand_batching_dims, g.start_indices_batching_dims):
        w.same(operand, indices, why, [(a, b)])
    window = [d for d in range(len(ot.shape)) if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
    for d, d_out in zip(window, g.offset_dims):
        if sizes[d] == ot.shape[d] and d not in g.start_index_map:
            w.same(operand, out, why, [(d, d_out)])
        else:
            w.uf.pin(w.node(operand, d), f"gather window at {op.loc}")
            w.uf.pin(w.node(out, d_out), f"gather window at {op.loc}")
    for d in g.start_index_map:
        if d in g.collapsed_slice_dims and sizes[d] == 1:
            w.uf.mark(w.node(operand, d), "indexed", op.loc)
        elif sizes[d] != ot.shape[d]:
            w.uf.pin(w.node(operand, d), f"gather at {op.loc}")


def _constant_ints(w: Walker, value: str) -> np.ndarray | None:
    """A constant integer operand's values, also a scalar constant broadcast or reshaped
    (jax writes a scatter's index 0 as a broadcast scalar); None otherwise."""
    op, moved = w.producer(value), False
    while op is not None and op.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape"):
        op, moved = w.producer(op.operands[0]), True
    if op is None or op.name != "stablehlo.constant":
        return None
    v = np.asarray(op.attrs.get("value"))
    if v.dtype.kind not in "iu" or (moved and v.size != 1):
        return None
    shape = w.types[value].shape
    return np.broadcast_to(v.reshape(-1)[0], shape) if v.size == 1 else v.reshape(shape)


def _window_start(w: Walker, indices: str, sd: ScatterDims) -> dict[int, int] | None:
    """Operand dim -> start of the one window a scatter writes when its indices are a
    constant holding a single index vector (no scatter batch dims); None otherwise."""
    vals = _constant_ints(w, indices)
    shape = w.types[indices].shape
    vec = sd.index_vector_dim
    batch = [n for d, n in enumerate(shape) if d != vec]
    if vals is None or sd.input_batching_dims or any(n != 1 for n in batch):
        return None
    flat = vals.reshape(-1)
    if len(flat) != len(sd.scatter_dims_to_operand_dims):
        return None
    return {d: int(x) for d, x in zip(sd.scatter_dims_to_operand_dims, flat)}


def _scatter(w: Walker, op: Op, why: str) -> None:
    """Each result is its operand with windows of the updates combined in. Along an
    operand dim that every window covers whole from 0 (not addressed by the indices), the
    scatter does the same at every position: the operand, update and result dims are one
    class. A window written at constant start indices (one index vector) is a slice of the
    operand read at constant distances from its ends (rule h): its update dim is an
    offset of the operand's, or a piece of constant width; the result's zones widen by the
    positions before and after the window. Dims addressed by data indices, scatter batch
    dims and windows in the middle of a dim pin."""
    n = len(op.operands) // 2
    inputs, indices, updates = op.operands[:n], op.operands[n], op.operands[n + 1:]
    sd = op.attrs.get("scatter_dimension_numbers")
    if not SCATTER or not isinstance(sd, ScatterDims) or len(updates) != n or n == 0:
        for v in op.operands + op.results:
            w.pin_all(v, f"stablehlo.scatter at {op.loc} reads positions")
        return
    for i, o in zip(inputs, op.results):
        w.same(i, o, why)
    start = _window_start(w, indices, sd)
    reading = data_scatter(op, lambda v: w.types[v].shape) if start is None else None
    if reading is not None:
        _data_scatter(w, op, sd, reading, why)
        return
    rank = len(w.types[inputs[0]].shape)
    windowed = [d for d in range(rank) if d not in sd.inserted_window_dims and d not in sd.input_batching_dims]
    where = f"scatter at {op.loc}"
    for d in range(rank):
        if d in windowed:
            continue
        # An inserted window dim (window size 1 at its index) or a batching dim.
        c = start.get(d, 0) if start is not None and d in sd.inserted_window_dims else None
        at = anchor(c, w.types[inputs[0]].shape[d]) if c is not None else None
        for i, o in zip(inputs, op.results):
            if at is None or not at[0]:
                w.uf.pin(w.node(i, d), f"{where} addresses it by index")
            elif SCATTER_ZONES and c is not None:  # at is only set where c is
                w.halos.append((w.node(i, d), c + 1, where, o, c + 1, 0))
    for d, du in zip(windowed, sd.update_window_dims):
        size = w.types[inputs[0]].shape[d]
        if d in sd.scatter_dims_to_operand_dims:
            c = start.get(d) if start is not None else None
        else:
            c = 0  # not addressed: every window starts at 0 along it
        for i, u, o in zip(inputs, updates, op.results):
            m = w.types[u].shape[du]
            if c == 0 and m == size:
                w.same(i, u, why, [(d, du)])
                continue
            a, b = (anchor(c, size), anchor(c + m, size)) if c is not None and 0 <= c <= size - m else (None, None)
            if a is None or b is None or not a[0]:
                # Data indices, or a start counted from the back (the index constant would
                # have to move with the size), or a window in the middle.
                w.uf.pin(w.node(i, d), f"{where} addresses it by index")
                w.uf.pin(w.node(u, du), f"{where} addresses it by index")
            elif b[0]:
                w.uf.pin(w.node(u, du), f"a window of constant width {m} written at {where}")
                if SCATTER_ZONES:
                    w.halos.append((w.node(i, d), b[1], where, o, b[1], 0))
            else:
                w.offsets.append((w.node(i, d), w.node(u, du), m - size))
                if SCATTER_ZONES:
                    w.halos.append((w.node(i, d), max(a[1], b[1]), where, o, a[1], b[1]))
    scatter_dims = [d for d in range(len(w.types[updates[0]].shape)) if d not in sd.update_window_dims]
    for u in updates:
        for d in scatter_dims:
            w.uf.pin(w.node(u, d), f"{where}: scatter dims (one window per index)")
    w.pin_all(indices, f"{where}: its indices")


def _data_scatter(w: Walker, op: Op, sd: ScatterDims, r: DataScatter, why: str) -> None:
    """A scatter-add by data indices read as `Z + onehot(I)^T U` (shrink/scatters.py): the
    addressed dim is indexed by data, as a gather's; every other operand dim is a window
    taken whole (joined with the update's) or a batching dim (joined with the indices' and
    the updates' own); the tokens' dims of the indices and updates are one class, summed
    (the one-hot contraction's contracting dims)."""
    operand, indices, updates = op.operands
    w.uf.mark(w.node(operand, r.addressed), "indexed", op.loc)
    windowed = [d for d in range(len(w.types[operand].shape))
                if d != r.addressed and d not in sd.input_batching_dims]
    for d, du in zip(windowed, sd.update_window_dims):
        w.same(operand, updates, why, [(d, du)])
    for d, b, du in r.batched:
        w.same(operand, indices, why, [(d, b)])
        w.same(indices, updates, why, [(b, du)])
    for b, du in r.summed:
        w.same(indices, updates, why, [(b, du)])
        w.uf.mark(w.node(updates, du), "reduced", "stablehlo.scatter")


def _convolution(w: Walker, op: Op, why: str) -> None:
    """Batch and output feature dims are free (each output element is the same dot
    product of its own batch row and kernel column); input features are summed like a
    dot_general's contracting dims (marked reduced: Newton's degree). A spatial dim is
    windows of K = (k - 1) rhs_dilation + 1 input positions every `stride`: with stride 1
    the output is an offset of the input (size n + lo + hi - K + 1), a pad then K slices
    (rule h); with stride s the output position t reads blocks t + c of s input positions,
    so the input is s x output (+ e, the constant left over): a scale relation, whose
    blocks are the output's positions. Both widen the zones by the padding (lo, hi) and
    read the input K - 1 and the pads from its ends (halo width). Kernel spatial dims,
    lhs dilation and feature/batch groups pin."""
    lhs, rhs = op.operands[:2]
    out = op.results[0]
    dn = op.attrs.get("dimension_numbers")
    if not CONVOLUTION or not isinstance(dn, ConvDims):
        for v in (lhs, rhs, out):
            w.pin_all(v, f"stablehlo.convolution at {op.loc} reads positions")
        return
    where = f"convolution at {op.loc}"
    groups = int(op.attrs.get("feature_group_count", 1)) != 1 or int(op.attrs.get("batch_group_count", 1)) != 1
    if groups:
        for v, d in ((lhs, dn.input_batch), (lhs, dn.input_feature), (rhs, dn.kernel_input_feature),
                     (rhs, dn.kernel_output_feature), (out, dn.output_batch), (out, dn.output_feature)):
            w.uf.pin(w.node(v, d), f"{where}: feature or batch groups")
    else:
        w.same(lhs, out, why, [(dn.input_batch, dn.output_batch)])
        w.uf.union(w.node(lhs, dn.input_feature), w.node(rhs, dn.kernel_input_feature), why)
        w.uf.mark(w.node(lhs, dn.input_feature), "reduced", "stablehlo.convolution")
        w.uf.union(w.node(rhs, dn.kernel_output_feature), w.node(out, dn.output_feature), why)
    k = len(dn.input_spatial)
    strides = _ints(op.attrs.get("window_strides"), k, 1)
    lhs_dil = _ints(op.attrs.get("lhs_dilation"), k, 1)
    rhs_dil = _ints(op.attrs.get("rhs_dilation"), k, 1)
    pad = op.attrs.get("padding")
    pads = [(0, 0)] * k if pad is None else [tuple(int(x) for x in row) for row in np.asarray(pad).reshape(k, 2)]
    for d in dn.kernel_spatial:
        w.uf.pin(w.node(rhs, d), f"{where}: the window's size")
    for i in range(k):
        a, b = dn.input_spatial[i], dn.output_spatial[i]
        n, m = w.types[lhs].shape[a], w.types[out].shape[b]
        kk = (w.types[rhs].shape[dn.kernel_spatial[i]] - 1) * rhs_dil[i] + 1
        s, (lo, hi) = strides[i], pads[i]
        src, dst = w.node(lhs, a), w.node(out, b)
        if lhs_dil[i] != 1 or n == 0 or m == 0 or s < 1:
            w.uf.pin(src, f"{where}: lhs dilation")
            w.uf.pin(dst, f"{where}: lhs dilation")
            continue
        if s == 1:
            w.offsets.append((src, dst, m - n))
        elif n == s * m:
            w.scale(src, dst, s)
        elif n > s * m:
            # n = s m + e: the blocks are an atom of s m positions, and the input that atom
            # plus e (constant) positions at its back.
            blocks = f"{out}~stride{i}"
            w.bind((blocks,), (TensorType((s * m,), "atom"),))
            w.scale(w.node(blocks, 0), dst, s)
            w.offsets.append((w.node(blocks, 0), src, n - s * m))
        else:
            w.uf.pin(src, f"{where}: a strided window past the input's end")
            w.uf.pin(dst, f"{where}: a strided window past the input's end")
            continue
        if CONV_ZONES:
            w.halos.append((src, max(abs(lo), abs(hi), kk - 1), where, out, max(lo, 0), max(hi, 0)))


def _ints(v: object, n: int, default: int) -> tuple[int, ...]:
    return tuple(int(x) for x in v) if v is not None else (default,) * n  # type: ignore[attr-defined]


def _reshape(w: Walker, op: Op, why: str) -> None:
    """Both shapes are cut at the union of their running products into atoms (row-major
    order makes every dim a product of consecutive atoms): a dim of one atom joins the
    atom's class, a dim of several is a product relation (hidden = heads x head_dim).
    When the cuts do not nest into whole atoms the dims involved are pinned."""
    src, dst = op.operands[0], op.results[0]
    a, b = w.types[src].shape, w.types[dst].shape
    if 0 in a or 0 in b:
        return
    cuts = sorted(set(_prefix_products(a)) | set(_prefix_products(b)))
    sizes, prev = [], 1
    for c in cuts:
        if c % prev:
            for v in (src, dst):
                w.pin_all(v, f"reshape regroups dims at {why}")
            return
        sizes.append(c // prev)
        prev = c
    atoms = [f"{dst}~atom{k}" for k in range(len(sizes))]
    for name, size in zip(atoms, sizes):
        w.bind((name,), (TensorType((size,), "atom"),))
    for value, shape in ((src, a), (dst, b)):
        lo = 0
        for d, n in enumerate(shape):
            if n == 1:
                continue
            hi, p = lo, 1
            while p < n:
                p *= sizes[hi]
                hi += 1
            parts = [w.node(atoms[k], 0) for k in range(lo, hi)]
            if len(parts) == 1:
                w.uf.union(w.node(value, d), parts[0], why)
            else:
                w.products.append((w.node(value, d), tuple(parts)))
            lo = hi


def _prefix_products(shape: tuple[int, ...]) -> list[int]:
    out, p = [], 1
    for n in shape:
        p *= n
        if n != 1:
            out.append(p)
    return out


RULES: dict[str, DimRule] = {
    **{name: _elementwise for name in ELEMENTWISE | VALUE_IDENTITIES},
    "stablehlo.constant": _constant,
    "stablehlo.bitcast_convert": _bitcast_convert,
    "stablehlo.iota": _iota,
    "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.transpose": _transpose,
    "stablehlo.reshape": _reshape,
    **{name: _dot for name in DOTS},
    "stablehlo.reduce": _reduce,
    **{name: _same_shape for name in SAME_SHAPE_COLLECTIVES},
    "stablehlo.all_gather": _gather_or_scatter_collective,
    "stablehlo.reduce_scatter": _gather_or_scatter_collective,
    "stablehlo.all_to_all": _all_to_all,
    **{name: _no_dims for name in DEVICE_IDS},
    "stablehlo.slice": _slice,
    "stablehlo.pad": _pad,
    "stablehlo.concatenate": _concatenate,
    **{name: _dynamic_slice for name in DYNAMIC_SLICES},
    "stablehlo.gather": _gather,
    "stablehlo.scatter": _scatter,
    "stablehlo.convolution": _convolution,
    "stablehlo.custom_call": _custom_call,
    "sdy.manual_computation": _manual_computation,
    "sdy.sharding_group": _no_dims,  # no results: a propagation hint relates no dims
    "stablehlo.while": _while,
    **{name: _branches for name in BRANCHES},
    "func.call": _call,
}

# Ops pinned on purpose, with the reason the pin records. The shrinking argument covers ops
# that treat every position of a class alike (docs/shrinking.md); these do not.
PINNING: dict[str, str] = {
    "stablehlo.reverse": "reads positions",  # element i comes from n - 1 - i
    "stablehlo.sort": "reads positions",  # an element's rank is a position
    "chlo.top_k": "reads positions",  # k counts positions of the sorted dim
    "stablehlo.reduce_window": "reads positions",  # windows, strides and padding in positions
    "stablehlo.select_and_scatter": "reads positions",  # windows and strides in positions
    "stablehlo.fft": "reads positions",  # the twiddle factors depend on the length
    "stablehlo.dynamic_pad": "reads positions",  # pads by amounts computed at run time
    "stablehlo.real_dynamic_slice": "reads positions",  # start, limit and stride at run time
    "stablehlo.rng": "reads positions",  # the random stream is laid out by position
    "stablehlo.rng_bit_generator": "reads positions",  # the random stream is laid out by position
    # Substitutions run along the matrix dims in order (row i reads rows < i): the
    # triangle is a relation of positions, and a class's degree grows with its size.
    "stablehlo.cholesky": "reads positions",
    "stablehlo.triangular_solve": "reads positions",
    # The calls' rule follows `callee` only; a composite's `decomposition` is not entered.
    "stablehlo.composite": "is not analysed (a call through its decomposition)",
    **{name: "is not analysed (broadcasts its operands by rank)" for name in BROADCASTING_ELEMENTWISE},
}

__all__ = ["CONVOLUTION", "CONV_ZONES", "PAD_HALVES", "PINNING", "RULES", "SCATTER", "SCATTER_ZONES", "DimRule",
           "anchor"]
