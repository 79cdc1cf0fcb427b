"""A stage that is one `while` loop in each program (a `scan` over stacked layers), proved
by induction instead of unrolling.

The other loop's carried values are aligned with the reference loop's by their initial
values' lineage (a constant init, such as the trip counter, by its value), and each keeps
its initial layout as the invariant. Two stage pairs then prove the loop:
- the bodies: if the carried values correspond (each under its layout), so do the next
  ones (replicas included);
- the conditions: on corresponding carried values both loops decide alike, so they run
  the same number of trips.
With the initial values corresponding (the chain's earlier stages), induction over the
trips gives corresponding results. Values the bodies read from outside are stage inputs
like any other. A loop that does not line up this way is proved by unrolling (the stage
as built by extract.build).

One reference value, several layouts. The other loop may carry one reference carried
value more than once (the residual stream whole and as this device's block), or read one
outside value under several layouts (a weight sharded and all-gathered). As separate free
inputs the copies would be unrelated and the body proof would fail on inputs no trip
reaches; so, as for straight-line stages (extract.py, shared slots), such a value is one
input, whole on every device, and each copy is sliced from it by its layout (`_derive`).
The induction stays sound: its hypothesis is the conjunction, over the other loop's
carried positions, of "this one holds the reference value under its layout"; the
initial values hold it (the chain's earlier stages prove each copy's lineage), and the
body proof checks every copy's next value against the reference's next value under that
copy's layout, not only one copy per reference value."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tv_mlir.ir import Block, Op, Sharding, TensorType
from tv_mlir.semantics.ops import DEVICE_IDS
from tv_mlir.stages.extract import NotFormed, StagePair, _closure, _copy, _derive, _device_id, _module, source_loc
from tv_mlir.stages.lineage import Link, Values
from tv_mlir.stages.plan import Side, region_uses


def is_loop_stage(ref_ops: Sequence[Op], other_ops: Sequence[Op]) -> bool:
    return (len(ref_ops) == 1 and len(other_ops) == 1 and ref_ops[0].name == "stablehlo.while"
            and other_ops[0].name == "stablehlo.while")


def _free(block: Block) -> list[str]:
    return region_uses(Op("block", (), (), (), regions=(block,)))


def _same_constant(a: Any, b: Any) -> bool:
    parts = b if isinstance(b, tuple) else (b,)
    return all(np.array_equal(np.asarray(p), np.asarray(a)) for p in parts)


def _align(ref: Side, other: Side, links: dict[str, Link], rw: Op, ow: Op, r_vals: Values, o_vals: Values
           ) -> tuple[list[int], list[Sharding | None]]:
    """Per other carried position: the reference position it holds (-1: an extra value of
    the other loop, below), and its layout."""
    free = list(range(len(rw.operands)))
    align: list[int] = []
    layout: list[Sharding | None] = []
    uniform = _uniform(ow)
    for p, v in enumerate(ow.operands):
        if other.kind.get(v) == "const":
            q = next((q for q in free if ref.kind.get(rw.operands[q]) == "const"
                      and _same_constant(r_vals[rw.operands[q]][0], o_vals[v][0])), None)
            s = None
            if q is None and p in uniform:
                q = -1  # a counter of the other loop's own: any value in the proofs
        else:
            link = links.get(v)
            if link is None:
                raise NotFormed(f"the other loop's initial {v} holds no reference value")
            q = next((q for q in free if rw.operands[q] == link.ref), None)
            if q is None:
                # A second copy of a value the reference carries once (another layout of
                # it): one more hypothesis on that position, checked in every trip.
                q = next((q for q in range(len(rw.operands)) if q not in free and rw.operands[q] == link.ref
                          and ref.kind.get(link.ref) != "const"), None)
            s = link.sharding
            if s is not None and s.unreduced:
                raise NotFormed(f"the other loop's initial {v} is a partial sum")
        if q is None:
            raise NotFormed(f"the other loop's initial {v} matches no carried value of the reference loop")
        if q in free:
            free.remove(q)
        align.append(q)
        layout.append(s if other.module.per_device else None)
    if free:
        raise NotFormed("the reference loop carries values the other loop does not")
    return align, layout


def _uniform(loop: Op) -> set[int]:
    """Carried positions whose next value the body computes from constants and such
    positions only (a trip counter): with a constant initial value every device holds the
    same one, so a proof may take it as one free value for all devices."""
    body = loop.regions[1]
    defs = {r: op for op in body.walk() for r in op.results}
    args = {a: k for k, a in enumerate(body.args)}
    out = set(range(len(body.args)))
    changed = True
    while changed:
        changed = False
        for k in sorted(out):
            stack, seen = [body.returns[k]], set()
            while stack:
                v = stack.pop()
                if v in seen:
                    continue
                seen.add(v)
                if v in args:
                    if args[v] not in out:
                        break
                    continue
                op = defs.get(v)
                if op is None or op.name in DEVICE_IDS or op.regions:
                    break  # read from outside the body, a device id, or a nested region
                stack.extend(op.operands)
            else:
                continue
            out.discard(k)
            changed = True
    return out


def induction(name: str, ref: Side, other: Side, links: dict[str, Link], rw: Op, ow: Op,
              ref_outputs: Sequence[str], other_outputs: Sequence[str], out_shardings: Sequence[Sharding | None],
              hoisted: set[str], ref_given: set[str], r_vals: Values, o_vals: Values) -> list[StagePair]:
    align, layout = _align(ref, other, links, rw, ow, r_vals, o_vals)
    per_device = other.module.per_device
    # The loop's results are what later stages read: each must be the aligned reference
    # result under the invariant's layout.
    for o, r, s in zip(other_outputs, ref_outputs, out_shardings):
        if o not in ow.results:
            raise NotFormed(f"{o} leaves the loop stage without being a loop result")
        p = ow.results.index(o)
        if align[p] < 0 or rw.results[align[p]] != r or (per_device and s != layout[p]):
            raise NotFormed(f"loop result {o} is read under another layout than it is carried in")
    pairs = []
    for which, k in (("loop body", 1), ("loop condition", 0)):
        pairs.append(_region_pair(f"{name}: {which}", ref, other, links, rw.regions[k], ow.regions[k], align,
                                  layout, hoisted, ref_given, returns_carried=(k == 1)))
    return pairs


def _region_pair(name: str, ref: Side, other: Side, links: dict[str, Link], rb: Block, ob: Block,
                 align: list[int], layout: list[Sharding | None], hoisted: set[str], ref_given: set[str],
                 returns_carried: bool) -> StagePair:
    per_device = other.module.per_device
    r_remat, r_caps = _closure(ref, [], _free(rb), ref_given)
    o_remat, o_caps = _closure(other, [], _free(ob), hoisted)
    # Slots, one per reference value: the carried ones in the other loop's order (an extra
    # counter of the other loop is its own), then the outside values the bodies read. Each
    # lists the other region's names holding it, with their layouts.
    keys: list[str] = []
    holders: dict[str, list[tuple[str, Sharding | None]]] = {}
    for p, (q, s) in enumerate(zip(align, layout)):
        key = f"carried {q}" if q >= 0 else f"extra {p}"
        if key not in holders:
            keys.append(key)
        holders.setdefault(key, []).append((ob.args[p], s))
    for v in o_caps:
        link = links.get(v)
        if link is None:
            raise NotFormed(f"{v}, read by the other loop, holds no reference value")
        if link.sharding is not None and link.sharding.unreduced:
            raise NotFormed(f"{v}, read by the other loop, is a partial sum")
        if link.ref not in holders:
            keys.append(link.ref)
        holders.setdefault(link.ref, []).append((v, link.sharding))
    for v in r_caps:
        if v not in holders:
            keys.append(v)
            holders[v] = []
    rtypes = _types(ref, rb)
    otypes = _types(other, ob)
    r_names: list[str] = []
    r_types: list[TensorType] = []
    o_names: list[str] = []
    o_types: list[TensorType] = []
    o_shard: list[Sharding | None] = []
    o_pre: list[Op] = []  # the device id and the copies sliced from a shared slot
    slots: list[str] = []
    device = "%tv.device"
    for n, key in enumerate(keys):
        held = holders[key]
        if key.startswith("extra "):  # the other loop's own counter: unused by the reference
            name_o = held[0][0]
            r_names.append(f"%extra{n}")
            r_types.append(otypes[name_o])
            o_names.append(name_o)
            o_types.append(otypes[name_o])
            o_shard.append(None)
            slots.append(f"%extra{n}")
            continue
        if key.startswith("carried "):
            name_r = rb.args[int(key.split()[1])]
        else:
            name_r = key if key in r_caps else f"{key}.slot{n}"
        gt = rtypes[name_r] if name_r in rtypes else rtypes[key]
        r_names.append(name_r)
        r_types.append(gt)
        slots.append(name_r if key.startswith("carried ") else key)
        for v, s in held:
            lt = s.local_type(gt) if per_device and s is not None else gt
            if v in otypes and otypes[v] != lt:
                raise NotFormed(f"{v}: {otypes[v]} is not the {lt} of its layout")
        if len(held) <= 1:
            s = held[0][1] if held else None
            o_names.append(held[0][0] if held else f"%slot{n}")
            o_types.append(s.local_type(gt) if per_device and s is not None else gt)
            o_shard.append(s if per_device else None)
        elif not per_device:  # a global program: the copies are the value
            o_names.append(held[0][0])
            o_types.append(gt)
            o_shard.append(None)
            o_pre.extend(_copy(held[0][0], v, gt) for v, _ in held[1:])
        else:  # the value whole on every device, each copy its layout's block of it
            mesh = next((s.mesh for _, s in held if s is not None), None)
            if mesh is None:
                raise NotFormed(f"{key} is read under several layouts on no mesh")
            if not o_pre:
                o_pre.extend(_device_id(other.module, device))
            whole = f"%tv.whole{n}"
            o_names.append(whole)
            o_types.append(gt)
            o_shard.append(Sharding(mesh, ((),) * len(gt.shape)))
            for v, s in held:
                o_pre.extend(_derive(whole, v, s, gt, device, other.module.num_devices))
    if returns_carried:
        kept = _proved_next(align)
        r_ret = [rb.returns[align[p]] for p in kept]
        o_ret = [ob.returns[p] for p in kept]
        out_shard = tuple(layout[p] for p in kept)
    else:
        r_ret, o_ret, out_shard = list(rb.returns), list(ob.returns), (None,) * len(ob.returns)
    ref_m = _module(ref.module, r_names, r_types, r_remat + list(rb.ops), r_ret, rtypes, False, (), ())
    other_m = _module(other.module, o_names, o_types, o_pre + o_remat + list(ob.ops), o_ret, otypes, per_device,
                      tuple(o_shard), out_shard)
    locs = tuple(op.loc for op in ob.ops if source_loc(op.loc))
    return StagePair(name, ref_m, other_m, len(rb.ops), len(ob.ops), locs, tuple(slots), loop=True)


def _proved_next(align: list[int]) -> list[int]:
    """The other loop's carried positions whose next value the body proof checks: every
    one that holds a reference value, each copy of one under its own layout (the
    induction's hypothesis is about each; an extra counter's next value is not proved)."""
    return [p for p, q in enumerate(align) if q >= 0]


def _types(side: Side, block: Block) -> dict[str, TensorType]:
    from tv_mlir.stages.extract import _types as top

    out = dict(top(side))
    out.update(zip(block.args, block.arg_types))
    stack = [block]
    while stack:
        b = stack.pop()
        out.update(zip(b.args, b.arg_types))
        for op in b.ops:
            out.update(zip(op.results, op.result_types))
            stack.extend(op.regions)
    return out
