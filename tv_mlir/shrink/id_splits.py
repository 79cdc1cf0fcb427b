"""Rule (b), assumed ranges through offsets (docs/shrinking.md, "Red-team batch 5"): where
a compare splits ids assumed in [0, |C|) once the program has moved them by constants.

`positions.named_positions` names every constant combined with a position at the
position's scale, one constant at a time. That is where a compare splits the ids only when
nothing was added to them first: `ids + 1000 < 1100` names 1000 and 1100 (both past a
256-word vocabulary, so they "bound nothing") and splits the ids at 100; `1000 - ids > 900`
the same; `ids - 100 - 100 - 100 < 100` names 100 (202 words) and splits at 400. This walk
keeps each value's *affine forms* in the id, value = s * id + b (a set: a select or a
min/max has one per piece), through adds, subtracts, negations, multiplies and divides by
constants, shifts, and the moves, calls and loops rule b follows, and at a compare, min,
max or clamp of a form with a constant c names the id (c - b) / s where the pieces split,
with every constant the form was made of. A form that meets any other op after an offset
(a remainder, an abs, a product with data) is *lost*: its next compare with a constant
splits the ids at a place this walk does not compute, so the class is kept whole; so is a
compare with one number no input decides that is no constant (`ids < max(iota(T)) + 1`:
T, another class's size, or a literal the program computes).
Constants of value 0 are no offsets (0 is 0 at every size).

Ids moved by a device's offset (`local = ids - axis_index * vl`, an add or subtract of a
number made of device ids and constants: the vocabulary-parallel lookup) are lost too, with
the offset's constants among the split's: a compare of `local` with c splits every shard's
block at its own place, so the class stays whole unless every constant moves with a size
(`0 <= local < vl`, the shards' own mask, as before; ranged.py reads a lookup's offset table
that the plan rewrites with its block as such a constant). `local + 1000 < 1100` kept nothing
before (range_device: 512 words shrank to 8, where local < 100 always)."""
from __future__ import annotations

from dataclasses import dataclass

from tv_mlir.ir import Op
from tv_mlir.semantics.ops import DEVICE_IDS, POSITION_FLOW, SPLAT_PRESERVING
from tv_mlir.shrink.facts import (
    ProgramFacts,
    arg_sources,
    index_sources,
    moved_operands,
    only_device,
    passed_whole,
    region_flow,
    splat,
)

# Off: only positions.named_positions names ids (the range_offset hole).
OFFSETS = True
# Off: ids moved by a device's offset (`ids - tp * vl`, the vocabulary-parallel lookup) are
# followed no further (the range_device hole: `local + 1000 < 1100` split each shard's
# block at 100 where no rule saw it).
DEVICE_OFFSETS = True
# Off: a compare of ids with a number computed from device ids and constants (`local + 1000
# < 1100 + tp * 0`) records no split (red-team batch 7, range_device_scalar: 512 words
# shrank to 8, where local < 100 always).
DEVICE_NUMBERS = True

_SPLITTING = frozenset({"stablehlo.compare", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp"})
_SHIFTS = {"stablehlo.shift_left": 1, "stablehlo.shift_right_logical": -1, "stablehlo.shift_right_arithmetic": -1}


@dataclass(frozen=True)
class Form:
    """value = scale * id + offset; `constants`: the constants that made it."""

    scale: float
    offset: float
    constants: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    """The ids split at `position` by a compare with `constant`, which the constants
    `others` moved first; `lost`: at a place the walk does not compute (keep the class)."""

    constant: str
    others: tuple[str, ...]
    position: float
    classes: frozenset[int]
    lost: bool = False


def _constant(fa: ProgramFacts, v: str, depth: int = 0) -> tuple[float, tuple[str, ...]] | None:
    """A splat constant through broadcasts, converts and reshapes, or a callee argument every
    call site passes the same constant as: (value, its constants' names)."""
    if depth > 8:
        return None
    d = fa.defs.get(v)
    if d is None:
        callers = fa.callers.get(v)
        if not callers:
            return None
        found = [_constant(fa, call.operands[k], depth + 1) for call, k in callers]
        values = {f[0] for f in found if f is not None}
        if any(f is None for f in found) or len(values) != 1:
            return None
        return values.pop(), tuple(n for f in found if f is not None for n in f[1])
    op = d[0]
    if op.name == "stablehlo.constant":
        c = splat(op)
        return None if c is None else (float(c), (v,) if c else ())
    if op.name in SPLAT_PRESERVING and op.operands:
        return _constant(fa, op.operands[0], depth + 1)
    return None


@dataclass(frozen=True)
class IndexClamp:
    """A gather's own clamp of a one-element index into dim `dim` of `operand` at |K| - 1,
    the index being `form` of the ids: the ids from (|K| - 1 - offset) / scale on read the
    last row, a split that moves with K (rule a's implicit clamp, in the ids' units)."""

    form: Form
    operand: str
    dim: int
    classes: frozenset[int]


@dataclass
class Walk:
    splits: list[Split]
    clamps: list[IndexClamp]


def id_splits(fa: ProgramFacts, seeds: dict[str, frozenset[int]]) -> Walk:
    """Every split of the seeded ids (inputs assumed in [0, |C|), ranged.py) by a compare,
    min, max or clamp with a constant, after the affine maps that moved them, and the
    gathers whose index is such a map of them."""
    if not OFFSETS or not seeds:
        return Walk([], [])
    forms: dict[str, frozenset[Form]] = {v: frozenset({Form(1.0, 0.0, ())}) for v in seeds}
    classes: dict[str, frozenset[int]] = dict(seeds)
    lost: dict[str, tuple[str, ...]] = {}
    out: list[Split] = []
    clamps: list[IndexClamp] = []
    ops = fa.ops()
    for _ in range(3):  # into functions and loops, and back out
        for op in ops:
            _step(fa, op, forms, classes, lost, out)
            if op.name == "stablehlo.gather" and len(op.operands) == 2:
                _gather(op, forms, lost, classes, out, clamps)
    return Walk(list(dict.fromkeys(out)), list(dict.fromkeys(clamps)))


def _gather(op: Op, forms: dict[str, frozenset[Form]], lost: dict[str, tuple[str, ...]],
            classes: dict[str, frozenset[int]], out: list[Split], clamps: list[IndexClamp]) -> None:
    """A gather of one element along one indexed dim at a form of the ids: its clamp at 0
    splits the ids where the form reaches 0 (a place no size moves), its clamp at |K| - 1
    is an IndexClamp; a lost form's clamps split at a place the walk does not compute."""
    index = op.operands[1]
    g = op.attrs.get("dimension_numbers")
    sizes = tuple(op.attrs.get("slice_sizes") or ())
    if index not in classes or g is None or len(g.start_index_map) != 1:
        return
    d = g.start_index_map[0]
    if d >= len(sizes) or sizes[d] != 1:
        return
    cs = classes[index]
    if index in lost:
        out.append(Split("", lost[index], 0.0, cs, lost=True))
    for f in forms.get(index, ()):
        if f.scale:
            out.append(Split("", f.constants, -f.offset / f.scale, cs))
            clamps.append(IndexClamp(f, op.operands[0], d, cs))


def _flows(fa: ProgramFacts, op: Op) -> list[tuple[str, tuple[str, ...]]]:
    """(target, sources): a call's arguments and results, a loop's or branch's values, a
    manual computation's body arguments and results."""
    out = list(region_flow(op))
    if op.name == "func.call" and op.attrs.get("callee", "") in fa.module.funcs:
        body = fa.module.funcs[op.attrs["callee"]].body
        out += [(a, (o,)) for a, o in zip(body.args, op.operands)] + \
            [(r, (ret,)) for r, ret in zip(op.results, body.returns)]
    if op.name == "sdy.manual_computation" and op.regions:
        body = op.regions[0]
        out += [(a, (o,)) for a, o in zip(body.args, op.operands)] + \
            [(r, (ret,)) for r, ret in zip(op.results, body.returns)]
    return out


def _step(fa: ProgramFacts, op: Op, forms: dict[str, frozenset[Form]], classes: dict[str, frozenset[int]],
          lost: dict[str, tuple[str, ...]], out: list[Split]) -> None:
    def carry(target: str, fs: frozenset[Form], cs: frozenset[int], gone: tuple[str, ...] | None) -> None:
        if fs:
            forms[target] = forms.get(target, frozenset()) | fs
        if gone is not None:
            lost[target] = tuple(dict.fromkeys(lost.get(target, ()) + gone))
        if fs or gone is not None:
            classes[target] = classes.get(target, frozenset()) | cs

    for target, sources in _flows(fa, op):
        for s in sources:
            if s in classes:
                carry(target, forms.get(s, frozenset()), classes[s], lost.get(s))
    ins = [o in classes for o in op.operands]
    if not any(ins):
        return
    cs = frozenset().union(*(classes[o] for o in op.operands if o in classes))
    gone = tuple(n for o in op.operands if o in lost for n in lost[o]) if any(o in lost for o in op.operands) \
        else None
    moved = [op.operands[k] for k in moved_operands(op) if op.operands[k] in classes]
    if moved:
        for r in op.results:
            carry(r, frozenset().union(*(forms.get(m, frozenset()) for m in moved)), cs,
                  tuple(n for m in moved for n in lost.get(m, ())) if any(m in lost for m in moved) else None)
        return
    if op.name not in POSITION_FLOW:
        return
    consts = [_constant(fa, o) if not ins[k] else None for k, o in enumerate(op.operands)]
    if op.name in _SPLITTING:
        _splits(op, forms, lost, consts, cs, out)
        if any(not ins[k] and consts[k] is None and _fixed(fa, o) for k, o in enumerate(op.operands)):
            # Compared with a value no input decides (max(iota(T)) + 1, a device's offset):
            # a split at a place that is no literal and may be another class's size.
            out.append(Split("", (), 0.0, cs, lost=True))
        if DEVICE_NUMBERS:
            for k, o in enumerate(op.operands):
                number = _number_constants(fa, o) if not ins[k] and consts[k] is None else None
                if number is not None:
                    # Compared with a number made of device ids and constants (`1100 + tp *
                    # 0`, a shard's own bound `tp * 0 + vl`): a split at a place the walk
                    # does not compute, where the ids' forms and that number's constants
                    # put it. Lost (the class kept whole) unless every one of those
                    # constants moves with a size, as a device's offset's do.
                    moved_by = tuple(n for j, x in enumerate(op.operands) if ins[j]
                                     for n in lost.get(x, ()) + tuple(c for f in forms.get(x, ()) for c in f.constants))
                    out.append(Split("", tuple(dict.fromkeys(moved_by + number)), 0.0, cs, lost=True))
    made = _map(op, [forms.get(o, frozenset()) if ins[k] else None for k, o in enumerate(op.operands)], consts)
    shift = _device_shift(fa, op, ins) if made is None else None
    if shift is not None:
        # ids - offset_d: on device d the ids moved by a number of the device (a shard's
        # block start d * vl). A compare of it with c splits every block at its own place,
        # d * vl + (c - b) / s: not one position of C, so its splits are lost ones (the
        # class kept whole) unless every constant, the offset's among them, is rewritten
        # with a size (`local < vl`: the blocks' own ends, the shards' rule).
        made_lost = tuple(n for o in op.operands if o in classes for f in forms.get(o, ()) for n in f.constants)
        for r in op.results:
            carry(r, frozenset(), cs, made_lost + shift + (gone or ()))
        return
    for r in op.results:
        if made is None:
            # Not affine in the id: a form with an offset is lost from here on.
            offsets = tuple(n for o in op.operands for f in forms.get(o, ()) if f.offset for n in f.constants)
            if offsets or gone is not None:
                carry(r, frozenset(), cs, offsets + (gone or ()))
        else:
            carry(r, made, cs, gone)


def _device_shift(fa: ProgramFacts, op: Op, ins: list[bool]) -> tuple[str, ...] | None:
    """For an add or subtract of the ids (in `ins`) and a number made of device ids and
    constants only (a partition offset, through calls and loop arguments): the offset's
    constants (of value other than 0, and not only mesh steps such as `pid / 1 % 4`);
    None for any other op."""
    if not DEVICE_OFFSETS or op.name not in ("stablehlo.add", "stablehlo.subtract") or len(op.operands) != 2 \
            or ins[0] == ins[1]:
        return None
    walk = _number_walk(fa, op.operands[1 if ins[0] else 0])
    return walk[0] if walk is not None and walk[1] else None


def _number_constants(fa: ProgramFacts, value: str) -> tuple[str, ...] | None:
    """For a number a compare splits ids at that is computed from constants and device ids
    only (`1100 + tp * 0`, `barrier(1100)`, a table's entry `[100, 101, 102, 103][tp]`): the
    constants it is made of; None for a plain constant (`_constant` reads it) or anything
    else."""
    if _constant(fa, value) is not None:
        return None
    walk = _number_walk(fa, value)
    return None if walk is None else walk[0]


def _number_walk(fa: ProgramFacts, value: str) -> tuple[tuple[str, ...], bool] | None:
    """The constants a number made of constants and device ids only is computed from (through
    calls, loop arguments that are not carried, and tables passed whole into manual
    computations), and whether a device id is among its sources; None when anything else
    (an input, a carried value, a loop counter, an iota) is."""
    found: list[str] = []
    device = False
    # (value, role): "number" (its constants but mesh steps are the number's), "entries" (a
    # table looked up: every entry may be the number), "pick" (an index into a table: it
    # only chooses an entry, a device's coordinate the same at every size; no constants).
    todo: list[tuple[str, str]] = [(value, "number")]
    seen: set[tuple[str, str]] = set()
    while todo:
        v, role = todo.pop()
        if (v, role) in seen:
            continue
        seen.add((v, role))
        outer = passed_whole(fa, v)
        if outer != v:
            todo.append((outer, role))  # a table passed whole into a manual computation
            continue
        if v in fa.func_of_arg or v in fa.region_arg:
            came = arg_sources(fa, v)
            if not isinstance(came, list):
                return None  # an input, a carried value or a loop counter: no number of constants
            todo.extend((c, role) for c in came)
            continue
        d = fa.defs.get(v)
        if d is None:
            return None
        op = d[0]
        callee = fa.module.funcs.get(op.attrs.get("callee", "")) if op.name == "func.call" else None
        if callee is not None:
            todo.append((callee.body.returns[d[1]], role))
        elif op.name == "stablehlo.constant":
            # A table's entries are the number (`[100, 101, 102, 103][tp]`), whatever reads
            # them; a scalar only combined with device ids is a mesh step (`pid / 1 % 4`).
            if splat(op) != 0 and (role == "entries" or role == "number" and not only_device(fa, v)):
                found.append(v)
        elif op.name in ("stablehlo.dynamic_slice", "stablehlo.gather"):
            todo.append((op.operands[0], "entries" if role != "pick" else "pick"))
            todo.extend((o, "pick") for o in op.operands[1:])
        elif op.name in DEVICE_IDS:
            device = True
        elif op.name == "stablehlo.iota" or op.name in ("stablehlo.rng", "stablehlo.rng_bit_generator"):
            return None
        else:
            todo.extend((o, role) for o in op.operands)
    return tuple(dict.fromkeys(found)), device


def _fixed(fa: ProgramFacts, value: str) -> bool:
    """Whether `value` is one scalar (broadcast) made of constants, iotas and loop counters
    only, with an iota or a counter among them (`max(iota(T)) + 1`): a number the program
    computes. An iota along the compared dims (a one-hot's `ids == iota(V)`) is positions,
    rule b's; a device's offset (`ids < tp * 64`) is named by positions.named_positions."""
    v = value
    while v in fa.defs and fa.defs[v][0].name in SPLAT_PRESERVING and fa.defs[v][0].operands:
        v = fa.defs[v][0].operands[0]
    d = fa.defs.get(v)
    if d is None or d[0].result_types[d[1]].shape != ():
        return False
    sources = index_sources(fa, v, through_calls=True)
    return bool(sources & {"iota", "counter"}) and sources <= {"constant", "counter", "iota"}


def _splits(op: Op, forms: dict[str, frozenset[Form]], lost: dict[str, tuple[str, ...]],
            consts: list[tuple[float, tuple[str, ...]] | None], cs: frozenset[int], out: list[Split]) -> None:
    """A compare, min, max or clamp of a form with a constant: where the id crosses it."""
    for k, o in enumerate(op.operands):
        for j, c in enumerate(consts):
            if c is None or j == k:
                continue
            name = c[1][0] if c[1] else ""
            if o in lost:
                out.append(Split(name, lost[o], 0.0, cs, lost=True))
            for f in forms.get(o, ()):
                if f.scale:
                    out.append(Split(name, f.constants + c[1][1:], (c[0] - f.offset) / f.scale, cs))


def _map(op: Op, fs: list[frozenset[Form] | None], consts: list[tuple[float, tuple[str, ...]] | None]
         ) -> frozenset[Form] | None:
    """The forms of op's result from its operands' (None: not affine in the id)."""
    name = op.name
    if name in SPLAT_PRESERVING or name in ("stablehlo.transpose", "stablehlo.floor", "stablehlo.ceil",
                                            "stablehlo.round_nearest_even"):
        return fs[0] if fs[0] is not None else None
    if name == "stablehlo.negate" and fs[0] is not None:
        return frozenset(Form(-f.scale, -f.offset, f.constants) for f in fs[0])
    if name in ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp", "stablehlo.select"):
        # One of the pieces: the forms, and the constants a piece may be.
        first = 1 if name == "stablehlo.select" else 0
        pieces: set[Form] = set()
        for f, c in zip(fs[first:], consts[first:]):
            if f is not None:
                pieces |= f
            elif c is not None:
                pieces.add(Form(0.0, c[0], c[1]))
        return frozenset(pieces)
    if len(fs) != 2 or (fs[0] is None) == (fs[1] is None) or name == "stablehlo.compare":
        return None
    k = 0 if fs[0] is not None else 1
    f0, c = fs[k], consts[1 - k]
    if f0 is None or c is None:
        return None
    value, names = c
    if name == "stablehlo.add":
        return frozenset(Form(f.scale, f.offset + value, f.constants + names) for f in f0)
    if name == "stablehlo.subtract" and k == 0:
        return frozenset(Form(f.scale, f.offset - value, f.constants + names) for f in f0)
    if name == "stablehlo.subtract":
        return frozenset(Form(-f.scale, value - f.offset, f.constants + names) for f in f0)
    if name == "stablehlo.multiply" and value:
        return frozenset(Form(f.scale * value, f.offset * value, f.constants + names) for f in f0)
    if name == "stablehlo.divide" and k == 0 and value:
        # floor((s id + b) / k) < c exactly where s id + b < c k: the same split.
        return frozenset(Form(f.scale / value, f.offset / value, f.constants + names) for f in f0)
    if name in _SHIFTS and k == 0 and float(value).is_integer() and 0 <= value < 31:
        factor = float(2 ** int(value)) ** _SHIFTS[name]
        return frozenset(Form(f.scale * factor, f.offset * factor, f.constants + names) for f in f0)
    return None


__all__ = ["DEVICE_NUMBERS", "DEVICE_OFFSETS", "OFFSETS", "Form", "IndexClamp", "Split", "Walk", "id_splits"]
