"""Shape-valued constants: which constants name a size of a shrunk class and are rewritten
with it, which cannot be told apart and pin classes, which bound position classes from
below, and which literals a shrunk size must not coincide with."""
from __future__ import annotations

import math

from .dims import DimAnalysis
from .shrink_facts import (Constant, ProgramFacts, index_sources, int_cone_constants, only_device,
                           position_constants, splat)


_TIE_MIN = 8  # constants below this are too common to be read as sizes


def tie_constants(a: DimAnalysis, facts: list[ProgramFacts], constants: list[Constant], sizes: list[int]) \
        -> tuple[dict[tuple[str, str], float | int], dict[int, str], dict[int, int], dict[tuple[str, str], tuple[int, ...]]]:
    """-> (constant rewrites, classes to pin with the reason, iota lower bounds)."""
    n = len(a.classes)
    exprs: list[tuple[float, float, tuple[int, ...], str]] = []  # (original, new, classes, kind)
    for c in range(n):
        o, s = a.classes[c].size, sizes[c]
        if o <= 1:
            continue
        exprs.append((o, s, (c,), "size"))
        exprs.append((o - 1, s - 1, (c,), "size - 1"))
    for fa in facts:
        for op in fa.ops():
            if op.name == "stablehlo.reduce" and len(op.attrs.get("dimensions", ())) > 1:
                cs = tuple(a.class_of[(fa.program, op.operands[0], d)] for d in op.attrs["dimensions"])
                exprs.append((math.prod(a.classes[c].size for c in cs), math.prod(sizes[c] for c in cs), cs,
                              "element count"))
    tied: dict[tuple[str, str], float | int] = {}
    tied_classes: dict[tuple[str, str], tuple[int, ...]] = {}
    pins: dict[int, str] = {}
    untied_index: dict[str, int] = {}
    for k in constants:
        hits = []
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
                   if len(new_values) > 1 else f"constant {_fmt(k.value)} at {k.loc} may be its size (too small to tell)")
            for _, _, cs in shrunk:
                for c in cs:
                    pins.setdefault(c, why)
            continue
        v = new_values.pop()
        tied[(k.program, k.value_name)] = int(v) if k.is_int else float(v)
        tied_classes[(k.program, k.value_name)] = tuple(c for _, _, cs in shrunk for c in cs)
    for fa in facts:
        for v in position_constants(fa):
            if (fa.program, v[0]) not in tied:
                untied_index[fa.program] = max(untied_index.get(fa.program, 0), v[1])
    bounds: dict[int, int] = {}
    for c, cls in enumerate(a.classes):
        if cls.iota:
            programs = {p for p, _, _ in cls.members}
            worst = max((untied_index.get(p, 0) for p in programs), default=0)
            bounds[c] = max(3, 2 * worst + 2)
    # Block-aligned dynamic slices: their start offsets must be made of tied constants.
    for fa in facts:
        for op in fa.ops():
            if op.name not in ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"):
                continue
            starts = op.operands[1:] if op.name == "stablehlo.dynamic_slice" else op.operands[2:]
            big = op.operands[0]
            for d, s in enumerate(starts):
                c = a.class_of[(fa.program, big, d)]
                if sizes[c] == a.classes[c].size:
                    continue
                sources = index_sources(fa, s)
                if sources & {"iota", "float", "input"}:
                    pins.setdefault(c, f"{op.name} at {op.loc}: start offset computed from "
                                       f"{' and '.join(sorted(sources & {'iota', 'float', 'input'}))} values")
                for name in int_cone_constants(fa, s):
                    op_c, _ = fa.defs[name]
                    v = splat(op_c)
                    if (fa.program, name) not in tied and v not in (0, 1) and not only_device(fa, name):
                        pins.setdefault(c, f"{op.name} at {op.loc}: start offset uses constant {v}")
        for op in fa.ops():
            if op.name != "stablehlo.gather":
                continue
            g = op.attrs.get("dimension_numbers")
            sources = index_sources(fa, op.operands[1])
            bad = sources & {"iota", "float"}
            for d in (g.start_index_map if g is not None else ()):
                c = a.class_of[(fa.program, op.operands[0], d)]
                if bad and sizes[c] != a.classes[c].size:
                    pins.setdefault(c, f"gather at {op.loc}: indices computed from "
                                       f"{' and '.join(sorted(bad))} values, not program inputs")
    return tied, pins, bounds, tied_classes


def collisions(a: DimAnalysis, facts: list[ProgramFacts], sizes: list[int], tied: dict[tuple[str, str], float | int],
                tied_classes: dict[tuple[str, str], tuple[int, ...]], counted: set[int]) -> set[int]:
    """Classes whose shrunk size would coincide with a literal of either program: a count
    one program sums implicitly (a sum of the same value at every position, n * c) or a
    rewritten size constant must not become a number the other program writes down (a
    bug dividing by 8 devices where the reference divides by 4096 tokens would be hidden
    at 8). Those classes must grow."""
    literals: set[float] = set()
    for fa in facts:
        for op in fa.ops():
            if op.name == "stablehlo.constant" and (fa.program, op.results[0]) not in tied:
                v = splat(op)
                # Steps through mesh coordinates (pid / 1 % 4) never meet data.
                if v is not None and math.isfinite(v) and v != 0 and not only_device(fa, op.results[0]):
                    literals.add(float(abs(v)))

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


__all__ = ['collisions', 'tie_constants']
