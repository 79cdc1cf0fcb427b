"""A stage as a pair of standalone programs: the reference's ops between two cuts as a
global function of the stage's inputs, the other program's as a per-device (or global)
function of the same global inputs laid out by their lineage, returning the values the
later stages read under their lineage's sharding. Proving the pair equal proves: whenever
the stage's inputs hold their reference values, so do its outputs.

A stage input (a slot) is one reference value. When the other program reads it under
several layouts (an FSDP weight as the sharded argument and as its all-gathered copy), the
slot is the whole value on every device and each copy is sliced from it as its layout
places it (`_derive`): the copies are then one value to the proof, as they are in the
chain (each layout is the argument's own or what an earlier stage proved)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from tv_mlir.frontend.read import np_dtype
from tv_mlir.ir import Block, Func, Module, Op, Sharding, TensorType
from tv_mlir.stages.hashing import _callees
from tv_mlir.stages.lineage import Link
from tv_mlir.stages.plan import Side, region_uses


class NotFormed(Exception):
    """The stage's inputs or outputs do not line up (the whole pair is proved instead)."""


@dataclass(frozen=True)
class StagePair:
    name: str  # "prologue", "stage 3 of 40"
    ref: Module
    other: Module
    ref_ops: int
    other_ops: int
    locs: tuple[str, ...]  # source locations of the other program's ops, in order (first ones)
    slots: tuple[str, ...] = ()  # per input (both programs'): the reference value it holds (once, but for
    # partial sums: one slot per layout)
    loop: bool = False  # a loop's body or condition (stages/loops.py)
    partial: tuple[int, ...] = ()  # inputs that are parts of a partial sum (`_partial_slot`)


def source_loc(loc: str) -> bool:
    """A location that names a source line (jax's `name @ file:line:col`, a module's
    `file:line:col`), not only the module's file."""
    return bool(loc) and ":" in loc


def _types(side: Side) -> dict[str, TensorType]:
    if side.types is None:
        body = side.module.main.body
        side.types = dict(zip(body.args, body.arg_types))
        for op in body.ops:
            side.types.update(zip(op.results, op.result_types))
    return side.types


def _closure(side: Side, ops: Sequence[Op], outputs: Sequence[str], given: set[str]
             ) -> tuple[list[Op], list[str]]:
    """The stage's ops with the const / non-given prologue ops they need copied in, and the
    values it takes as inputs (in order of first use)."""
    chosen: dict[int, Op] = {id(op): op for op in ops}
    defined = {r for op in ops for r in op.results}
    inputs: list[str] = []
    seen: set[str] = set()
    pending = [u for op in ops for u in region_uses(op)] + list(outputs)
    k = 0
    while k < len(pending):
        v = pending[k]
        k += 1
        if v in defined or v in seen:
            continue
        kind = side.kind.get(v)
        if kind == "const" or (kind == "prologue" and v not in given):
            op = side.producer[v]
            chosen[id(op)] = op
            defined.update(op.results)
            pending.extend(region_uses(op))
        else:
            seen.add(v)
            inputs.append(v)
    if side.order is None:
        side.order = {id(op): n for n, op in enumerate(side.module.main.body.ops)}
    order = side.order
    return sorted(chosen.values(), key=lambda op: order[id(op)]), inputs


def build(name: str, ref: Side, other: Side, links: dict[str, Link], ref_ops: Sequence[Op],
          other_ops: Sequence[Op], ref_outputs: Sequence[str], other_outputs: Sequence[str],
          out_shardings: Sequence[Sharding | None], hoisted: set[str], ref_given: set[str]) -> StagePair:
    other_body, other_in = _closure(other, other_ops, other_outputs, hoisted)
    ref_body, ref_in = _closure(ref, ref_ops, ref_outputs, ref_given)
    ref_args = list(ref.module.main.body.args)
    other_args = list(other.module.main.body.args)
    # A slot is one global input: a reference value under one layout, or (`shared`) a
    # reference value the other program reads under several layouts. Separate slots for
    # those would be independent free inputs, and the stage could not know its copies of
    # one weight (FSDP-sharded and all-gathered) equal; a shared slot is the whole value,
    # from which each copy is sliced as its layout places it on the device (`_derive`).
    keys: dict[str, tuple[str, Sharding | None]] = {}
    for v in other_in:
        if other.kind.get(v) == "arg":
            k = other_args.index(v)
            shard = other.module.arg_shardings[k] if other.module.per_device else None
            keys[v] = (ref_args[k], shard)
        else:
            link = links.get(v)
            if link is None:
                raise NotFormed(f"{v} of the other program has no reference value")
            keys[v] = (link.ref, link.sharding)
    per_device = other.module.per_device
    layouts: dict[str, list[Sharding | None]] = {}
    for r, s in keys.values():
        if s not in layouts.setdefault(r, []):
            layouts[r].append(s)
    # A value also held as partial sums is shared through its parts (`_shared_parts`): the
    # parts are no function of the value, but the value is theirs. Two partial layouts of
    # one value stay one slot each (two sets of parts, each only known to sum to it).
    shared_refs = {r for r, ls in layouts.items()
                   if per_device and len(ls) > 1 and sum(1 for s in ls if s is not None and s.unreduced) <= 1}
    slots: list[tuple[str, Sharding | None]] = []
    other_slot: dict[str, int] = {}
    for v in other_in:
        r, s = keys[v]
        key = (r, None) if r in shared_refs else (r, s)
        if key not in slots:
            slots.append(key)
        other_slot[v] = slots.index(key)
    shared = {n for n, (r, _) in enumerate(slots) if r in shared_refs}
    rtypes, otypes = _types(ref), _types(other)
    ref_slot: dict[str, int] = {}
    alias: dict[str, int] = {}  # a reference input held as a `Link.also` -> its holder's slot
    for v in ref_in:
        hit = next((n for n, (r, _) in enumerate(slots) if r == v), None)
        if hit is None:
            hit = _sharer(v, slots, other_slot, links, rtypes, other)
            if hit is not None:
                alias[v] = hit
                continue
            slots.append((v, None))
            hit = len(slots) - 1
        ref_slot[v] = hit
    # Reference arguments: the slot's value under its own name once, fresh names for more layouts of it.
    r_names: list[str] = []
    r_types: list[TensorType] = []
    o_names: list[str] = []
    o_types: list[TensorType] = []
    o_shard: list[Sharding | None] = []
    r_pre: list[Op] = []  # ops that make a partial slot's reference value from its parts
    o_pre: list[Op] = []  # ... its other value from its part; a shared slot's copies; extra names of a slot
    used_r: set[str] = set()
    held: dict[int, list[str]] = {}
    for v, n in other_slot.items():
        held.setdefault(n, []).append(v)
    device: list[str] = []  # the device id's name, once the first shared slot needs it
    for n, (r, s) in enumerate(slots):
        gt = rtypes[r]
        first = r in ref_slot and ref_slot[r] == n
        r_names.append(r if first and r not in used_r else f"{r}.slot{n}")
        used_r.add(r_names[-1])
        # The reference inputs the slot's holders also hold are copies of its value (the
        # name the value has before `_partial_slot` / `_shared_parts` rename the input to
        # its parts: their sum is made under it).
        r_pre.extend(_copy(r_names[-1], a, rtypes[a]) for a, m in alias.items() if m == n)
        r_types.append(gt)
        if n in shared:
            whole = f"{r}.whole{n}"
            o_names.append(whole)
            mesh = next(x.mesh for x in layouts[r] if x is not None)
            if not device:
                device.append("%tv.device")
                o_pre.extend(_device_id(other.module, device[0]))
            part = next((x for x in layouts[r] if x is not None and x.unreduced), None)
            if part is not None:
                _shared_parts(n, part, gt, held[n], keys, device[0], other.module.num_devices, r_names, r_types,
                              o_types, r_pre, o_pre)
            else:
                o_types.append(gt)
                for v in held[n]:
                    o_pre.extend(_derive(whole, v, keys[v][1], gt, device[0], other.module.num_devices))
            o_shard.append(Sharding(mesh, ((),) * len(o_types[-1].shape)))
            continue
        names = held.get(n, [])
        o_names.append(names[0] if names else f"%slot{n}")
        # One layout held under several names (CSE leaves few): the others are copies.
        local = s.local_type(gt) if per_device and s is not None else gt
        copies = [_copy(names[0], v, local) for v in names[1:]]
        if per_device and s is not None and s.unreduced:
            _partial_slot(n, s, gt, r_names, r_types, o_names, o_types, o_shard, r_pre, o_pre)
            o_pre.extend(copies)
            continue
        o_pre.extend(copies)
        if per_device and s is not None:
            if any(d % s.shards(i) for i, d in enumerate(gt.shape)) or len(s.dims) != len(gt.shape):
                raise NotFormed(f"{r} does not split under {s.describe()}")
            o_types.append(s.local_type(gt))
        else:
            o_types.append(gt)
        o_shard.append(s if per_device else None)
    partial = {n for n, (_, s) in enumerate(slots) if per_device and s is not None and s.unreduced}
    partial |= {n for n in shared if r_types[n] != rtypes[slots[n][0]]}  # shared through its parts
    for v, n in other_slot.items():
        want = TensorType(o_types[n].shape[1:], o_types[n].dtype) if n in partial else o_types[n]
        if n in shared:
            lay = keys[v][1]
            gt = rtypes[slots[n][0]]
            want = lay.local_type(gt) if lay is not None else gt
        if otypes.get(v) is not None and otypes[v] != want:
            raise NotFormed(f"{v}: {otypes[v]} is not the {want} of its layout")
    ref_m = _module(ref.module, r_names, r_types, r_pre + ref_body, list(ref_outputs), rtypes, False, (), ())
    other_m = _module(other.module, o_names, o_types, o_pre + other_body, list(other_outputs), otypes, per_device,
                      tuple(o_shard), tuple(out_shardings))
    locs = tuple(op.loc for op in other_ops if source_loc(op.loc))
    return StagePair(name, ref_m, other_m, len(ref_ops), len(other_ops), locs,
                     tuple(_fact_name(n, r, ref_slot, alias, held, links) for n, (r, _) in enumerate(slots)),
                     partial=tuple(sorted(partial)))


def _sharer(v: str, slots: list[tuple[str, Sharding | None]], other_slot: dict[str, int],
            links: dict[str, Link], rtypes: dict[str, TensorType], other: Side) -> int | None:
    """The slot of an input of the other program that holds reference input `v` besides
    its own value (`Link.also`, same layout), if any: the reference's `v` is then that
    slot's value. The chain proved the pair (stages/chain.py: the stage that made the later
    of the two proved it), as it proved every input's own link; only for activations
    (flow values): the prologue stage proves its values' own links only."""
    for w, n in other_slot.items():
        link = links.get(w)
        if (link is not None and v in link.also and other.kind.get(w) == "flow"
                and rtypes.get(v) == rtypes.get(slots[n][0])):
            return n
    return None


def _fact_name(n: int, r: str, ref_slot: dict[str, int], alias: dict[str, int], held: dict[int, list[str]],
               links: dict[str, Link]) -> str:
    """The reference value whose facts (finite, sign, interval: stages/run.py) the slot's
    input may be given: its own when the reference reads it, else one read as a copy of it
    (`alias`). A slot no reference input reads whose holders hold several values may hold
    its own value only on the runs (its value is cut at before its own is made: only the
    equal one it was proved to hold is known), so it gets none ("")."""
    if ref_slot.get(r) == n:
        return r
    read = next((a for a, m in alias.items() if m == n), None)
    if read is not None:
        return read
    if any((k := links.get(w)) is not None and k.also for w in held.get(n, [])):
        return ""
    return r


def _device_id(module: Module, name: str) -> list[Op]:
    """Ops that make `name` the device's flattened id (replica_id * num_partitions +
    partition_id, the id shardings place blocks by), as a ui32 scalar."""
    u32 = TensorType((), "ui32")
    if module.num_replicas == 1:
        return [Op("stablehlo.partition_id", (), (name,), (u32,))]
    if module.num_partitions == 1:
        return [Op("stablehlo.replica_id", (), (name,), (u32,))]
    rep, part, p, scaled = f"{name}.replica", f"{name}.partition", f"{name}.p", f"{name}.scaled"
    return [Op("stablehlo.replica_id", (), (rep,), (u32,)),
            Op("stablehlo.partition_id", (), (part,), (u32,)),
            Op("stablehlo.constant", (), (p,), (u32,), {"value": np.array(module.num_partitions, np.uint32)}),
            Op("stablehlo.multiply", (rep, p), (scaled,), (u32,)),
            Op("stablehlo.add", (scaled, part), (name,), (u32,))]


def _derive(whole: str, name: str, s: Sharding | None, gt: TensorType, device: str, n: int) -> list[Op]:
    """Ops that make `name` the block of the global value `whole` (every device holds all
    of it) that layout `s` places on this device: a dynamic_slice at offsets looked up by
    the device id in a constant table per split dim, the table read off the layout's mesh
    as `execute.spmd.scatter` places blocks (None: the value whole, as a copy)."""
    if s is None or not any(s.dims):
        return [_copy(whole, name, gt)]
    if s.mesh.size != n or set(s.mesh.coords()) != set(range(n)) or len(s.dims) != len(gt.shape):
        raise NotFormed(f"{name}'s layout {s.describe()} does not place a {gt} on {n} devices")
    if any(d % s.shards(i) for i, d in enumerate(gt.shape)):
        raise NotFormed(f"a {gt} does not split under {s.describe()}")
    local = s.local_type(gt)
    coords = s.mesh.coords()
    i32 = TensorType((), "i32")
    ops: list[Op] = []
    starts: list[str] = []
    zero = f"{name}.zero"
    for i, size in enumerate(local.shape):
        if not s.dims[i]:
            if zero not in starts:
                ops.append(Op("stablehlo.constant", (), (zero,), (i32,), {"value": np.zeros((), np.int32)}))
            starts.append(zero)
            continue
        table, row, start = f"{name}.table{i}", f"{name}.row{i}", f"{name}.start{i}"
        offsets = np.array([s.shard_index(coords[d], i) * size for d in range(n)], np.int32)
        ops += [Op("stablehlo.constant", (), (table,), (TensorType((n,), "i32"),), {"value": offsets}),
                Op("stablehlo.dynamic_slice", (table, device), (row,), (TensorType((1,), "i32"),),
                   {"slice_sizes": (1,)}),
                Op("stablehlo.reshape", (row,), (start,), (i32,))]
        starts.append(start)
    ops.append(Op("stablehlo.dynamic_slice", (whole, *starts), (name,), (local,), {"slice_sizes": local.shape}))
    return ops


def _copy(src: str, name: str, t: TensorType) -> Op:
    """`name` as a copy of `src` (a reshape to its own type is the identity)."""
    return Op("stablehlo.reshape", (src,), (name,), (t,))


def _partial_slot(n: int, s: Sharding, gt: TensorType, r_names: list[str], r_types: list[TensorType],
                  o_names: list[str], o_types: list[TensorType], o_shard: list[Sharding | None],
                  r_pre: list[Op], o_pre: list[Op]) -> None:
    """A slot whose value the other program holds as partial sums over the unreduced axes
    (replicated over the axes the layout names on no dim). Its global input is every
    device group's part, [G] + the value's shape with the new dim split by the unreduced
    axes: the reference's value is the sum of the parts, the other program's is its own
    part (the same on replicas). Every way to split the value into parts is one input, so the stage's
    proof covers whatever parts the earlier stage left (it proved only their sum)."""
    if any(d % s.shards(i) for i, d in enumerate(gt.shape)) or len(s.dims) != len(gt.shape):
        raise NotFormed(f"a {gt} does not split under {s.describe()}")
    if not gt.is_float:
        raise NotFormed(f"partial sums of {gt.dtype} values")
    g = math.prod(s.mesh.axis_size(a) for a in s.unreduced)
    r, v = r_names[n], o_names[n]
    parts_r, parts_o = f"{r}.parts{n}", f"{v}.part{n}"
    whole = TensorType((g, *gt.shape), gt.dtype)
    local = s.local_type(gt)
    r_names[n], r_types[n], o_names[n] = parts_r, whole, parts_o
    o_types.append(TensorType((1, *local.shape), gt.dtype))
    o_shard.append(Sharding(s.mesh, (s.unreduced, *s.dims)))
    r_pre.extend(_sum_parts(parts_r, r, gt, f"{r}.", n))
    o_pre.append(Op("stablehlo.reshape", (parts_o,), (v,), (local,)))


def _sum_parts(parts: str, out: str, gt: TensorType, prefix: str, n: int) -> list[Op]:
    """Ops that make `out` the sum of `parts` over its first dim."""
    scalar = TensorType((), gt.dtype)
    zero, a, b, c = f"{prefix}zero{n}", f"{prefix}a{n}", f"{prefix}b{n}", f"{prefix}c{n}"
    body = Block((a, b), (scalar, scalar), [Op("stablehlo.add", (a, b), (c,), (scalar,))], (c,))
    return [Op("stablehlo.constant", (), (zero,), (scalar,), {"value": np.zeros((), np_dtype(gt.dtype))}),
            Op("stablehlo.reduce", (parts, zero), (out,), (gt,), {"dimensions": (0,)}, (body,))]


def _shared_parts(n: int, part: Sharding, gt: TensorType, names: list[str],
                  keys: dict[str, tuple[str, Sharding | None]], device: str, devices: int, r_names: list[str],
                  r_types: list[TensorType], o_types: list[TensorType], r_pre: list[Op], o_pre: list[Op]) -> None:
    """A shared slot one of whose copies is partial sums (layout `part`; a value used both
    before and after its all-reduce): the input is every device group's part, [G] + the
    value's shape, whole on every device. The reference's value is their sum (as
    `_partial_slot`); the partial copy is its group's part, sliced as `_partial_slot`'s
    input layout places it; every other copy is sliced from the sum. Any parts summing to
    the value is one input, so the proof covers the parts the earlier stage left."""
    if not gt.is_float:
        raise NotFormed(f"partial sums of {gt.dtype} values")
    if any(d % part.shards(i) for i, d in enumerate(gt.shape)) or len(part.dims) != len(gt.shape):
        raise NotFormed(f"a {gt} does not split under {part.describe()}")
    g = math.prod(part.mesh.axis_size(a) for a in part.unreduced)
    r = r_names[n]
    whole_o = f"{r}.whole{n}"
    parts_t = TensorType((g, *gt.shape), gt.dtype)
    r_names[n], r_types[n] = f"{r}.parts{n}", parts_t
    r_pre.extend(_sum_parts(r_names[n], r, gt, f"{r}.", n))
    o_types.append(parts_t)
    total = f"{whole_o}.sum"
    o_pre.extend(_sum_parts(whole_o, total, gt, f"{whole_o}.", n))
    by_group = Sharding(part.mesh, (part.unreduced, *part.dims))
    for v in names:
        s = keys[v][1]
        if s == part:
            own = f"{v}.own"
            o_pre.extend(_derive(whole_o, own, by_group, parts_t, device, devices))
            o_pre.append(Op("stablehlo.reshape", (own,), (v,), (part.local_type(gt),)))
        else:
            o_pre.extend(_derive(total, v, s, gt, device, devices))


def _module(base: Module, args: list[str], arg_types: list[TensorType], ops: list[Op], returns: list[str],
            types: dict[str, TensorType], per_device: bool, arg_shardings: tuple, result_shardings: tuple) -> Module:
    main = base.main
    arg_set = dict(zip(args, arg_types))
    result_types = tuple(arg_set[r] if r in arg_set else types[r] for r in returns)
    body = Block(tuple(args), tuple(arg_types), list(ops), tuple(returns))
    names = tuple(a.lstrip("%").replace(".", "_") for a in args)
    func = Func(main.name, body, result_types, True, arg_names=names, loc=main.loc)
    m = replace(base, funcs={**base.funcs, main.name: func}, entry=main.name, text=b"", per_device=per_device,
                arg_shardings=arg_shardings if per_device else (),
                result_shardings=result_shardings if per_device else ())
    # Only the functions the stage's entry reaches: the program's other functions (a scan's
    # helpers over its [126, ...] stacks, left after inlining) are dead here, but the
    # whole proof's size check counts every function's tensors, and a loop body's stage
    # with 7 ops was refused as 8 M elements.
    keep = {main.name, *_callees(m)}
    return replace(m, funcs={k: f for k, f in m.funcs.items() if k in keep})
