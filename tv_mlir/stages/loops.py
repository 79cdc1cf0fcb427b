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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tv_mlir.errors import TvError
from tv_mlir.ir import Block, Module, Op, Sharding, TensorType
from tv_mlir.options import Options
from tv_mlir.semantics.ops import DEVICE_IDS
from tv_mlir.stages.extract import (
    NotFormed,
    StagePair,
    _closure,
    _copy,
    _derive,
    _device_id,
    _module,
    _partial_slot,
    source_loc,
)
from tv_mlir.stages.lineage import Link, Values
from tv_mlir.stages.plan import Side, region_uses
from tv_mlir.verdict import Verdict

# Slices of loop-invariant carried values as body stage inputs (`_shared_slices`). A switch
# so the tests can show what it does.
SHARED_SLICES = True
# A large loop body cut into a chain of stages of its own (`_chained`). A switch so the
# tests can show what it does.
CHAIN_BODY = True
# Bodies with fewer ops than this stay one stage: proved whole they are small, and cut,
# a stage may take two related values (g and g * g) as separate inputs and fail where the
# whole body holds (widening does not reach into a loop body). A decoder layer has ~100.
MIN_BODY_OPS = 32
# Match a constant initial value of the other loop with a reference one whose blocks it
# holds (`_constant_block`). A switch so the tests can show what it does.
BLOCK_CONSTANTS = True
# A carried value held as partial sums (a scan's gradient stacks, summed over dp after the
# loop): as an input, one of every group's parts (`extract._partial_slot`); as a written
# stack, its update proved as partial sums (`_written_stacks`). A switch so the tests can
# show what it does.
PARTIAL_CARRIED = True
# Stacks the bodies only write (`_written_stacks`): proved by their updates. A switch so the
# tests can show what it does.
WRITTEN_STACKS = True
# Layouts tried per constant position (`_layouts`); a mesh of a few axes has far fewer.
MAX_LAYOUTS = 64
# The names of an induction's two stage pairs (after the chain link's name and ": "): what
# `rests_on_induction` counts in a verdict.
BODY = "loop body"
CONDITION = "loop condition"


def top_level_loops(module: Module) -> int:
    """The while loops a chain can make loop stages of: those in the entry's block and in
    the blocks of its manual computations (the prepared module's calls are inlined)."""
    def count(block: Block) -> int:
        n = 0
        for op in block.ops:
            if op.name == "stablehlo.while":
                n += 1
            elif op.name == "sdy.manual_computation":
                n += sum(count(r) for r in op.regions)
        return n
    return count(module.main.body)


def rests_on_induction(verdict: Verdict, ref: Module, other: Module) -> str:
    """Why an `equivalent` verdict of the prepared pair does not rest on induction for every
    top-level loop of both programs; "" when it does. Shrinking's rule l (per-trip loop
    degrees, shrink/degree.py) is sound only then: each loop is its own chain link, proved
    by its body and condition stages on free carried values, so the stages after it take
    its results as free inputs. A pair proved whole, or a loop left inside another stage,
    is unrolled over its trips, and the degree composed across them is what would carry
    the verdict to the original sizes (docs/shrinking.md, rule l)."""
    st = verdict.stages or {}
    if not st.get("used"):
        return f"proved whole ({st.get('reason', 'not cut')})"
    if "whole" in st:
        return "a stage failed and the pair was proved whole"
    records = [r for r in st.get("list", []) if f": {BODY}" in r.get("name", "")]
    if any(r.get("verdict") != "equivalent" for r in records):
        return "a loop body stage is not proved"
    # A body cut into a chain has a record per stage, named after its loop's link.
    bodies = len({r["name"].split(f": {BODY}")[0] for r in records})
    loops = (top_level_loops(ref), top_level_loops(other))
    if loops[0] != loops[1] or bodies < loops[0]:
        return (f"{bodies} loop(s) proved by induction, of {loops[0]} in the reference and {loops[1]} in the other "
                f"program")
    return ""


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
            if q is not None and other.module.per_device:
                # Equal on every device is the replicated layout; take it when later stages
                # read the result so (the step then proves the replicas agree).
                # Partial sums of zeros likewise (every group's parts sum to zero), when
                # the base holds under the result's layout (`_blocks_equal`). Float values
                # only: a counter keeps no layout (`_shared_slices` reads it as one value).
                r = links.get(ow.results[p])
                if r is not None and r.sharding is not None and r.ref == rw.results[q] \
                        and not any(r.sharding.dims) and np.asarray(o_vals[v][0]).dtype.kind == "f" \
                        and _blocks_equal(r_vals[rw.operands[q]], _per_device(o_vals[v], r.sharding.mesh.size),
                                          r.sharding):
                    s = r.sharding
            if q is None and other.module.per_device and BLOCK_CONSTANTS:
                q, s = _constant_block(ref, links, rw, ow, p, free, r_vals, o_vals)
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
            if s is not None and s.unreduced and not PARTIAL_CARRIED:
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


def _constant_block(ref: Side, links: dict[str, Link], rw: Op, ow: Op, p: int, free: list[int],
                    r_vals: Values, o_vals: Values) -> tuple[int | None, Sharding | None]:
    """A reference position, and a layout, whose block on every device is the other loop's
    constant initial value at `p`: a scan's stacked activations start from zeros of the
    per-device shape ([126, 4, ...] against [126, 8, ...]), a mask constant is built at
    its per-device shape. The base of the induction for this position is then a fact
    about two literals, checked here exactly on every device (a block of a splat is the
    splat of the block's shape; any other constant is compared element by element). The
    step is the body proof's, as for any other position, so a wrong pairing of two equal
    constants only fails a proof. Candidates, in order: the position and layout of the
    reference result that the other's result holds (the lineage's evidence), then each
    free constant position under each layout that gives the local shape. Partial sums
    are not matched (the body stage has no carried partial slot). (None, None): no match."""
    cands: list[tuple[int, Sharding]] = []
    link = links.get(ow.results[p])
    if link is not None and link.ref in rw.results and link.sharding is not None:
        cands.append((rw.results.index(link.ref), link.sharding))
    mesh = next((k.sharding.mesh for k in links.values() if k.sharding is not None), None)
    o_init = o_vals.get(ow.operands[p])
    if mesh is None or not o_init:
        return None, None
    o_init = _per_device(o_init, mesh.size)
    local = np.asarray(o_init[0][0]).shape
    for q in free:
        r_init = r_vals.get(rw.operands[q])
        if ref.kind.get(rw.operands[q]) == "const" and r_init:
            cands += [(q, s) for s in _layouts(mesh, np.asarray(r_init[0]).shape, local)]
    for q, s in cands:
        if ref.kind.get(rw.operands[q]) != "const" or s.mesh.size != len(o_init[0]):
            continue
        if _blocks_equal(r_vals.get(rw.operands[q], []), o_init, s):
            return q, s
    return None, None


def _per_device(runs: Sequence[Any], n: int) -> list[Any]:
    """Per run, the tuple of per-device values: a constant is one array for every device
    in the runs (no device id reaches it)."""
    return [o if isinstance(o, tuple) else (o,) * n for o in runs]


def _blocks_equal(r_runs: Sequence[Any], o_runs: Sequence[Any], s: Sharding) -> bool:
    """Whether on every run the other's per-device value is, on every device, the block of
    the reference value that layout `s` places there (replicas included). With partial
    sums (unreduced axes) only zeros are matched: a zero reference value, and zeros of the
    block's shape on every device, whose sum over any group is the zero block."""
    from tv_mlir.execute.spmd import scatter

    if not r_runs or len(r_runs) != len(o_runs):
        return False
    for r, o in zip(r_runs, o_runs):
        r = np.asarray(r)
        if not isinstance(o, tuple) or r.dtype == object or len(s.dims) != r.ndim \
                or any(d % s.shards(i) for i, d in enumerate(r.shape)) or len(o) != s.mesh.size:
            return False
        if s.unreduced:
            local = s.local_type(TensorType(r.shape, "f32")).shape
            if not (r.dtype.kind == "f" and not np.any(r) and all(
                    np.asarray(x).shape == local and np.asarray(x).dtype.kind == "f" and not np.any(x) for x in o)):
                return False
            continue
        try:
            parts = scatter(r, s, len(o), "").parts
        except TvError:
            return False
        if len(parts) != len(o) or not all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(parts, o)):
            return False
    return True


def _layouts(mesh: Any, shape: tuple[int, ...], local: tuple[int, ...]) -> list[Sharding]:
    """The layouts on `mesh` (each axis splitting at most one dim, no partial sums) that
    make a value of `shape` the `local` shape per device, at most `MAX_LAYOUTS`."""
    if len(shape) != len(local) or any(b == 0 or a % b for a, b in zip(shape, local)):
        return []
    axes = [a for a, _ in mesh.axes]
    out: list[Sharding] = []

    def place(i: int, used: set[str], dims: list[tuple[str, ...]]) -> None:
        if len(out) >= MAX_LAYOUTS:
            return
        if i == len(shape):
            out.append(Sharding(mesh, tuple(dims)))
            return
        want = shape[i] // local[i]
        for group in _ordered_subsets([a for a in axes if a not in used]):
            if int(np.prod([mesh.axis_size(a) for a in group], dtype=np.int64)) == want:
                place(i + 1, used | set(group), dims + [group])

    place(0, set(), [])
    return out


def _ordered_subsets(axes: list[str]) -> list[tuple[str, ...]]:
    """Every sequence of distinct axes (the empty one first): a dim split by axes major to minor."""
    from itertools import permutations

    return [g for k in range(len(axes) + 1) for g in permutations(axes, k)]


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
              hoisted: set[str], ref_given: set[str], r_vals: Values, o_vals: Values,
              options: Options | None = None) -> list[StagePair]:
    """The loop stage's pairs: the body's (cut into a chain of its own when `options` is
    given and the body is large enough to cut, `_chained`) and the condition's."""
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
    for which, k in ((BODY, 1), (CONDITION, 0)):
        pair = _region_pair(f"{name}: {which}", ref, other, links, rw.regions[k], ow.regions[k], align,
                            layout, hoisted, ref_given, returns_carried=(k == 1))
        pairs.extend(_chained(pair, options) if k == 1 and options is not None and CHAIN_BODY else [pair])
    return pairs


def _chained(body: StagePair, options: Options) -> list[StagePair]:
    """The body pair cut into stages like any pair of programs (a decoder layer is one
    body: proved whole, it is the largest problem of the plan), or the pair itself when it
    does not cut. The chain proves what the body pair states: if its inputs (the carried
    values under the hypothesis, the outside values, the shared slices) correspond, so do
    its outputs; each stage takes the values live across its cut as free inputs, so the
    induction and rule l's degrees (per trip, from free carried values) are unchanged."""
    from tv_mlir.stages.run import MIN_STAGES, _cut

    if min(body.ref_ops, body.other_ops) < MIN_BODY_OPS:
        return [body]
    try:
        # Any body with enough ops is cut, small ones too: a failed stage then names the
        # part of the body that differs (its ops and source lines), not the whole body.
        # In the program's order (`run.SCHEDULE`: a failed body stage is not widened).
        cut = _cut(body.ref, body.other, replace(options, assume=(), stage_min_elements=0), None, schedule=False)
    except TvError:  # an op the body's numeric runs do not know: the body is one stage
        return [body]
    if cut.why or cut.chain is None or len(cut.stages) < MIN_STAGES:
        return [body]
    return [replace(s, name=f"{body.name} ({s.name})", loop=True) for s in cut.stages]


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
    slice_names: dict[str, str] = {}  # "slice n" -> the reference's slice it stands for
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
    r_ops, o_ops, dropped = list(rb.ops), list(ob.ops), set()
    written: dict[int, tuple[Op, dict[int, Op]]] = {}
    if returns_carried and WRITTEN_STACKS:
        written = _written_stacks(rb, ob, align, layout, rtypes, otypes)
        gone = {id(r) for r, _ in written.values()} | {id(o) for _, ps in written.values() for o in ps.values()}
        r_ops = [op for op in r_ops if id(op) not in gone]
        o_ops = [op for op in o_ops if id(op) not in gone]
        keys = [k for k in keys if not (k.startswith("carried ") and int(k.split()[1]) in written)]
    if returns_carried:
        slices = _shared_slices(rb, ob, align, layout, rtypes) if SHARED_SLICES else None
        if slices is not None:
            dropped = slices.dropped
            gone = {id(op) for op in slices.ref_ops + slices.other_ops}
            r_ops = [op for op in r_ops if id(op) not in gone]
            o_ops = [op for op in o_ops if id(op) not in gone]
            keys = [k for k in keys if not (k.startswith("carried ") and int(k.split()[1]) in dropped)]
            for n, (r_first, r_rest, held) in enumerate(slices.slots):
                key = f"slice {n}"
                keys.append(key)
                holders[key] = held
                slice_names[key] = r_first
                r_ops[:0] = [_copy(r_first, v, rtypes[r_first]) for v in r_rest]
    else:
        # The condition reads few carried values (a counter): the others are not its inputs.
        # Each program's names are its own (the two may use one name for different values).
        r_used, o_used = _reads(rb), _reads(ob)
        keys = [k for k in keys if (k.startswith("carried ") and rb.args[int(k.split()[1])] in r_used)
                or (not k.startswith("carried ") and k in r_caps) or any(v in o_used for v, _ in holders[k])]
    r_names: list[str] = []
    r_types: list[TensorType] = []
    o_names: list[str] = []
    o_types: list[TensorType] = []
    o_shard: list[Sharding | None] = []
    o_pre: list[Op] = []  # the device id and the copies sliced from a shared slot
    r_pre: list[Op] = []  # a partial slot's sum of its parts
    partial: list[int] = []  # inputs that are parts of a partial sum
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
        elif key in slice_names:
            name_r = slice_names[key]
        else:
            name_r = key if key in r_caps else f"{key}.slot{n}"
        gt = rtypes[name_r] if name_r in rtypes else rtypes[key]
        r_names.append(name_r)
        r_types.append(gt)
        slots.append(name_r if key.startswith("carried ") or key in slice_names else key)
        for v, s in held:
            lt = s.local_type(gt) if per_device and s is not None else gt
            if v in otypes and otypes[v] != lt:
                raise NotFormed(f"{v}: {otypes[v]} is not the {lt} of its layout")
        if any(s is not None and s.unreduced for _, s in held) and (len(held) > 1 or not per_device
                                                                   or not PARTIAL_CARRIED):
            raise NotFormed(f"{key} is held as partial sums and under another layout")
        if len(held) == 1 and per_device and held[0][1] is not None and held[0][1].unreduced:
            # Every split of the value into parts is one input: the hypothesis says only
            # that the parts sum to the reference value (replicas equal), and so does this.
            o_names.append(held[0][0])
            partial.append(n)
            _partial_slot(n, held[0][1], gt, r_names, r_types, o_names, o_types, o_shard, r_pre, o_pre)
        elif len(held) <= 1:
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
        # A dropped position is returned unchanged by both bodies: its hypothesis carries over.
        kept = [p for p in _proved_next(align) if align[p] not in dropped]
        # A written stack's next value is proved by its update (`_written_stacks`).
        r_ret = [written[align[p]][0].operands[1] if align[p] in written else rb.returns[align[p]] for p in kept]
        o_ret = [written[align[p]][1][p].operands[1] if align[p] in written else ob.returns[p] for p in kept]
        out_shard = tuple(layout[p] for p in kept)
    else:
        r_ret, o_ret, out_shard = list(rb.returns), list(ob.returns), (None,) * len(ob.returns)
    ref_m = _module(ref.module, r_names, r_types, r_pre + r_remat + r_ops, r_ret, rtypes, False, (), ())
    other_m = _module(other.module, o_names, o_types, o_pre + o_remat + o_ops, o_ret, otypes, per_device,
                      tuple(o_shard), out_shard)
    locs = tuple(op.loc for op in o_ops if source_loc(op.loc))
    return StagePair(name, ref_m, other_m, len(rb.ops), len(ob.ops), locs, tuple(slots), loop=True,
                     partial=tuple(partial))


@dataclass
class _Slices:
    """Slices of loop-invariant carried values that the body stage takes as inputs."""

    slots: list[tuple[str, list[str], list[tuple[str, Sharding | None]]]]  # (ref slice, its twins, other holders)
    ref_ops: list[Op]
    other_ops: list[Op]
    dropped: set[int]  # reference positions no longer stage inputs


def _reads(block: Block) -> set[str]:
    out = set(block.returns)
    for op in block.walk():
        out.update(op.operands)
    return out


def _index_key(defs: dict[str, Op], value: str, carried: dict[str, int], depth: int = 0) -> Any:
    """The computation of an index inside a body, with carried values named by the reference
    position they hold and constants by their value; None when it reads anything else (an
    outside value, a position not known equal in both programs, an op with regions)."""
    if value in carried:
        return ("carried", carried[value])
    op = defs.get(value)
    if op is None or op.regions or depth > 16:
        return None
    if op.name == "stablehlo.constant":
        v = np.asarray(op.attrs.get("value"))
        return ("const", str(op.result_types[0]), v.shape, tuple(v.ravel().tolist()))
    parts = [_index_key(defs, o, carried, depth + 1) for o in op.operands]
    if any(p is None for p in parts):
        return None
    k = op.results.index(value)
    attrs = tuple(sorted((n, repr(a)) for n, a in op.attrs.items()))
    return (op.name, k, str(op.result_types[k]), attrs, tuple(parts))


def _slice_keys(block: Block, uses: list[Op], name: str, carried: dict[str, int], s: Sharding | None,
                shape: tuple[int, ...]) -> dict[Any, list[Op]] | None:
    """The body's uses of the carried value `name` (of local `shape`, under layout `s`) by
    slice: start computations and sizes -> the slices; None when a use is not a
    dynamic_slice of it, or a dim its layout shards is not taken whole from 0."""
    defs = {r: op for op in block.ops for r in op.results}
    top = {id(op) for op in block.ops}
    out: dict[Any, list[Op]] = {}
    for op in uses:
        if op.name != "stablehlo.dynamic_slice" or op.operands[0] != name or name in op.operands[1:] \
                or id(op) not in top:
            return None
        sizes = list(op.attrs.get("slice_sizes", ()))
        key: list[Any] = []
        for d, start in enumerate(op.operands[1:]):
            k = _index_key(defs, start, carried)
            if k is None or d >= len(sizes):
                return None
            if k[0] == "const" and not any(k[3]) and sizes[d] == shape[d]:
                key.append(("whole",))
            elif s is not None and d < len(s.dims) and s.dims[d]:
                return None
            else:
                key.append((k, sizes[d]))
        out.setdefault(tuple(key), []).append(op)
    return out


def _shared_slices(rb: Block, ob: Block, align: list[int], layout: list[Sharding | None],
                   rtypes: dict[str, TensorType]) -> _Slices | None:
    """Slices that both bodies take of one loop-invariant carried value at one index (a
    scan's `dynamic_slice(stacked_w, i)`), as one stage input each: the layer's weights
    instead of the whole stack and a free counter choosing among its layers (terms that
    grow with the layer count).

    Sound when, for a reference position q: both bodies return q's values unchanged (so
    the hypothesis on them holds at every trip, and their next values need no proof); all
    they do with them is `dynamic_slice`; every reference slice has an other slice with
    the same start computations over the counters (carried positions of one layout-free
    reference value each, equal by the hypothesis) and constants, and the same sizes, and
    the other way round; each dim the value's layout shards is taken whole from 0. Then
    the other's slice is the reference's slice under the value's layout, whatever the
    counters hold (XLA clamps both starts alike: the dims are the same): one shared input
    covers every trip. The stage still takes the counters, so what else reads them is
    unchanged. None when no position qualifies."""
    r_carried = {a: q for q, a in enumerate(rb.args)}
    o_carried = {ob.args[p]: q for p, q in enumerate(align) if q >= 0 and layout[p] is None}
    r_uses: dict[str, list[Op]] = {}
    o_uses: dict[str, list[Op]] = {}
    for op in rb.walk():
        for o in op.operands:
            r_uses.setdefault(o, []).append(op)
    for op in ob.walk():
        for o in op.operands:
            o_uses.setdefault(o, []).append(op)
    for v in rb.returns:
        r_uses.setdefault(v, [])
    out = _Slices([], [], [], set())
    for q, w in enumerate(rb.args):
        others = [p for p, a in enumerate(align) if a == q]
        if rb.returns[q] != w or not others or any(ob.returns[p] != ob.args[p] for p in others) \
                or any(_partial(layout[p]) for p in others) \
                or rb.returns.count(w) != 1 or any(ob.returns.count(ob.args[p]) != 1 for p in others):
            continue
        r_keyed = _slice_keys(rb, r_uses.get(w, []), w, r_carried, None, rtypes[w].shape)
        o_keyed = [_slice_keys(ob, o_uses.get(ob.args[p], []), ob.args[p], o_carried, layout[p],
                               ob.arg_types[p].shape) for p in others]
        if r_keyed is None or not r_keyed or any(k is None or set(k) != set(r_keyed) for k in o_keyed):
            continue
        for key, r_list in r_keyed.items():
            held = [(o.results[0], layout[p]) for p, k in zip(others, o_keyed) if k is not None for o in k[key]]
            out.slots.append((r_list[0].results[0], [o.results[0] for o in r_list[1:]], held))
            out.ref_ops.extend(r_list)
            out.other_ops.extend(o for k in o_keyed if k is not None for o in k[key])
        out.dropped.add(q)
    return out if out.dropped else None


def _written_stacks(rb: Block, ob: Block, align: list[int], layout: list[Sharding | None],
                    rtypes: dict[str, TensorType], otypes: dict[str, TensorType]
                    ) -> dict[int, tuple[Op, dict[int, Op]]]:
    """Stacks the bodies only write, one layer per trip (a scan's stacked residuals): per
    reference position q, its `dynamic_update_slice` and, per other position aligned with
    q, the other's. The body stage then proves the updates, not the stacks: neither is an
    input, and the update is returned under the stack's layout.

    Sound when, for q and every other position p held in it: the body reads the carried
    stack only as operand 0 of one dynamic_update_slice, at the top level, whose result is
    returned at that position and read by nothing else; the update's start in dim 0 is the
    same computation over the counters (carried positions of one layout-free reference
    value each, equal by the hypothesis) and constants in both bodies (`_index_key`), and
    every other start is the constant 0 with the update as large as the (local) dim; the
    layout does not split dim 0; the updates have the same size in dim 0. Partial sums are
    allowed: the start is one value on every device, so each row of the result is, on
    every device, the operand's row or the update's row alike, and a sum over a group of
    devices commutes with that choice. Then, with the hypothesis O_p = L(R_q) and the
    updates U_o = L(U_r) (L's
    blocks of the update's shape), the next stack DUS(O_p, U_o, i) is L(DUS(R_q, U_r, i)):
    dim 0 is whole on every device, so both clamp i alike and write the same rows, and the
    other dims are written whole, where L's block of the written rows is the block of the
    update. A stack read in the body in any other way, or written at another start, keeps
    its whole proof."""
    r_carried = {a: q for q, a in enumerate(rb.args)}
    o_carried = {ob.args[p]: q for p, q in enumerate(align) if q >= 0 and layout[p] is None}
    out: dict[int, tuple[Op, dict[int, Op]]] = {}
    for q in range(len(rb.args)):
        others = [p for p, a in enumerate(align) if a == q]
        if not others or any(_splits_first(layout[p]) or (_partial(layout[p]) and not PARTIAL_CARRIED)
                             for p in others):
            continue
        r_op = _only_write(rb, q)
        if r_op is None:
            continue
        r_key = _write_key(rb, r_op, r_carried, rtypes)
        o_found: dict[int, Op] = {}
        for p in others:
            o_op = _only_write(ob, p)
            if o_op is None or _write_key(ob, o_op, o_carried, otypes) != r_key or r_key is None:
                break
            o_found[p] = o_op
        else:
            out[q] = (r_op, o_found)
    return out


def _partial(s: Sharding | None) -> bool:
    return s is not None and bool(s.unreduced)


def _splits_first(s: Sharding | None) -> bool:
    return s is not None and bool(s.dims) and bool(s.dims[0])


def _only_write(block: Block, k: int) -> Op | None:
    """The top-level dynamic_update_slice that makes carried position k's next value from
    its current one, when that is the only read of either and it writes every dim but
    dim 0 whole; else None."""
    arg, ret = block.args[k], block.returns[k]
    if block.returns.count(ret) != 1 or arg in block.returns:
        return None
    readers = [op for op in block.walk() if arg in op.operands]
    if len(readers) != 1:
        return None
    op = readers[0]
    top = {id(o) for o in block.ops}
    if op.name != "stablehlo.dynamic_update_slice" or id(op) not in top or op.results[0] != ret \
            or op.operands[0] != arg or arg in op.operands[1:]:
        return None
    if any(ret in o.operands for o in block.walk()):
        return None
    return op


def _write_key(block: Block, op: Op, carried: dict[str, int], types: dict[str, TensorType]) -> Any:
    """The update's dim-0 start computation and size, when every other dim is written
    whole from a constant 0; None otherwise."""
    defs = {r: o for o in block.ops for r in o.results}
    shape = op.result_types[0].shape
    upd_t = types.get(op.operands[1])
    upd = upd_t.shape if upd_t is not None else None
    if upd is None or len(upd) != len(shape) or len(op.operands) != 2 + len(shape):
        return None
    first = _index_key(defs, op.operands[2], carried)
    if first is None:
        return None
    for d in range(1, len(shape)):
        k = _index_key(defs, op.operands[2 + d], carried)
        if k is None or k[0] != "const" or any(k[3]) or upd[d] != shape[d]:
            return None
    return (first, upd[0])


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
