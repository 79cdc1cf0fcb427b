"""Prologue values that hold their link by the argument's layout alone (switch
`BY_LAYOUT`; docs/stages.md, "Prologue slices").

A stack's prologue slices one layer out of every stacked weight, in both programs:
`reshape(slice(w, [k:k+1, 0:a, 0:b]))`, the other program on its local block of `w`. The
prologue stage proved all of them in one symbolic run: at 126 layers, 1,764 outputs and
the largest stage of the plan, in each witness. Such an output needs no proof when it is
made from the argument by the same slice on both sides and the layouts line up:

- the other's value is `reshape?(slice(A_o))` and its linked reference value is
  `reshape?(slice(A_r))`, where A_o is an argument of the other program and A_r the
  reference argument it holds (the signatures match: the argument's link is given);
- the slices have strides 1 and, per dim, either the same start and limit on both sides
  on a dim the argument's layout `S_a` does not split, or the whole dim on both sides;
- a reshape, when there is one, on both sides only drops size-1 dims of the slice (the
  same dims), and the output's layout `S_o` is `S_a` without those dims;
- neither layout holds partial sums.

Why: on every device the other's argument is `S_a`'s block of A_r. Slicing a dim that
`S_a` does not split takes the same positions of every block as of A_r, and a dim taken
whole stays the device's whole block, so `slice(A_o)` is `S_a`'s block of `slice(A_r)`.
Dropping size-1 dims that are not split keeps each block's elements in order, so the
reshape is `S_o`'s block of the reference's reshape. Replicas agree because the
arguments' replicas agree. An output that fails any condition stays in the prologue stage.
"""
from __future__ import annotations

from tv_mlir.ir import Op, Sharding
from tv_mlir.stages.extract import _types
from tv_mlir.stages.lineage import Link
from tv_mlir.stages.plan import Side

BY_LAYOUT = True


def _chain(v: str, producer: dict[str, Op]) -> tuple[Op | None, Op] | None:
    """(reshape or None, slice) making `v` from a value, or None."""
    op = producer.get(v)
    if op is None:
        return None
    if op.name == "stablehlo.reshape":
        inner = producer.get(op.operands[0])
        return (op, inner) if inner is not None and inner.name == "stablehlo.slice" else None
    return (None, op) if op.name == "stablehlo.slice" else None


def _dropped(before: tuple[int, ...], after: tuple[int, ...]) -> tuple[int, ...] | None:
    """The dims of `before` a reshape to `after` drops, when it only drops size-1 dims."""
    kept = [d for d, n in enumerate(before) if n != 1]
    if tuple(before[d] for d in kept) != tuple(n for n in after if n != 1) or len(after) > len(before):
        return None
    # Size-1 dims of `after` must be size-1 dims of `before` kept in place: read them in
    # order, matching each after-dim to the next before-dim of the same size.
    out, j = [], 0
    for d, n in enumerate(before):
        if j < len(after) and after[j] == n:
            j += 1
        elif n == 1:
            out.append(d)
        else:
            return None
    return tuple(out) if j == len(after) else None


def holds_by_layout(o_v: str, link: Link, other: Side, ref: Side, arg_links: dict[str, Link]) -> bool:
    """Whether the other's prologue value `o_v` holds `link` by the argument's layout (the
    module docstring's conditions). `arg_links`: the other's arguments' given links."""
    if not BY_LAYOUT or ref.module.per_device:  # the argument above is about a global reference
        return False
    o, r = _chain(o_v, other.producer), _chain(link.ref, ref.producer)
    if o is None or r is None or (o[0] is None) != (r[0] is None):
        return False
    o_slice, r_slice = o[1], r[1]
    a_link = arg_links.get(o_slice.operands[0])
    if a_link is None or a_link.ref != r_slice.operands[0] or ref.kind.get(a_link.ref) != "arg":
        return False
    s_a, s_o = a_link.sharding, link.sharding
    if (s_a is not None and s_a.unreduced) or (s_o is not None and s_o.unreduced):
        return False
    o_start, o_limit = o_slice.attrs["start_indices"], o_slice.attrs["limit_indices"]
    r_start, r_limit = r_slice.attrs["start_indices"], r_slice.attrs["limit_indices"]
    if any(k != 1 for k in tuple(o_slice.attrs["strides"]) + tuple(r_slice.attrs["strides"])):
        return False
    o_in, r_in = _types(other)[o_slice.operands[0]].shape, _types(ref)[r_slice.operands[0]].shape
    if len(o_in) != len(r_in):
        return False
    for d in range(len(o_in)):
        whole = o_start[d] == 0 and o_limit[d] == o_in[d] and r_start[d] == 0 and r_limit[d] == r_in[d]
        split = s_a is not None and s_a.shards(d) != 1
        same = not split and o_start[d] == r_start[d] and o_limit[d] == r_limit[d] and o_in[d] == r_in[d]
        if not (whole or same):
            return False
    o_shape, r_shape = o_slice.result_types[0].shape, r_slice.result_types[0].shape
    dropped: tuple[int, ...] = ()
    if o[0] is not None and r[0] is not None:
        od = _dropped(o_shape, o[0].result_types[0].shape)
        rd = _dropped(r_shape, r[0].result_types[0].shape)
        if od is None or od != rd:
            return False
        dropped = od
    return _layout_without(s_a, dropped, len(o_shape)) == _normal(s_o)


def _normal(s: Sharding | None) -> tuple | None:
    """A layout as comparable data; a layout that splits nothing is no layout."""
    if s is None or not any(s.dims):
        return None
    return (s.mesh.axes, s.dims)


def _layout_without(s: Sharding | None, dropped: tuple[int, ...], rank: int) -> tuple | None:
    if s is None:
        return None
    if any(s.dims[d] for d in dropped):
        return ("split", "dropped")  # never equal to a real layout
    dims = tuple(s.dims[d] for d in range(rank) if d not in dropped)
    return (s.mesh.axes, dims) if any(dims) else None


def by_layout(used: list[str], links: dict[str, Link], other: Side, ref: Side,
              arg_links: dict[str, Link]) -> set[str]:
    """The prologue outputs among `used` that hold their links by layout alone."""
    return {v for v in used if holds_by_layout(v, links[v], other, ref, arg_links)}


__all__ = ["BY_LAYOUT", "by_layout", "holds_by_layout"]
