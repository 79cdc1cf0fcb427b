"""Shape-valued constants: which constants name a size of a shrunk class and are rewritten
with it, which cannot be told apart and pin classes, which bound position classes from
below, and which literals a shrunk size must not coincide with."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from tv_mlir.semantics.ops import DYNAMIC_SLICES
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import (
    Constant,
    ProgramFacts,
    index_sources,
    int_cone_constants,
    only_device,
    position_constants,
    splat,
)

_TIE_MIN = 8  # constants below this are too common to be read as sizes


@dataclass
class Sites:
    """Where sizes meet constants and indices, found once per program pair (they do not
    depend on the sizes being tried)."""

    counts: list[tuple[int, ...]] = field(default_factory=list)  # classes of multi-dim reduces
    positions: list[tuple[str, str, int]] = field(default_factory=list)  # (program, constant, |value|)
    # A shrunk class read at offsets: (class, where, what the offsets are computed from
    # that is not allowed, the offsets' constants as (program, name, value, mesh step)).
    offsets: list[tuple[int, str, set[str], list[tuple[str, str, float | int | None, bool]]]] = \
        field(default_factory=list)
    # Every splat literal that could stand for a count: (program, name, |value|). Steps
    # through mesh coordinates (pid / 1 % 4) never meet data and are left out.
    literals: list[tuple[str, str, float]] = field(default_factory=list)


def sites(a: DimAnalysis, facts: list[ProgramFacts]) -> Sites:
    out = Sites()
    for fa in facts:
        out.positions.extend((fa.program, name, v) for name, v in position_constants(fa))
        for op in fa.ops():
            if op.name == "stablehlo.constant":
                v = splat(op)
                if v is not None and math.isfinite(v) and v != 0 and not only_device(fa, op.results[0]):
                    out.literals.append((fa.program, op.results[0], float(abs(v))))
            elif op.name == "stablehlo.reduce" and len(op.attrs.get("dimensions", ())) > 1:
                out.counts.append(tuple(a.class_of[(fa.program, op.operands[0], d)] for d in op.attrs["dimensions"]))
            elif op.name in DYNAMIC_SLICES:
                # Block-aligned slices: offsets from device ids and tied constants only.
                starts = op.operands[1:] if op.name == "stablehlo.dynamic_slice" else op.operands[2:]
                for d, start in enumerate(starts):
                    consts = [(fa.program, name, splat(fa.defs[name][0]), only_device(fa, name))
                              for name in int_cone_constants(fa, start)]
                    out.offsets.append((a.class_of[(fa.program, op.operands[0], d)], f"{op.name} at {op.loc}",
                                        index_sources(fa, start) & {"iota", "float", "input"}, consts))
            elif op.name == "stablehlo.gather":
                # Data-indexed lookups: indices from program inputs, not positions or floats.
                g = op.attrs.get("dimension_numbers")
                bad = index_sources(fa, op.operands[1]) & {"iota", "float"}
                for d in (g.start_index_map if g is not None and bad else ()):
                    out.offsets.append((a.class_of[(fa.program, op.operands[0], d)], f"gather at {op.loc}", bad, []))
    return out


def tie_constants(a: DimAnalysis, where: Sites, constants: list[Constant], sizes: list[int]) \
        -> tuple[dict[tuple[str, str], float | int], dict[int, str], dict[int, int],
                 dict[tuple[str, str], tuple[int, ...]]]:
    """-> (constant rewrites, classes to pin with the reason, iota lower bounds, the
    classes each rewritten constant names)."""
    n = len(a.classes)
    exprs: list[tuple[float, float, tuple[int, ...], str]] = []  # (original, new, classes, kind)
    for c in range(n):
        size, small = a.classes[c].size, sizes[c]
        if size <= 1:
            continue
        exprs.append((size, small, (c,), "size"))
        exprs.append((size - 1, small - 1, (c,), "size - 1"))
    for cs in where.counts:
        exprs.append((math.prod(a.classes[c].size for c in cs), math.prod(sizes[c] for c in cs), cs, "element count"))
    tied: dict[tuple[str, str], float | int] = {}
    tied_classes: dict[tuple[str, str], tuple[int, ...]] = {}
    pins: dict[int, str] = {}
    untied_index: dict[str, int] = {}
    for k in constants:
        hits: list[tuple[float | None, float, tuple[int, ...]]] = []  # (new, original, classes)
        for o, s, cs, kind in exprs:
            if k.role == "reciprocal":
                if o > 1 and abs(k.value - 1.0 / o) <= 1e-6 * abs(k.value):
                    hits.append((1.0 / s if s else None, 1.0 / o, cs))
            elif k.value == o and (k.is_int or kind != "size - 1" or k.role == "divisor"):
                hits.append((s, o, cs))
        shrunk = [h for h in hits if h[0] != h[1]]
        new_values = {h[0] for h in hits}
        if not shrunk:
            if k.is_int and k.role == "index":
                untied_index[k.program] = max(untied_index.get(k.program, 0), abs(int(k.value)))
            continue
        magnitude = abs(1.0 / k.value) if k.role == "reciprocal" else abs(k.value)
        if len(new_values) > 1 or magnitude < _TIE_MIN or None in new_values:
            why = (f"constant {_fmt(k.value)} at {k.loc} could be the size of more than one dimension"
                   if len(new_values) > 1
                   else f"constant {_fmt(k.value)} at {k.loc} may be its size (too small to tell)")
            for _, _, cs in shrunk:
                for c in cs:
                    pins.setdefault(c, why)
            continue
        v = new_values.pop()
        assert v is not None  # a None new value was pinned just above
        tied[(k.program, k.value_name)] = int(v) if k.is_int else float(v)
        tied_classes[(k.program, k.value_name)] = tuple(c for _, _, cs in shrunk for c in cs)
    for program, name, value in where.positions:
        if (program, name) not in tied:
            untied_index[program] = max(untied_index.get(program, 0), value)
    bounds: dict[int, int] = {}
    for c, cls in enumerate(a.classes):
        if cls.iota:
            programs = {p for p, _, _ in cls.members}
            worst = max((untied_index.get(p, 0) for p in programs), default=0)
            bounds[c] = max(3, 2 * worst + 2)
    for c, site, bad, consts in where.offsets:
        if sizes[c] == a.classes[c].size:
            continue
        if bad:
            pins.setdefault(c, f"{site}: offsets computed from {' and '.join(sorted(bad))} values")
        for program, name, offset, mesh_step in consts:
            if (program, name) not in tied and offset not in (0, 1) and not mesh_step:
                pins.setdefault(c, f"{site}: start offset uses constant {offset}")
    return tied, pins, bounds, tied_classes


def collisions(a: DimAnalysis, where: Sites, sizes: list[int], tied: dict[tuple[str, str], float | int],
               tied_classes: dict[tuple[str, str], tuple[int, ...]], counted: set[int]) -> set[int]:
    """Classes whose shrunk size would coincide with a literal of either program: a count
    one program sums implicitly (a sum of the same value at every position, n * c) or a
    rewritten size constant must not become a number the other program writes down (a
    bug dividing by 8 devices where the reference divides by 4096 tokens would be hidden
    at 8). Those classes must grow."""
    literals = {v for program, name, v in where.literals if (program, name) not in tied}

    def collides(v: float) -> bool:
        v = abs(float(v))
        return any(abs(v - u) <= 1e-9 * u or (v and abs(1.0 / v - u) <= 1e-9 * u) for u in literals)

    out: set[int] = set()
    for c in counted:
        if sizes[c] != a.classes[c].size and collides(sizes[c]):
            out.add(c)
    for key, v in tied.items():
        shrunk = [c for c in tied_classes.get(key, ()) if sizes[c] < a.classes[c].size]
        if collides(v) and shrunk:
            out.add(min(shrunk, key=lambda c: sizes[c]))  # one class at a time, the cheapest
    return out


def _fmt(v: float | int) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


__all__ = ['Sites', 'collisions', 'sites', 'tie_constants']
