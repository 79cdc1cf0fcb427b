"""Lanes: a stage that acts alike at every position of a dim is proved at one position
(docs/stages.md, "Lanes: one position of a dim that every op keeps apart").

The backward of a stacked weight adds and all-reduces [L, ...] accumulators: the add of
two of them, or the final data-parallel psum of the ten stacked gradients, is one op per
value, and layer k's positions only meet layer k's positions. Such a stage's proof is L
times the problem at one layer, and at 126 layers these few stages held half of the
first witness's proof time.

**The rule.** A *lane* assignment gives every value of both stage programs a role: a dim
of size N (its *lane dim*) or none (*lane-free*). It is accepted when
- every op with a lane-dim result is one whose result at lane position i is the same
  function of its operands' lane position i and of its lane-free operands, for every i
  (`_operand_roles`: elementwise ops, all_reduce / collective_permute /
  collective_broadcast, broadcast_in_dim, reshape keeping the lane dim apart, transpose,
  reduce over other dims, dot_general with the lane a batch dim or a free dim of one
  operand, gather with the lane a batch dim (not a window dim) and its operand lane-free,
  or its operand's paired batching dim when the lane is a batching dim, scatter with the
  lane a window dim no index starts and the update window spans whole (its indices
  lane-free), or an input batching dim (the indices and updates at their paired dims),
  slice / concatenate / pad that keep the lane dim whole, constants equal at every lane
  position);
- a lane-free value is made from lane-free values only (any op);
- each stage input slot has one role in both programs (or is unused in one), with the
  lane at the same index of its global type, and the other program's layout does not
  split that dim (so each device's block holds every lane position, in order);
- each output has its lane at the same index in both programs, and the other program's
  output layout does not split it.
Then every lane-dim value becomes size 1 there, and the stage is proved at that size.

**Why it is sound.** Write an input as its lane positions x_1..x_N (the lane slots) and
w (the lane-free slots). By induction over the ops, position i of every lane value in
either program is F(x_i, w) for one F independent of i: true of the inputs, and each
accepted op keeps it. A device's block of a slot unsplit at the lane dim holds position
i of the global value at its own position i, and assembling the outputs (concatenating
blocks along split dims, summing partial-sum groups, checking replicas) works position by
position along an unsplit dim. So the stage's claim at N is the conjunction over i of
one predicate P(x_i, w), and the input facts the proof assumes (finite, sign, integer
range) are per slot, the same for every position. For N >= 1, "for all x_1..x_N, w: P(x_i,
w) for every i" holds exactly when "for all x, w: P(x, w)" does, which is the claim at
size 1. The converse direction makes the rule lose no bug: a counterexample at size 1 is
one at N (put it at every position). Uninterpreted functions apply position by position
too, so an interpretation that breaks one side at size 1 breaks it at N.

An op that mixes positions (a pad or slice along the lane dim, a reduce over it, an
iota along it, a dynamic slice, a gather, a contraction over it, control flow, calls) refuses the
assignment, and the stage is proved as it is. The per-layer pads at offset k are such
ops: an off-by-one offset is never folded away (tests/test_stage_lanes.py)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from tv_mlir.ir import Block, Func, Module, Op, Sharding, TensorType
from tv_mlir.semantics.ops import ELEMENTWISE, SAME_SHAPE_COLLECTIVES
from tv_mlir.stages.extract import StagePair
from tv_mlir.stages.hashing import _callees
from tv_mlir.stages.plan import region_uses

# The rule's switch (tests flip it to show the verdicts stay and what it buys).
FOLD_LANES = True
# Stages with fewer tensor elements (the reference's values) are proved as they are: a
# fold saves little there, and small stages are what most tests look at.
MIN_ELEMENTS = 4096
# Dims folded per stage at most (each fold is the argument above, applied again).
MAX_FOLDS = 4
# A gather's batch dims and a scatter's whole window dims as lanes (docs/stages.md,
# "Gathers and scatters as lanes"): the switch the tests flip.
GATHER_LANES = True
# A gather's or a scatter's batching dims as lanes (take_along_axis and its transpose, in
# the cross-entropy of a training step; docs/stages.md, "Batching dims as lanes").
BATCHING_LANES = True
# Slices, concatenations and pads that keep the lane dim whole (docs/stages.md, "Batching
# dims as lanes"): the switch the tests flip.
SHAPE_LANES = True

Role = int | None  # the lane dim, or None: lane-free


class _Refused(Exception):
    """The assignment does not hold (an op mixes positions, or two uses disagree)."""


def fold_lanes(stage: StagePair) -> tuple[StagePair, list[int]]:
    """The stage with its lane dims folded to size 1 (module docstring), and the sizes
    folded, in order; the stage itself and [] when nothing folds."""
    if not FOLD_LANES or stage.loop:
        return stage, []
    folded: list[int] = []
    for _ in range(MAX_FOLDS):
        if _elements(stage.ref) < MIN_ELEMENTS:
            break
        new, n = next(((new, n) for n in _candidates(stage.ref) for pick in (0, -1)
                       if (new := _fold(stage, n, pick)) is not None), (None, 0))
        if new is None:
            break
        stage = new
        folded.append(n)
    return stage, folded


def _elements(m: Module) -> int:
    body = m.main.body
    return sum(t.size for t in body.arg_types) + sum(t.size for op in body.ops for t in op.result_types)


def _candidates(ref: Module) -> list[int]:
    """Sizes to try as the lane: the reference outputs' dim sizes, largest first."""
    return sorted({d for t in ref.main.result_types for d in t.shape if d >= 2}, reverse=True)


def _unsplit(s: Sharding | None, dim: int) -> bool:
    return s is None or (dim < len(s.dims) and not s.dims[dim])


def _fold(stage: StagePair, n: int, pick: int) -> StagePair | None:
    """The stage folded at lane size n, where an output with several dims of size n has its
    lane at the first (pick 0) or the last (pick -1) of them; None when that assignment is
    refused. Which dim is tried is only a guess: the checks below decide."""
    ref, other = stage.ref, stage.other
    if _callees(ref) or _callees(other):  # calls: a callee's body is not read here
        return None
    r_body, o_body = ref.main.body, other.main.body
    if len(r_body.returns) != len(o_body.returns) or len(r_body.args) != len(o_body.args):
        return None
    out: list[Role] = []
    for k, (rt, ot) in enumerate(zip(ref.main.result_types, other.main.result_types)):
        at = [d for d, size in enumerate(rt.shape) if size == n]
        role = at[pick] if at else None
        if role is not None:
            s = other.result_shardings[k] if other.per_device and k < len(other.result_shardings) else None
            if len(ot.shape) != len(rt.shape) or ot.shape[role] != n or not _unsplit(s, role):
                return None
        out.append(role)
    try:
        r_roles = _propagate(r_body, out, n)
        o_roles = _propagate(o_body, out, n)
    except _Refused:
        return None
    # One role per slot in both programs; an unused argument takes the other's.
    for j, (ra, oa) in enumerate(zip(r_body.args, o_body.args)):
        rr, orr = r_roles.get(ra, "unused"), o_roles.get(oa, "unused")
        lane = rr if isinstance(rr, int) else orr if isinstance(orr, int) else None
        if lane is None:
            continue
        if rr not in (lane, "unused") or orr not in (lane, "unused"):
            return None
        rt, ot = r_body.arg_types[j], o_body.arg_types[j]
        s = other.arg_shardings[j] if other.per_device and j < len(other.arg_shardings) else None
        if (len(rt.shape) != len(ot.shape) or rt.shape[lane] != n or ot.shape[lane] != n
                or not _unsplit(s, lane)):
            return None
        r_roles[ra], o_roles[oa] = lane, lane
    if not any(r is not None for r in r_roles.values()):
        return None
    try:
        new_ref = _rewrite(ref, r_roles)
        new_other = _rewrite(other, o_roles)
    except _Refused:
        return None
    return replace(stage, ref=new_ref, other=new_other)


def _propagate(block: Block, out: Sequence[Role], n: int) -> dict[str, Role]:
    """Each value's role, from the outputs' backwards; _Refused where it cannot hold."""
    types = dict(zip(block.args, block.arg_types))
    for op in block.ops:
        types.update(zip(op.results, op.result_types))
    roles: dict[str, Role] = {}

    def want(v: str, r: Role) -> None:
        if v in roles and roles[v] != r:
            raise _Refused(f"{v}: two roles")
        if r is not None:
            t = types.get(v)
            if t is None or r >= len(t.shape) or t.shape[r] != n:
                raise _Refused(f"{v}: no lane at {r}")
        roles[v] = r

    for v, r in zip(block.returns, out):
        want(v, r)
    for op in reversed(block.ops):
        rs = {roles.get(r) for r in op.results}  # a result no one reads is lane-free
        if rs == {None}:
            for v in region_uses(op):
                want(v, None)
            continue
        if len(rs) != 1:
            raise _Refused(f"{op.name}: results in several roles")
        d = rs.pop()
        assert d is not None
        if op.regions and set(region_uses(op)) != set(op.operands):
            raise _Refused(f"{op.name}: its regions read outer values")
        for v, r in zip(op.operands, _operand_roles(op, d, [types[v] for v in op.operands], n)):
            want(v, r)
    return roles


def _operand_roles(op: Op, d: int, operand_types: list[TensorType], n: int) -> list[Role]:
    """The operands' roles when the op's results have their lane at d; _Refused for an
    op whose result position i is not a function of its operands' position i alone."""
    rt = op.result_types[0]
    name = op.name
    if name in ELEMENTWISE or name in SAME_SHAPE_COLLECTIVES:
        if len(op.results) != 1:
            raise _Refused(f"{name}: several results")
        roles: list[Role] = []
        for t in operand_types:
            if not t.shape and rt.shape:  # a scalar operand (select's predicate, clamp's bounds)
                roles.append(None)
            elif t.shape == rt.shape:
                roles.append(d)
            else:
                raise _Refused(f"{name}: operand shape {t.shape}")
        return roles
    if name == "stablehlo.constant":
        return []
    if name == "stablehlo.broadcast_in_dim":
        dims = tuple(int(x) for x in op.attrs["broadcast_dimensions"])
        if d not in dims:
            return [None]
        p = dims.index(d)
        size = operand_types[0].shape[p]
        if size == n:
            return [p]
        if size == 1:
            return [None]
        raise _Refused("broadcast_in_dim: lane size")
    if name == "stablehlo.reshape":
        s = operand_types[0].shape
        before = math.prod(rt.shape[:d])
        for p in range(len(s)):
            if s[p] == n and math.prod(s[:p]) == before:
                return [p]
        raise _Refused("reshape: the lane dim does not stay apart")
    if name == "stablehlo.transpose":
        return [int(op.attrs["permutation"][d])]
    if name == "stablehlo.slice" and SHAPE_LANES:
        # The lane dim taken whole (start 0, stride 1, to its end): position i is the
        # operand's position i, sliced along the other dims alike for every i.
        starts, limits = op.attrs["start_indices"], op.attrs["limit_indices"]
        strides = op.attrs.get("strides") or (1,) * len(starts)
        if int(starts[d]) != 0 or int(strides[d]) != 1 or int(limits[d]) != operand_types[0].shape[d]:
            raise _Refused("slice: along the lane")
        return [d]
    if name == "stablehlo.concatenate" and SHAPE_LANES:
        # Joined along another dim: position i is the operands' positions i, joined.
        if int(op.attrs["dimension"]) == d:
            raise _Refused("concatenate: along the lane")
        return [d] * len(operand_types)
    if name == "stablehlo.pad" and SHAPE_LANES:
        # No padding along the lane: position i is the operand's position i padded along
        # the other dims with the (scalar, lane-free) padding value.
        if any(int(op.attrs[k][d]) != 0 for k in ("edge_padding_low", "edge_padding_high", "interior_padding")):
            raise _Refused("pad: along the lane")
        return [d, None]
    if name == "stablehlo.reduce":
        half = len(op.operands) // 2
        reduced = {int(x) for x in op.attrs["dimensions"]}
        kept = [i for i in range(len(operand_types[0].shape)) if i not in reduced]
        p = kept[d]
        if any(t.shape != operand_types[0].shape for t in operand_types[:half]):
            raise _Refused("reduce: inputs of several shapes")
        return [p] * half + [None] * half
    if name == "stablehlo.dot_general":
        # Result dims: batch dims, then the lhs's free dims, then the rhs's. A batch dim's
        # position i pairs position i of both operands; a free dim's position i reads the
        # operand's position i and the whole of the other operand.
        dn = op.attrs["dot_dimension_numbers"]
        lb, rb = list(dn.lhs_batch), list(dn.rhs_batch)
        lf = [i for i in range(len(operand_types[0].shape)) if i not in lb and i not in dn.lhs_contracting]
        rf = [i for i in range(len(operand_types[1].shape)) if i not in rb and i not in dn.rhs_contracting]
        if d < len(lb):
            return [lb[d], rb[d]]
        if d < len(lb) + len(lf):
            return [lf[d - len(lb)], None]
        return [None, rf[d - len(lb) - len(lf)]]
    if name == "stablehlo.gather" and GATHER_LANES:
        # Result dims are the offset dims (the window: position i reads the operand at a
        # data start plus i, so it tells positions apart) and the batch dims, which take
        # the start indices' dims but the index vector dim, in order. Along a batch dim,
        # position i is one function of the indices' position i and the whole operand
        # (the start read there, clamped into the operand): the operand is lane-free.
        g = op.attrs["dimension_numbers"]
        if d in g.offset_dims:
            raise _Refused("gather: the lane is a window dim")
        k = [i for i in range(len(rt.shape)) if i not in g.offset_dims].index(d)
        index_dims = [i for i in range(len(operand_types[1].shape)) if i != g.index_vector_dim]
        at = index_dims[k]
        if at in g.start_indices_batching_dims and BATCHING_LANES:
            # A batching dim (take_along_axis): position i reads the operand's slab at
            # its paired operand batching dim's position i, at a start read from the
            # indices' position i. The operand takes the lane there: position i is one
            # function of both operands' position i (docs/stages.md, "Batching dims as lanes").
            return [g.operand_batching_dims[list(g.start_indices_batching_dims).index(at)], at]
        if g.operand_batching_dims or g.start_indices_batching_dims:
            # Not needed so far, and its own argument: refused.
            raise _Refused("gather: batching dims and the lane is not one of them")
        return [None, at]
    if name == "stablehlo.scatter" and GATHER_LANES:
        # A window dim of the inputs that no scatter index starts (its start is 0) and that
        # the update window spans whole: update position i lands at position i, and whether
        # an update lands at all (its whole window in bounds) is decided by the other dims'
        # starts, the same for every i. So result position i is one function of the inputs'
        # and the updates' position i and the indices (lane-free). Batching dims, inserted
        # dims and dims an index starts tell positions apart: refused.
        s = op.attrs["scatter_dimension_numbers"]
        half = (len(operand_types) - 1) // 2
        if d in s.input_batching_dims and BATCHING_LANES:
            # An input batching dim (take_along_axis's transpose): an update lands at
            # position i along it exactly when its scatter position at the paired indices
            # batching dim is i, from a start read at the indices' position i there. So the
            # inputs, the indices and the updates take the lane (the paired dims), and
            # result position i is one function of their position i (docs/stages.md,
            # "Batching dims as lanes").
            at = s.scatter_indices_batching_dims[list(s.input_batching_dims).index(d)]
            index_dims = [i for i in range(len(operand_types[half].shape)) if i != s.index_vector_dim]
            scatter_dims = [i for i in range(len(operand_types[half + 1].shape)) if i not in s.update_window_dims]
            return [d] * half + [at] + [scatter_dims[index_dims.index(at)]] * half
        window = [i for i in range(len(rt.shape))
                  if i not in s.inserted_window_dims and i not in s.input_batching_dims]
        if d not in window or d in s.scatter_dims_to_operand_dims:
            raise _Refused("scatter: the lane is not a whole window dim")
        u = s.update_window_dims[window.index(d)]
        if any(t.shape[u] != rt.shape[d] for t in operand_types[half + 1:]):
            raise _Refused("scatter: the window does not span the lane")
        return [d] * half + [None] + [u] * half
    raise _Refused(f"{name}: not known to keep positions apart")


def _rewrite(m: Module, roles: dict[str, Role]) -> Module:
    """The module with every lane-dim value made size 1 there."""

    def fold(v: str, t: TensorType) -> TensorType:
        r = roles.get(v)
        if r is None:
            return t
        return TensorType(tuple(1 if i == r else s for i, s in enumerate(t.shape)), t.dtype)

    body = m.main.body
    ops: list[Op] = []
    for op in body.ops:
        folded = tuple(fold(v, t) for v, t in zip(op.results, op.result_types))
        if folded == op.result_types:
            ops.append(op)
            continue
        attrs = op.attrs
        if op.name == "stablehlo.constant":
            attrs = {**attrs, "value": _one_lane(attrs.get("value"), op.result_types[0], roles[op.results[0]])}
        elif op.name == "stablehlo.slice":  # the lane taken whole from 0: now [0, 1)
            lane = roles[op.results[0]]
            assert lane is not None
            attrs = {**attrs, "limit_indices": tuple(1 if i == lane else int(x)
                                                     for i, x in enumerate(attrs["limit_indices"]))}
        ops.append(replace(op, result_types=folded, attrs=attrs))
    arg_types = tuple(fold(a, t) for a, t in zip(body.args, body.arg_types))
    new_body = Block(body.args, arg_types, ops, body.returns)
    types = dict(zip(body.args, arg_types))
    for op in ops:
        types.update(zip(op.results, op.result_types))
    result_types = tuple(types[r] for r in body.returns)
    func: Func = replace(m.main, body=new_body, result_types=result_types)
    return replace(m, funcs={**m.funcs, m.entry: func}, text=b"")


def _one_lane(value: object, t: TensorType, d: Role) -> np.ndarray:
    """A constant's value at one lane position: the same at every position, or refused."""
    if not isinstance(value, np.ndarray) or d is None:
        raise _Refused("constant: no array value")
    if value.shape == ():  # a splat kept as its one value
        return value
    if value.shape != t.shape:
        raise _Refused("constant: value shape")
    first = np.take(value, [0], axis=d)
    if np.broadcast_to(first, value.shape).tobytes() != np.ascontiguousarray(value).tobytes():
        raise _Refused("constant: differs along the lane")
    return first.copy()
