"""Rule (b), assumed ranges as positions (docs/shrinking.md, rule b "assumed ranges"): a
program input assumed in [lo, |C|) (`--assume ids=0:vocab`) takes the values of C's
positions, and the assumption moves with C when it shrinks (`assume.resolve`). So a
literal compared with the ids (`ids < 128000`, `minimum(ids, 99999)`, through index
arithmetic, calls and moves, as rule b follows an iota) names a position of C, as it would
name one of an iota along C, and bounds C from below.

The bound for a named position u < |C|: the ids' *types* are the outcomes of the program's
compares on an id, and of which shard's block holds it: with C split into blocks of size
B (each class of C's scale component that divides |C|), an id of block b below u, or at or
above it. A verdict at the shrunk sizes carries over when every type present at the
original sizes is present at the shrunk ones (a superset only adds cases the proof also
covers), each with two values (two ids of one type can be equal or not, as rule "indexed
by data" keeps two per shard). u's block q = u // B keeps its two kinds when q B' < u
(true for B' <= B) and (q + 1) B' >= u + 2, so C' >= (|C| / B) ceil((u + 2) / (q + 1)) for
every block size B (B = |C| itself: C' >= u + 2); and at least 2u + 2, rule b's bound for
an iota's position, which also gives the values at or above u as many as below it. A
named position at or past |C| splits no values at any size and bounds nothing. A lower
end lo > 0 that is no class's size is such a literal too (the range must keep values at
the shrunk sizes)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts
from tv_mlir.shrink.id_splits import Walk, id_splits
from tv_mlir.shrink.positions import named_positions

# Off: an assumed range is no position (special_ids' mask `ids < 128000` bounded nothing).
RANGED = True
# Off: a named id position bounds its class by 2u + 2 only, not by the blocks its shards
# split it into (a mask skipped on the device whose block holds u hid at 2u + 2).
BLOCKS = True


@dataclass(frozen=True)
class RangedPosition:
    """A constant (or an assumed lower end) that names id position `position` of class
    `cls`, and the lower bound that keeps its types."""

    program: str
    constant: str
    position: int
    cls: int
    bound: int
    # The constants that moved the ids before the compare with `constant` (id_splits.py):
    # the split is where it is only while all of them keep their values, or all move with
    # C; the plan keeps C whole when only some are rewritten with a size.
    others: tuple[str, ...] = ()


def range_seeds(fa: ProgramFacts, a: DimAnalysis,
                ranges: Sequence[tuple[int, int] | None] | None) -> dict[str, frozenset[int]]:
    """The entry's inputs whose assumed closed range [lo, hi] ends at a class's last
    position (hi + 1 = |C|: the bound `assume.resolve` moves with C), with those classes
    (every class of that size: the bound follows each, `assume.shrunk_sizes`)."""
    main = fa.module.funcs.get(fa.module.entry)
    if main is None or not ranges:
        return {}
    out: dict[str, frozenset[int]] = {}
    for arg, b in zip(main.body.args, ranges):
        if b is None or not all(isinstance(x, int) for x in b):
            continue
        classes = frozenset(c for c, cls in enumerate(a.classes) if cls.size > 1 and cls.size == b[1] + 1)
        if classes:
            out[arg] = classes
    return out


def block_bound(a: DimAnalysis, c: int, u: int) -> int:
    """The smallest size of class `c` at which position u (< |C|) stays in the block it is in
    at the original sizes, with two positions from u to the block's end, for every block
    size B of C's scale component (classes dividing |C|, shrunk by one divisor with C)."""
    size = a.classes[c].size
    linked = {c}
    grew = True
    while grew:
        grew = False
        for g, loc, _ in a.scales:
            if (g in linked) != (loc in linked):
                linked |= {g, loc}
                grew = True
    need = u + 2
    if BLOCKS:
        for m in linked:
            b = a.classes[m].size
            if 0 < b < size and size % b == 0:
                need = max(need, size // b * math.ceil((u + 2) / (u // b + 1)))
    return need


def ranged_positions(fa: ProgramFacts, a: DimAnalysis,
                     ranges: Sequence[tuple[int, int] | None] | None) -> list[RangedPosition]:
    """Every constant that rule b's walk (positions.named_positions) finds combined with an
    input whose assumed range ends at a class's size, read as a position of that class, and
    every such range's lower end above 0 that is no class's size."""
    if not RANGED:
        return []
    seeds = range_seeds(fa, a, ranges)
    if not seeds:
        return []
    found = [(p.constant, p.position, p.classes) for p in named_positions(fa, a, seeds=seeds)]
    main = fa.module.funcs[fa.module.entry]
    sizes = {cls.size for cls in a.classes}
    for k, (arg, b) in enumerate(zip(main.body.args, ranges or [])):
        if arg in seeds and b is not None and b[0] > 0 and b[0] not in sizes:
            found.append((f"~assumed lower end of input {k}", b[0], seeds[arg]))
    out = []
    for constant, u, classes in found:
        for c in sorted(classes):
            if 0 < u < a.classes[c].size:
                out.append(RangedPosition(fa.program, constant, u, c, max(2 * u + 2, block_bound(a, c, u))))
    walk = id_splits(fa, seeds)
    tables = _moving_tables(fa, a) if walk.splits else frozenset()
    for s in walk.splits:
        # Splits after offsets (`ids + 1000 < 1100` splits at 100, where named_positions
        # sees 1000 and 1100 only); a split the walk lost keeps the class whole.
        for c in sorted(s.classes):
            size = a.classes[c].size
            p = math.ceil(s.position - 1e-9)
            if s.lost:
                # An offset table the plan rewrites with its block's size moves with a size,
                # as a tied constant does: `ids - table[d] < [V - 1]` is skipped as `ids -
                # d * vl < vl` is (every constant moves), `ids - table[d] + 1000 < 1100` kept.
                others = tuple(n for n in s.others if n not in tables)
                if s.others and not others and not s.constant:
                    # Named by moving tables alone (`ids >= table[tp]`, a shard's own block
                    # start: the split moves with the block, as `local >= 0` does).
                    continue
                out.append(RangedPosition(fa.program, s.constant, 0, c, size, others))
            elif 0 < p < size:
                out.append(RangedPosition(fa.program, s.constant, p, c, max(2 * p + 2, block_bound(a, c, p)),
                                          s.others))
            elif s.others:
                # No split among the ids at the original sizes, and none at any size while
                # its constants keep their values (bound 0); one moving with C may bring it in.
                out.append(RangedPosition(fa.program, s.constant, p, c, 0, s.others))
    out.extend(_clamped(fa, a, walk))
    return list(dict.fromkeys(out))


def _moving_tables(fa: ProgramFacts, a: DimAnalysis) -> frozenset[str]:
    """The offset tables of vocabulary-parallel lookups that the plan rewrites with their
    block's class (constants.LOOKUP_TABLES: every entry q * B, the table read one entry at a
    time; `Sites.table_values`), but for tables two lookups read with different blocks
    (`clashing_tables`, kept as they are)."""
    from tv_mlir.shrink import constants  # constants reads this module's positions
    if not (constants.OFFSET_TABLES and constants.LOOKUP_TABLES):
        return frozenset()
    found: dict[str, tuple[tuple[int, ...], int]] = {}
    clashing: set[str] = set()
    for op in fa.ops():
        if op.name == "stablehlo.gather":
            for (_, name), table in constants._lookup_tables(fa, a, op):
                if found.setdefault(name, table) != table:
                    clashing.add(name)
    return frozenset(found) - clashing


def _clamped(fa: ProgramFacts, a: DimAnalysis, walk: Walk) -> list[RangedPosition]:
    """Rule (a)'s implicit clamp in the ids' units: a gather at index s * id + b (s > 0)
    reads its last row for the ids from m = (|K| - 1 - b) / s on. A literal split u < m of
    the same ids keeps its two kinds of ids below the clamp (two ids from u up to m'): K' >=
    s (u + 2) + b + 1. Rule (a) orders the clamp |K| - 1 with the literal u itself, which
    is the same only at s = 1, b = 0 (`take(emb, 4 * minimum(ids, 40))`, clamp_scaled)."""
    out = []
    for clamp in walk.clamps:
        f = clamp.form
        key = (fa.program, clamp.operand, clamp.dim)
        if f.scale <= 0 or key not in a.class_of:
            continue
        k = a.class_of[key]
        m = (a.classes[k].size - 1 - f.offset) / f.scale
        for s in walk.splits:
            if s.lost or not s.constant or not s.classes & clamp.classes or not 0 < s.position < m:
                continue
            need = math.ceil(f.scale * (s.position + 2) + f.offset + 1 - 1e-9)
            out.append(RangedPosition(fa.program, s.constant, math.ceil(s.position - 1e-9), k,
                                      min(need, a.classes[k].size), s.others + f.constants))
    return out


__all__ = ["BLOCKS", "RANGED", "RangedPosition", "block_bound", "range_seeds", "ranged_positions"]
