"""Peeling pads off a stage's outputs, so that stages which differ only in where a pad puts
a value are one proof (docs/stages.md, "Peeled output pads").

A stacked weight's backward pads each layer's gradient into the [L, ...] accumulator at
the layer's own offset. Both programs pad alike, so the stage that makes a padded
gradient is the same problem at every offset, but its hash differs per layer: a
126-layer stack proved about 550 such stages once each. A stage output that is a pad in
both programs, with the same padding amounts and the same padding value, is equal under
its layout exactly when the pad's operands are (the conditions below make the pad
commute with the layout). So the stage is proved with the operands as its outputs, and
that problem holds no offset.

Why the conditions (`CONDITIONS`; `L` is the other program's layout of the output):
- `same_amounts`: both programs pad by the same low, high and interior amounts. Two
  programs padding at different offsets compute different functions.
- `same_value`: the padding values are constants of one type with the same bytes, so
  both programs fill the same positions with the same value.
- `whole_padded_dims`: every padded dim (a nonzero amount) is whole on every device under
  `L`. Assembling the blocks along the split dims and padding then commute. A pad on a
  split dim pads each block, which is not the padded global value (a shift by one,
  low 1 and high -1, keeps the type and moves every block's first element).
- `zero_if_partial`: when `L` holds partial sums (unreduced axes), the global value is
  the sum of the groups' blocks. The interior is then the sum of the operands' parts,
  and each padding position is G copies of the padding value added up. That equals the
  value only when it is +0 (all bytes zero).
Replicated axes need nothing: equal operands on every replica give equal pads.

Each output is a claim of its own, so a pad that other ops of the stage also read can be
peeled off the output all the same (the ops keep reading it). Under the conditions,
pad(a) equals pad(b) under `L` if and only if a equals b under `L`. The "if" is what
soundness needs. The "only if" holds since pad keeps every operand element, so no bug
is lost."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from tv_mlir.ir import Block, Module, Op, Sharding
from tv_mlir.passes.normalize import attr_key, dce
from tv_mlir.stages.extract import StagePair

# The rule's switch (tests flip it to show what it buys and that the verdicts stay).
PEEL_PADS = True

# acc + pad(g) at an output, acc an input slot's value laid out as the output (`_accumulated`).
ACCUMULATE = True

_AMOUNTS = ("edge_padding_low", "edge_padding_high", "interior_padding")


def _amounts(op: Op) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in op.attrs.get(k, ())) for k in _AMOUNTS]


def same_amounts(rp: Op, op: Op, rc: Op, oc: Op, layout: Sharding | None) -> bool:
    rank = len(rp.result_types[0].shape)
    a = _amounts(rp)
    return a == _amounts(op) and all(len(x) == rank for x in a) and len(op.result_types[0].shape) == rank


def same_value(rp: Op, op: Op, rc: Op, oc: Op, layout: Sharding | None) -> bool:
    rv, ov = rc.attrs.get("value"), oc.attrs.get("value")
    return (isinstance(rv, np.ndarray) and isinstance(ov, np.ndarray) and attr_key(rv) == attr_key(ov)
            and rc.result_types == oc.result_types)


def whole_padded_dims(rp: Op, op: Op, rc: Op, oc: Op, layout: Sharding | None) -> bool:
    if layout is None:
        return True
    amounts = _amounts(op)
    rank = len(op.result_types[0].shape)
    return len(layout.dims) == rank and not any(layout.dims[d] for d in range(rank)
                                                if any(a[d] != 0 for a in amounts))


def zero_if_partial(rp: Op, op: Op, rc: Op, oc: Op, layout: Sharding | None) -> bool:
    if layout is None or not layout.unreduced:
        return True
    value = oc.attrs.get("value")
    return isinstance(value, np.ndarray) and not np.ascontiguousarray(value).tobytes().strip(b"\0")


Condition = Callable[[Op, Op, Op, Op, "Sharding | None"], bool]
CONDITIONS: tuple[Condition, ...] = (same_amounts, same_value, whole_padded_dims, zero_if_partial)


def peel_output_pads(stage: StagePair) -> StagePair:
    """The stage with every output that both programs make by a peelable pad (module
    docstring) replaced by the pad's operand; the stage itself when there is none."""
    if not PEEL_PADS or stage.loop:
        return stage
    ref, other = stage.ref, stage.other
    r_body, o_body = ref.main.body, other.main.body
    if len(r_body.returns) != len(o_body.returns):
        return stage
    r_prod, o_prod = _producers(r_body), _producers(o_body)
    r_out, o_out = list(r_body.returns), list(o_body.returns)
    peeled = 0
    for i, (rv, ov) in enumerate(zip(r_body.returns, o_body.returns)):
        layout = other.result_shardings[i] if other.per_device and i < len(other.result_shardings) else None
        # acc + pad(g): the pad's claim gives the sum's when acc is one input slot's value on
        # both sides, laid out as the output (`_accumulated`).
        rv, ov = _accumulated(rv, ov, ref, other, r_prod, o_prod, layout) or (rv, ov)
        rp, op = r_prod.get(rv), o_prod.get(ov)
        if rp is None or op is None or rp.name != "stablehlo.pad" or op.name != "stablehlo.pad":
            continue
        rc, oc = r_prod.get(rp.operands[1]), o_prod.get(op.operands[1])
        if rc is None or oc is None or rc.name != "stablehlo.constant" or oc.name != "stablehlo.constant":
            continue
        if all(c(rp, op, rc, oc, layout) for c in CONDITIONS):
            r_out[i], o_out[i] = rp.operands[0], op.operands[0]
            peeled += 1
    if not peeled:
        return stage
    return replace(stage, ref=_returning(ref, r_out), other=_returning(other, o_out))


def _accumulated(rv: str, ov: str, ref: Module, other: Module, r_prod: dict[str, Op], o_prod: dict[str, Op],
                 layout: Sharding | None) -> tuple[str, str] | None:
    """(p, q) when the outputs are `acc + p` and `acc' + q` (same operand order), where
    acc is an input slot's value in the reference and acc' that slot's own input in the
    other program under the output's layout (`same_slot`); else None."""
    ra, oa = r_prod.get(rv), o_prod.get(ov)
    if not ACCUMULATE or ra is None or oa is None or ra.name != "stablehlo.add" or oa.name != "stablehlo.add":
        return None
    for k in (0, 1):
        r_slot = _ref_slot(ra.operands[k], ref, r_prod)
        if r_slot is not None and same_slot(r_slot, _other_slot(oa.operands[k], other, o_prod, layout)):
            return ra.operands[1 - k], oa.operands[1 - k]
    return None


def same_slot(r: tuple[str, int], o: tuple[str, int] | None) -> bool:
    return r == o


def _ref_slot(v: str, m: Module, prod: dict[str, Op]) -> tuple[str, int] | None:
    """("whole", j) when `v` is the reference's input j; ("parts", j) when it is the sum of
    input j over its first dim (a partial slot's value, extract._sum_parts)."""
    args = m.main.body.args
    if v in args:
        return "whole", args.index(v)
    op = prod.get(v)
    if op is None or op.name != "stablehlo.reduce" or tuple(op.attrs.get("dimensions", ())) != (0,):
        return None
    if len(op.operands) != 2 or op.operands[0] not in args or not _zero_constant(op.operands[1], prod):
        return None
    body = op.regions[0] if len(op.regions) == 1 else None
    if (body is None or len(body.ops) != 1 or body.ops[0].name != "stablehlo.add"
            or set(body.ops[0].operands) != set(body.args) or len(set(body.args)) != 2
            or tuple(body.returns) != body.ops[0].results):
        return None
    return "parts", args.index(op.operands[0])


def _other_slot(v: str, m: Module, prod: dict[str, Op], layout: Sharding | None) -> tuple[str, int] | None:
    """("whole", j) when `v` is the other program's input j laid out as `layout`;
    ("parts", j) when `v` is input j reshaped, j being a partial slot's part (its layout
    `layout` with the unreduced axes splitting a new first dim of 1, extract._partial_slot)."""
    args = m.main.body.args
    shardings = m.arg_shardings if m.per_device else ()
    if v in args:
        j = args.index(v)
        s = shardings[j] if j < len(shardings) else None
        return ("whole", j) if s == layout else None
    op = prod.get(v)
    if op is None or op.name != "stablehlo.reshape" or op.operands[0] not in args or layout is None:
        return None
    j = args.index(op.operands[0])
    if not layout.unreduced or j >= len(shardings):
        return None
    t, local = m.main.body.arg_types[j], op.result_types[0]
    parts = Sharding(layout.mesh, (layout.unreduced, *layout.dims))
    return ("parts", j) if shardings[j] == parts and t.shape == (1, *local.shape) else None


def _zero_constant(v: str, prod: dict[str, Op]) -> bool:
    op = prod.get(v)
    value = op.attrs.get("value") if op is not None and op.name == "stablehlo.constant" else None
    return isinstance(value, np.ndarray) and not np.ascontiguousarray(value).tobytes().strip(b"\0")


def _producers(body: Block) -> dict[str, Op]:
    return {r: op for op in body.ops for r in op.results}


def _returning(m: Module, returns: list[str]) -> Module:
    """`m` returning `returns` (each an argument or a result of its ops), dead ops dropped."""
    f = m.main
    body = replace(f.body, returns=tuple(returns))
    types = dict(zip(body.args, body.arg_types))
    for op in body.ops:
        types.update(zip(op.results, op.result_types))
    func = replace(f, body=body, result_types=tuple(types[r] for r in returns))
    # Only the entry changed: the program's other functions are left as they are.
    kept = dce(replace(m, funcs={f.name: func})).funcs[f.name]
    return replace(m, funcs={**m.funcs, f.name: kept})
