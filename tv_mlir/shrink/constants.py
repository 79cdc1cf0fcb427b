"""Shape-valued constants: which constants name a size of a shrunk class and are rewritten
with it, which cannot be told apart and pin classes, which bound position classes from
below, and which literals a shrunk size must not coincide with."""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tv_mlir.ir import Op
from tv_mlir.semantics.ops import DOTS, DYNAMIC_SLICES
from tv_mlir.shrink.clamps import Clamp, implicit_clamps
from tv_mlir.shrink.constant_terms import Scale, Scales
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import (
    SPREAD,
    Constant,
    ProgramFacts,
    block_offset_constants,
    device_count,
    index_sources,
    only_device,
    passed_whole,
    position_constants,
    position_reach,
    splat,
    through_broadcasts,
)
from tv_mlir.shrink.linear import MAX_FACTORS, Multiplier, multipliers
from tv_mlir.shrink.linear import value as multiplier_value
from tv_mlir.shrink.meets import Meets, Reach, apart
from tv_mlir.shrink.overflow import FoldSite, OverflowSite, fold_sites, overflow_sites, preimages
from tv_mlir.shrink.positions import NamedPosition, named_positions
from tv_mlir.shrink.ranged import RangedPosition, ranged_positions
from tv_mlir.shrink.scatters import data_scatter
from tv_mlir.shrink.trips import trips_apart
from tv_mlir.shrink.unionfind import UnionFind

_TIE_MIN = 8  # constants below this are too common to be read as sizes
# Rule (a): a literal within this many of a size value is a "size - k" (tied, or the class
# pinned): the difference must survive the rewrite, not only the order.
NEAR = 4
# Literals the order rule compares size values with: integers (or reciprocals of
# integers) from 2 up to this; larger ones are fills and scales (-1e9, 3.4e38).
_ORDER_MAX = 1 << 16
# Rule (a), wide literals: integer literals up to `facts.position_reach` of the programs'
# largest dim (4x it, and at least 2^16) are ordered too, so a Llama-3 vocabulary of 128256
# stays above its special tokens' 128000 and a clamp at 99999. Past that no size value can
# reach them. Off: literals up to 2^16 only.
WIDE_LITERALS = True
# Rule (i): a float constant whose every use is the mean of a sum reduction over classes S
# (sum / c, or sum * c as a reciprocal), with c = |S| (1 / |S|), names S's element count
# and nothing else. The switch is for the tests that show what the rule does.
MEAN_DIVISORS = True
# Rule (i), transposed means across devices (`_spread_classes`): the count a partitioned
# mean's backward divides its local cotangent by is the global class's. Off: only the
# local classes' count is read.
SPREAD_GLOBALS = True
# Rule (h), offset tables read at blocks of several classes (`Sites.clashes`): one rewrite
# where every reading gives the same table at the planned sizes. Off: any second reading
# pins the classes the table offsets, as before.
CLASHES_BY_SIZE = True
# Rule (h), clamped offset tables (`_blocks_of`): entries past the last block, which a
# dynamic_slice clamps to it, are block counts like the others when the dim is a fixed
# number of blocks. Off: such a table pins the class it offsets, as before.
CLAMPED_TABLES = True
# Rule (a), integer division: an integer divide or remainder by a rewritten size keeps
# the rewritten divisor at this many or more. At 1 the quotient is the dividend and the
# remainder 0 (ids % local and ids - ids // local are both 0); at b the remainder takes b
# values, and a polynomial of degree d in it that vanishes on 0..b-1 vanishes everywhere
# only when b > d: 4 covers degree 3 (what rule k's count pairs go to).
INT_DIVISOR = 4
# Rule (a), ratios (`ratios`): scaled size values map injectively too. The switch is for
# the tests that show what the rule does.
RATIOS = True
# Rule (h), offset tables: XLA's partitioned modules start a shard's block at
# table[coordinate[pid]], a constant table of every shard's start q * B (B the block's
# size); such a table is rewritten with q * B' like the scalar `shard * rows` offsets, and
# a table that only selects an entry of another table (the coordinate table) holds block
# counts, which shrinking keeps. Off: a table pins the class it offsets, as before.
OFFSET_TABLES = True
# Rule (h), offset tables of lookups: XLA's vocabulary-parallel lookup gathers its rows at
# `t - table[pid]`, the table every device's block start q * B (B the gathered block); it
# is rewritten with q * B' like the dynamic-slice offset tables (rule k's partitioned
# lookups then partition the range at the shrunk sizes too). On by default since the staged
# proof takes the 8B partitioned forward it lets shrink (`equivalent`, ~50 s CPU, ~0.97 GB
# peak: docs/shrinking.md, "lookup offset tables"). Off: the table is kept, and its lookup,
# not partitioning at the shrunk sizes, stays counted.
LOOKUP_TABLES = True
# Rule (h), constant indices: a gather whose indices are computed without program data
# (constants, device ids, loop counters: `x[:, jnp.array([0, 5, 17])]`) reads fixed
# positions; an untied constant among them pins the class, as a dynamic_slice's literal
# start does. Off: such a class shrinks like a data-indexed one and the positions are
# clamped into it (17 and 16 both read the last element at 2).
CONSTANT_INDICES = True
# Rule (a), sizes met by positions (`_met_positions`): a rewritten constant combined with
# the positions of another class keeps its order with that class's size. Off: only with
# other rewritten constants and counts, and a one-hot's offset `tp * hidden` met the local
# vocabulary's size when both shrank to 4.
POSITION_SIZES = True
# ... and with its last positions |P| - 1 .. |P| - NEAR (red-team batch 9, meet_last): a
# constant V - 1 = 11 compared with the positions of a 16-long class selects a position with
# positions past it; ordered with |P| = 16 only, V' - 1 = 3 < T' = 4 kept that order while 3
# became the last position, and the bug's `iota == V - 1` picked what the reference's
# `x[T - 1]` picks. Off: the size alone.
LAST_POSITIONS = True
# Rule (a), classes of one size, for a float divisor of positions only (RoPE's frequencies
# `arange(0, d, 2) / d`, where q/k's and v/o's head_dim are two classes of size d): the
# classes keep one size and the constant is tied to it, as an integer clamp of two
# vocabularies is (docs/shrinking.md, "Halves"). Off: such a float pins every class it names.
POSITION_FLOATS = True
# Rule (a), literals that meet: a literal below a size value bounds the class only when the
# two can meet (meets.py): one carries into what the other carries, or both are combined
# with data of a common source (an input, an iota's class, device ids), or either reach is
# unknown. RoPE's base 10000 (combined with head_dim positions only) no longer keeps the
# vocabulary (combined with the token ids and the embedding) above it. Off: every literal
# below bounds every size value (docs/shrinking.md, rule a "literals that meet").
MEETING = True
# Rule (a), size values that meet: two size values of different classes keep their order
# only when they can meet (meets.py, with `Meets.data_only`: what only picks program data,
# a lookup's ids, is not data its result is combined with). The token count 8192 of the
# loss's mean and the vocabulary's clamps no longer keep the vocabulary above the tokens.
# Off: every size value keeps its order with every other (docs/shrinking.md, rule a
# "size values that meet").
PAIR_MEETING = True
# Rule (a), bit operations: an integer shifted by a constant amount k is divided or
# multiplied by 2^k (`pos >> 3` is `pos // 8`, as XLA writes a division by a power of two),
# and one masked with 2^k - 1 is taken modulo 2^k (`label & 7` is `label % 8`), so 2^k is
# a literal the size values keep their order with: a local vocabulary of 16 rewritten to 8
# would meet the bug's `>> 3` or `& 7`. Off: only k or 2^k - 1 itself is a literal.
BIT_OPS = True
# Rule (a), scaled counts (docs/shrinking.md, "Red-team batch 8"): a counted class's number
# is c x n for its sums' constant terms c, so n is ordered with every literal divided by
# each c (`CountScales`); a c not known as a number pins the class. Off: n is ordered with
# the integer literals only, and `sum(0.75 + x * 0)` at 2 tokens met the bug's 1.5
# (red-team batch 7, count_scaled).
SCALED_COUNTS = True
_SHIFTS = frozenset({"stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic", "stablehlo.shift_left"})


def _bit_power(v: float | int, uses: list[tuple[Op, int]]) -> int | None:
    """The power of two an integer constant stands for in a shift (as its amount) or an
    `and` (as a mask 2^k - 1), or None."""
    if not float(v).is_integer() or v <= 0:
        return None
    k = int(v)
    if k < 31 and any(u.name in _SHIFTS and i == 1 for u, i in uses):
        return 1 << k
    if k & (k + 1) == 0 and k < (1 << 30) and any(u.name == "stablehlo.and" for u, _ in uses):
        return k + 1
    return None


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
    # Rule (a), literals that meet (MEETING): per program, the reach of its constants.
    meets: dict[str, Meets] = field(default_factory=dict)
    # Rule (a), size values that meet (PAIR_MEETING): the reach with data sources only.
    data_meets: dict[str, Meets] = field(default_factory=dict)
    # Rule (b): constants combined with positions, per iota class.
    named: list[NamedPosition] = field(default_factory=list)
    # Rule (a), ratios: the multipliers of the programs' values (`linear.multipliers`):
    # what an atom is multiplied by along multiplies and divides by constant expressions
    # and sums (`sum / 4096 * 2.0`, `s / 4096 + s / 4096`, `divide(s, 8.0)` in a called
    # function), as (program, ((sign, ((constant, value, +1 | -1), ...)), ...), where).
    chains: list[Multiplier] = field(default_factory=list)
    # Rule (a), integer overflow: arithmetic that leaves its type at the original sizes.
    overflows: list[OverflowSite] = field(default_factory=list)
    # Rule (a), functions of sizes the verifier folds (overflow.FOLDS).
    folds: list[FoldSite] = field(default_factory=list)
    # Offset tables (OFFSET_TABLES): (program, constant) -> (block counts q, block class),
    # the table holding q * B for the class's size B; and tables read at blocks of two
    # different classes or sizes (not rewritten: the sites that read them pin).
    tables: dict[tuple[str, str], tuple[tuple[int, ...], int]] = field(default_factory=dict)
    clashing_tables: set[tuple[str, str]] = field(default_factory=set)
    # Every (q, block class) reading of a table read at blocks of more than one class (a
    # norm weight's and a projection's 2048-column shards, one XLA table [0, 2048]): one
    # rewrite serves them all at a planned size where they all give one table (`clashes`).
    readings: dict[tuple[str, str], set[tuple[tuple[int, ...], int]]] = field(default_factory=dict)
    # Rule (a), implicit clamps (clamps.py): data-indexed gathers' and dynamic slices' own
    # clamps at |C| - 1, size values of their class.
    clamps: list[Clamp] = field(default_factory=list)
    # Rule (b), assumed ranges (ranged.py): constants that name a position of a class whose
    # size an input's assumed range ends at, with the bound each asks.
    ranged: list[RangedPosition] = field(default_factory=list)
    # Rule (a), scaled counts: the constant terms of every sum over a class (lazily).
    scales: CountScales | None = None

    def table_values(self, sizes: list[int], original: list[int]) -> dict[tuple[str, str], tuple[int, ...]]:
        """The rewritten offset tables of the classes that shrink."""
        return {k: tuple(x * sizes[c] for x in q) for k, (q, c) in self.tables.items()
                if not self.clashes(k, sizes) and sizes[c] != original[c]}

    def add_table(self, key: tuple[str, str], table: tuple[tuple[int, ...], int]) -> None:
        if self.tables.setdefault(key, table) != table:
            self.readings.setdefault(key, {self.tables[key]}).add(table)

    def clashes(self, key: tuple[str, str], sizes: list[int]) -> bool:
        """The table cannot be rewritten at `sizes`: its readings (block counts q at blocks
        of class c) give different tables there (or rule h's CLASHES is off and it has more
        than one reading), or it was read with tables of another length."""
        if key in self.clashing_tables:
            return True
        readings = self.readings.get(key)
        if not readings:
            return False
        if not CLASHES_BY_SIZE:
            return True
        return len({tuple(x * sizes[c] for x in q) for q, c in readings}) > 1


def sites(a: DimAnalysis, facts: list[ProgramFacts],
          ranges: Sequence[tuple[int, int] | None] | None = None) -> Sites:
    out = Sites(scales=CountScales(a, facts))
    for fa in facts:
        out.meets[fa.program] = Meets(fa, a)
        out.data_meets[fa.program] = Meets(fa, a, data_only=True)
        out.positions.extend((fa.program, name, v) for name, v in position_constants(fa))
        out.named.extend(named_positions(fa, a))
        out.chains.extend(multipliers(fa))
        out.overflows.extend(overflow_sites(fa, a, ranges))
        out.folds.extend(fold_sites(fa, a, ranges))
        out.clamps.extend(implicit_clamps(fa, a))
        out.ranged.extend(ranged_positions(fa, a, ranges))
        for op in fa.ops():
            if op.name == "stablehlo.constant":
                v = splat(op)
                uses = through_broadcasts(fa, op.results[0])
                # A device count (rule f) is no size, so no size can be mistaken for it.
                devices = bool(uses) and v is not None and all(device_count(fa, u, k, v) for u, k in uses)
                if v is not None and math.isfinite(v) and v != 0 and not only_device(fa, op.results[0]) \
                        and not devices:
                    out.literals.append((fa.program, op.results[0], float(abs(v))))
                    power = _bit_power(v, uses) if BIT_OPS else None
                    if power is not None:
                        out.literals.append((fa.program, op.results[0], float(power)))
            elif op.name == "stablehlo.reduce" and len(op.attrs.get("dimensions", ())) > 1:
                out.counts.append(tuple(a.class_of[(fa.program, op.operands[0], d)] for d in op.attrs["dimensions"]))
            elif op.name in DYNAMIC_SLICES:
                # Block-aligned slices: offsets from device ids and tied constants only.
                starts = op.operands[1:] if op.name == "stablehlo.dynamic_slice" else op.operands[2:]
                small = op.results[0] if op.name == "stablehlo.dynamic_slice" else op.operands[1]
                for d, start in enumerate(starts):
                    consts = []
                    for name in block_offset_constants(fa, start):
                        v = splat(fa.defs[name][0])
                        table = _table(fa, a, name, op.operands[0], small, d) if v is None and OFFSET_TABLES else None
                        if isinstance(table, tuple):
                            out.add_table((fa.program, name), table)
                        consts.append((fa.program, name, v, table is not None or only_device(fa, name)))
                    out.offsets.append((a.class_of[(fa.program, op.operands[0], d)], f"{op.name} at {op.loc}",
                                        index_sources(fa, start) & {"iota", "float", "input"}, consts))
            elif op.name == "stablehlo.gather":
                if OFFSET_TABLES and LOOKUP_TABLES:
                    for key, table in _lookup_tables(fa, a, op):
                        out.add_table(key, table)
                # Data-indexed lookups: indices from program inputs, not positions or floats.
                g = op.attrs.get("dimension_numbers")
                sources = index_sources(fa, op.operands[1])
                bad = sources & {"iota", "float"}
                for d in (g.start_index_map if g is not None and bad else ()):
                    out.offsets.append((a.class_of[(fa.program, op.operands[0], d)], f"gather at {op.loc}", bad, []))
                if CONSTANT_INDICES and g is not None and "constant" in sources and \
                        sources <= {"constant", "device", "counter"}:
                    # No data picks these positions: the solver cannot move them, so an
                    # untied constant (tie_constants: not 0 or 1, not a mesh step) pins.
                    consts = [(fa.program, name, splat(fa.defs[name][0]), only_device(fa, name))
                              for name in block_offset_constants(fa, op.operands[1])]
                    for d in g.start_index_map:
                        out.offsets.append((a.class_of[(fa.program, op.operands[0], d)],
                                            f"gather at {op.loc} (constant indices)", set(), consts))
            elif op.name == "stablehlo.scatter" and all((fa.program, v) in a.types for v in op.operands):
                reading = data_scatter(op, functools.partial(_shape, a, fa.program))
                if reading is not None:
                    # The lookup's transpose: pinned where a gather at those indices would be.
                    sources = index_sources(fa, op.operands[1], through_calls=True)
                    c = a.class_of[(fa.program, op.operands[0], reading.addressed)]
                    bad = sources & {"iota", "float"}
                    if bad:
                        # Rows picked by positions: which tokens meet in a row depends on the
                        # sizes (t // 2), so the tokens stay whole with the rows.
                        tokens = [a.class_of[(fa.program, op.operands[2], du)] for _, du in reading.summed]
                        for k in [c, *tokens]:
                            out.offsets.append((k, f"scatter at {op.loc}", bad, []))
                    if CONSTANT_INDICES and "constant" in sources and sources <= {"constant", "device", "counter"}:
                        consts = [(fa.program, name, splat(fa.defs[name][0]), only_device(fa, name))
                                  for name in block_offset_constants(fa, op.operands[1])]
                        out.offsets.append((c, f"scatter at {op.loc} (constant indices)", set(), consts))
    return out


@dataclass
class CountScales:
    """Rule (a), scaled counts: per class, the numbers its count is a multiple of in either
    program (`constant_terms.Scales` of every summand of a sum over it, a dot's as the
    product of its two sides'), or None when one is not known as a number. Read lazily:
    only counted classes that shrink are asked, each once."""

    a: DimAnalysis
    facts: list[ProgramFacts]
    memo: dict[int, Scale] = field(default_factory=dict)
    _readers: dict[tuple[str, frozenset[int], bool], Scales] = field(default_factory=dict)
    _family: dict[int, frozenset[int]] = field(default_factory=dict)

    def of(self, c: int) -> Scale:
        if c not in self.memo:
            self.memo[c] = self._compute(c)
        return self.memo[c]

    def _compute(self, c: int) -> Scale:
        out: set[float] = set()
        typed: set[float] = set()
        for fa in self.facts:
            for op in fa.ops():
                for summands in self._summands(fa, op, c):
                    for wanted, into in ((False, out), (True, typed)):
                        s = self._product([self._reader(fa, c, wanted).of(v) for v in summands])
                        if s is None:
                            return None
                        into |= s
        # Rule k's counts at a type where no summand of Newton's reading had one.
        return frozenset(out | typed)

    def _summands(self, fa: ProgramFacts, op: Op, c: int) -> list[list[str]]:
        key = (fa.program, op.operands[0]) if op.operands else None
        if key is None or key not in self.a.types:
            return []
        if op.name == "stablehlo.reduce" and op.regions and len(op.regions[0].ops) == 1 \
                and op.regions[0].ops[0].name == "stablehlo.add":
            half = len(op.operands) // 2
            return [[v] for v in op.operands[:half]
                    if any(self.a.class_of[(fa.program, v, d)] == c for d in op.attrs.get("dimensions", ()))]
        if op.name in DOTS and len(op.operands) == 2:
            dn = op.attrs.get("dot_dimension_numbers")
            lt = self.a.types[key]
            dims = list(dn.lhs_contracting) if dn else [len(lt.shape) - 1]
            if any(self.a.class_of[(fa.program, op.operands[0], d)] == c for d in dims):
                return [list(op.operands)]
        return []

    @staticmethod
    def _product(scales: list[Scale]) -> Scale:
        out: frozenset[float] | None = frozenset({1.0})
        for s in scales:
            out = Scales._pairs(out, s, lambda x, y: x * y)
        return out

    def _reader(self, fa: ProgramFacts, c: int, typed: bool) -> Scales:
        from tv_mlir.shrink.degree import Degrees, _Terms, _warm_order  # degree reads constant_terms
        if not self._family:
            self._family = self._families()
        family = self._family[c]
        key = (fa.program, family, typed)
        if key not in self._readers:
            d = Degrees(fa, self.a, set(family))
            order = _warm_order(fa.module.main.body)
            values = {v for k in family for p, v, _ in self.a.classes[k].members if p == fa.program and v in order}
            for v in sorted(values, key=order.__getitem__):
                d.of(v)  # in program order: no deep recursion (degree.summand_degrees' root)
            self._readers[key] = Scales(_Terms(d), typed=typed)
        return self._readers[key]

    def _families(self) -> dict[int, frozenset[int]]:
        """Classes tied by scale, product and offset relations (plan.py's families: what a
        degree reaches)."""
        n = len(self.a.classes)
        uf = UnionFind.of(range(n), [(y, x) for x, y in [(g, loc) for g, loc, _ in self.a.scales]
                                     + [(p, q) for p, fs in self.a.products for q in fs]
                                     + [(b, d) for d, b, _ in self.a.offsets]])
        sets: dict[int, set[int]] = {}
        for k in range(n):
            sets.setdefault(uf.find(k), set()).add(k)
        return {k: frozenset(sets[uf.find(k)]) for k in range(n)}


def _shape(a: DimAnalysis, program: str, value: str) -> tuple[int, ...]:
    return a.types[(program, value)].shape


_INDEX_MOVES = frozenset({"stablehlo.reshape", "stablehlo.broadcast_in_dim", "stablehlo.convert",
                          "stablehlo.all_gather"})


def _lookup_tables(fa: ProgramFacts, a: DimAnalysis,
                   gather: Op) -> list[tuple[tuple[str, str], tuple[tuple[int, ...], int]]]:
    """Offset tables of a vocabulary-parallel lookup (LOOKUP_TABLES): the gather's index is
    `t - table[device]` (through layout ops and all_gathers), the table a 1-d integer
    constant only looked up (a dynamic_slice of one entry), every entry q * B with B the
    gathered dim's size and 0 <= q B: (table, (q, the gathered dim's class))."""
    g = gather.attrs.get("dimension_numbers")
    if g is None or len(g.start_index_map) != 1:
        return []
    d = g.start_index_map[0]
    size = a.types[(fa.program, gather.operands[0])].shape[d]
    v = gather.operands[1]
    while v in fa.defs and fa.defs[v][0].name in _INDEX_MOVES:
        v = fa.defs[v][0].operands[0]
    if v not in fa.defs or fa.defs[v][0].name != "stablehlo.subtract":
        return []
    off = fa.defs[v][0].operands[1]
    while off in fa.defs and fa.defs[off][0].name in _INDEX_MOVES:
        off = fa.defs[off][0].operands[0]
    if off not in fa.defs or fa.defs[off][0].name != "stablehlo.dynamic_slice":
        return []
    name = passed_whole(fa, fa.defs[off][0].operands[0])
    op = fa.defs.get(name, (None, 0))[0]
    value = op.attrs.get("value") if op is not None and op.name == "stablehlo.constant" else None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu" or value.ndim != 1 or size <= 0 \
            or not _only_looked_up(fa, name):
        return []
    entries = [int(x) for x in value.tolist()]
    if any(x % size or x < 0 for x in entries):
        return []
    return [((fa.program, name), (tuple(x // size for x in entries), a.class_of[(fa.program, gather.operands[0], d)]))]


def _only_looked_up(fa: ProgramFacts, name: str) -> bool:
    """Every use reads one entry (a dynamic_slice of size 1), directly or inside a manual
    computation it is passed into whole."""
    uses = fa.uses.get(name, [])
    for u in uses:
        if u.name == "sdy.manual_computation":
            inner = [u.regions[0].args[k] for k, o in enumerate(u.operands) if o == name]
            if not all(passed_whole(fa, x) == name and _only_looked_up(fa, x) for x in inner):
                return False
        elif u.name != "stablehlo.dynamic_slice" or u.operands[0] != name or name in u.operands[1:] \
                or tuple(u.attrs.get("slice_sizes") or ()) != (1,):
            return False
    return bool(uses)


def _table(fa: ProgramFacts, a: DimAnalysis, name: str, big: str, small: str,
           d: int) -> tuple[tuple[int, ...], int] | str | None:
    """What a non-splat integer constant behind a block offset is: "selector" when it is
    only looked up (as a dynamic_slice's operand) to index another constant table (XLA's
    device -> shard coordinate table: its entries count blocks); (q, block class) when it
    is only looked up and every entry is q * B, B the block's size along `d` and the block
    inside the dim (an offset table); None otherwise."""
    op = fa.defs[name][0]
    value = op.attrs.get("value")
    uses = fa.uses.get(name, [])
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu" or value.ndim != 1 or not uses or \
            any(u.name != "stablehlo.dynamic_slice" or u.operands[0] != name or name in u.operands[1:] for u in uses):
        return None
    looked = [w for u in uses for w in through_broadcasts(fa, u.results[0])]
    if looked and all(w.name == "stablehlo.dynamic_slice" and k >= 1 and w.operands[0] in fa.defs
                      and fa.defs[w.operands[0]][0].name == "stablehlo.constant" for w, k in looked):
        return "selector"
    n = a.types[(fa.program, big)].shape[d]
    m = a.types[(fa.program, small)].shape[d]
    entries = [int(x) for x in value.tolist()]
    if m <= 0 or m == n or any(x % m or x < 0 for x in entries):
        return None
    if any(x > n - m for x in entries) and not (CLAMPED_TABLES and _blocks_of(a, fa.program, big, small, d)):
        return None
    return tuple(x // m for x in entries), a.class_of[(fa.program, small, d)]


def _blocks_of(a: DimAnalysis, program: str, big: str, small: str, d: int) -> bool:
    """Rule (h), clamped offsets: dim d of `big` is r blocks of `small`'s dim d at every
    planned size (a scale relation between their classes, r fixed). A dynamic_slice clamps
    its start to [0, n - m], so an entry q m past the last block reads block min(q, r - 1)
    at the original sizes and, rewritten as q m', at the planned ones too (n' = r m')."""
    g = a.class_of.get((program, big, d))
    loc = a.class_of.get((program, small, d))
    n, m = a.types[(program, big)].shape[d], a.types[(program, small)].shape[d]
    if g is None or loc is None or n % m:
        return False
    up: dict[int, list[tuple[int, int]]] = {}
    for gl, lo, k in a.scales:
        up.setdefault(lo, []).append((gl, k))
    todo, seen = [(loc, 1)], {loc}
    while todo:
        x, f = todo.pop()
        if x == g:
            return f == n // m
        for gl, k in up.get(x, ()):
            if gl not in seen:
                seen.add(gl)
                todo.append((gl, f * k))
    return False


def ratios(a: DimAnalysis, where: Sites, sizes: list[int], tied: dict[tuple[str, str], float | int],
           tied_classes: dict[tuple[str, str], tuple[int, ...]], out: Order) -> None:
    """Rule (a), ratios: the numbers data is multiplied by map injectively. A *multiplier*
    is the coefficient of an atom in a value's linear form (`linear.multipliers`: a product
    of constant factors, or a sum of such), at the original sizes and with the rewritten
    constants; it *shrinks* when one of its factors is rewritten with a shrunk class. For
    every shrinking multiplier x and every other y
    (either program, by magnitude):
      - x and y equal at the original sizes but not after the rewrite (`mean * 0.5`
        against `sum * (0.5 / 4096)`, a literal 1 / 8192 that is half a size's reciprocal
        the rewrite cannot see): ambiguous, both classes are pinned; except for two
        rewritten constants by themselves, which the tie rules have told apart (rule i);
      - x and y different at the original sizes but equal after it (`mean * 2.0` at
        hidden' = 16 against `sum / 8.0`): the smaller shrunk class grows.
    A single rewritten constant is a chain of one factor, so this is rule (a)'s
    injectivity for every scaled size value, not only for the constants themselves."""
    by_o: dict[float, list[int]] = {}
    by_n: dict[float, list[int]] = {}
    mults: list[tuple[float, float, tuple[int, ...], str]] = []
    lengths: list[int] = []
    # Each multiplier's keys, computed once: the pairwise comparisons below read them
    # per pair, and a float32 rounding through numpy was ~10 % of the 405B stack's planning.
    keys: list[tuple[float, float]] = []
    for program, coef, loc in where.chains:
        names = {name for _, factors in coef for name, _, _ in factors}
        new_values = {name: float(tied[(program, name)]) for name in names if (program, name) in tied}
        o, n = multiplier_value(coef), multiplier_value(coef, new_values)
        if o is None or n is None:
            continue
        shrunk = tuple(sorted({c for name in names for c in tied_classes.get((program, name), ())
                               if sizes[c] < a.classes[c].size}))
        if shrunk and len(coef) > 1 and (_key(o) == 0) != (_key(n) == 0):
            # A sum of multipliers that cancels at one of the sizes only (s / 4096 - s *
            # 2.44140625e-4 with the literal kept): no member of the family does that.
            for c in shrunk:
                out.pins.setdefault(c, f"the multiplier {_fmt(o)} ({loc}) is a sum that cancels at one size only")
            continue
        ko, kn = _key(o), _key(n)
        if not ko or not kn:
            continue  # a product with 0 multiplies nothing
        i = len(mults)
        mults.append((abs(o), abs(n), shrunk, loc))
        keys.append((ko, kn))
        # A single factor by itself counts 1 (rule i's told-apart mean divisors); a sum
        # of terms never does.
        lengths.append(len(coef[0][1]) if len(coef) == 1 else MAX_FACTORS + len(coef))
        by_o.setdefault(ko, []).append(i)
        by_n.setdefault(kn, []).append(i)
    for i, (o, _, classes, loc) in enumerate(mults):
        if not classes:
            continue
        ko, kn = keys[i]
        for j in by_o.get(ko, []):
            # Two rewritten constants (chains of one factor each) that were equal are two
            # sizes the tie rules told apart (rule i: each mean divisor names its sum).
            told_apart = bool(mults[j][2]) and lengths[i] == lengths[j] == 1
            if keys[j][1] != kn and not told_apart:
                why = f"the multiplier {_fmt(o)} ({loc}) is also {mults[j][3]}'s, which the rewrite changes " \
                      "differently (a ratio of a size that is not rewritten with it)"
                for c in classes + mults[j][2]:
                    out.pins.setdefault(c, why)
        for j in by_n.get(kn, []):
            if keys[j][0] != ko:
                # The one farther from 1 at the original sizes grows (as rule (a) grows
                # the larger of two size values), or this one when the other is a literal.
                other = mults[j]
                mine = not other[2] or max(o, 1 / o) >= max(other[0], 1 / other[0])
                out.grow.add(min(classes if mine else other[2], key=lambda c: sizes[c]))


def _key(v: float) -> float:
    """A multiplier's magnitude at float32 precision: program constants are float32, and
    a product of them folded by the tracer (`0.5 / 4096`) is the same float32."""
    return float(np.float32(abs(v)))


def mean_classes(a: DimAnalysis, k: Constant) -> list[tuple[tuple[int, ...], int]] | None:
    """Rule (i): the classes S of each sum the constant takes the mean of, with the devices
    g an all-reduce added the sums over (1 without one), when every use is such a mean
    (`facts.mean_uses`) and its value is g |S| (a divisor) or 1 / (g |S|) (a reciprocal)
    for every one of them; None otherwise (or with the rule switched off)."""
    if not MEAN_DIVISORS or k.means is None or k.is_int or k.role not in ("divisor", "reciprocal"):
        return None
    out = []
    for operand, dims, devices in k.means:
        cs = tuple(a.class_of[(k.program, operand, d)] for d in dims)
        if devices == SPREAD:
            # A transposed mean: the count of the classes it spreads over, or of the global
            # classes they are the shards of (a partitioned backward: below).
            target = k.value if k.role == "divisor" else round(1.0 / abs(k.value))
            spread = _spread_classes(a, cs, target) if float(target).is_integer() else None
            if spread is None:
                return None
            cs, devices = spread
        count = devices * math.prod(a.classes[c].size for c in cs)
        if count <= 1:
            return None
        if k.role == "reciprocal":
            if abs(abs(k.value) - 1.0 / count) > 1e-6 * abs(k.value):
                return None
        elif k.value != count:
            return None
        out.append((tuple(c for c in cs if a.classes[c].size > 1), devices))
    return out


def _spread_classes(a: DimAnalysis, cs: tuple[int, ...], count: float) -> tuple[tuple[int, ...], int] | None:
    """Rule (i), transposed means across devices: (cs, F) when `count` is F times the
    element count of `cs` (the dims a mean's cotangent is spread over), F = 1 or a product
    of the shard counts by which classes of `cs` are shards of global classes (the plan's
    scale relations, transitively: global' = k local' at every planned size, so the
    rewritten value F |cs'| is the global classes' count): XLA spreads a partitioned mean's
    cotangent over each device's columns and divides by the global count. None when no
    such F gives `count` (the constant then pins as before)."""
    local = math.prod(a.classes[c].size for c in cs)
    if local == count:
        return cs, 1
    if not SPREAD_GLOBALS or local <= 0 or count % local:
        return None
    up: dict[int, list[tuple[int, int]]] = {}
    for g, loc, k in a.scales:
        up.setdefault(loc, []).append((g, k))
    factors = {1}
    for c in cs:
        # the shard counts from c up to every global class it is a shard of
        mine, todo, seen = {1}, [(c, 1)], {c}
        while todo:
            x, f = todo.pop()
            for g, k in up.get(x, ()):
                mine.add(f * k)
                if g not in seen:
                    seen.add(g)
                    todo.append((g, f * k))
        factors = {f * m for f in factors for m in mine}
    need = int(count) // local
    return (cs, need) if need in factors else None


def tie_constants(a: DimAnalysis, where: Sites, constants: list[Constant], sizes: list[int],
                  notes: dict[int, str] | None = None, equalize: bool = True,
                  only: dict[tuple[str, str], frozenset[int]] | None = None) \
        -> tuple[dict[tuple[str, str], float | int], dict[int, str], dict[int, int],
                 dict[tuple[str, str], tuple[int, ...]]]:
    """-> (constant rewrites, classes to pin with the reason, iota lower bounds, the
    classes each rewritten constant names). `notes`, when given, receives per class the
    rule (i) argument of a mean divisor that rule (i) told apart from other sizes, and the
    rule (a) argument of classes of one size a constant names. `equalize`: such classes
    grow to one size (a lower bound for the next round), else they pin (the last round).
    `only`: constants that can name no class but these (rule l's trip counters, trips.py)."""
    n = len(a.classes)
    exprs: list[tuple[float, float, tuple[int, ...], str]] = []  # (original, new, classes, kind)
    for c in range(n):
        size, small = a.classes[c].size, sizes[c]
        if size <= 1:
            continue
        exprs.append((size, small, (c,), "size"))
        exprs.append((size - 1, small - 1, (c,), "size - 1"))
        for j in range(2, NEAR + 1):
            # Rule (a): a clamp at V - 2 is V' - 2 at the shrunk size (integers and float
            # divisors); the class keeps 2j + 2 so that V' - j is still inside, not 0.
            if size - j >= _TIE_MIN:
                exprs.append((size - j, small - j, (c,), f"size - {j}"))
    for cs in where.counts:
        exprs.append((math.prod(a.classes[c].size for c in cs), math.prod(sizes[c] for c in cs), cs, "element count"))
    tied: dict[tuple[str, str], float | int] = {}
    tied_classes: dict[tuple[str, str], tuple[int, ...]] = {}
    pins: dict[int, str] = {}
    untied_index: dict[str, int] = {}
    near_bounds: dict[int, int] = {}
    for k in constants:
        hits: list[tuple[float | None, float, tuple[int, ...]]] = []  # (new, original, classes)
        counted_only = only.get((k.program, k.value_name)) if only else None
        for o, s, cs, kind in exprs:
            if counted_only is not None and not counted_only.issuperset(cs):
                continue
            if k.role == "reciprocal":
                if o > 1 and abs(abs(k.value) - 1.0 / o) <= 1e-6 * abs(k.value):
                    hits.append((math.copysign(1.0 / s, k.value) if s else None, math.copysign(1.0 / o, k.value), cs))
            elif k.value == o and (k.is_int or kind in ("size", "element count")
                                        or (kind.startswith("size - ") and k.role == "divisor")):
                hits.append((s, o, cs))
                if kind.startswith("size - ") and kind != "size - 1":
                    near = int(kind.split(" - ")[1])
                    for c in cs:
                        near_bounds[c] = max(near_bounds.get(c, 0), 2 * near + 2)
        means = mean_classes(a, k) if len({h[0] for h in hits}) > 1 else None
        if means:
            # Rule (i): an ambiguous constant that is the mean of sums over S names |S| only.
            counts = {g * math.prod(sizes[c] for c in cs) for cs, g in means}
            if len(counts) == 1:
                s = counts.pop()
                o = means[0][1] * math.prod(a.classes[c].size for c in means[0][0])
                classes = tuple(dict.fromkeys(c for cs, _ in means for c in cs))
                # a reciprocal keeps its sign (XLA's folded seed -1/n, facts.SEEDS)
                hits = [(math.copysign(1.0 / s, k.value), math.copysign(1.0 / o, k.value), classes)
                        if k.role == "reciprocal" else (s, o, classes)]
                if notes is not None and s != o:
                    for c in classes:
                        notes.setdefault(c, f"rule i: the mean divisor {_fmt(k.value)} at {k.loc} names the sum "
                                            f"over it (its element count, {s} here)")
        shrunk = [h for h in hits if h[0] != h[1]]
        new_values = {h[0] for h in hits}
        if not shrunk:
            if k.is_int and k.role == "index":
                untied_index[k.program] = max(untied_index.get(k.program, 0), abs(int(k.value)))
            continue
        magnitude = abs(1.0 / k.value) if k.role == "reciprocal" else abs(k.value)
        alike = {c for _, _, cs in hits for c in cs}
        if equalize and (k.is_int or (POSITION_FLOATS and k.positional)) and len(new_values) > 1 \
                and None not in new_values and magnitude >= _TIE_MIN \
                and all(len(cs) == 1 for _, _, cs in hits) \
                and len({a.classes[c].size for c in alike}) == 1:
            # Rule (a), classes of one size: the integer constant is the size (or size - k)
            # of several classes of one original size (the embedding's and the LM head's
            # vocabulary). Any reading of it is the original program; at one shrunk size
            # for all of them every reading is the same program again, so they grow to
            # one size (the largest any needs) and the constant is tied there next round.
            # Float constants (a mean's divisor that is also a plain scale) stay with
            # rule (i): their uses are not all size arithmetic (docs/shrinking.md), except
            # a divisor of positions only (RoPE's `arange(0, d, 2) / d`: POSITION_FLOATS).
            top = max(sizes[c] for c in alike)
            for c in alike:
                if sizes[c] < top:
                    near_bounds[c] = max(near_bounds.get(c, 0), top)
                if notes is not None:
                    notes.setdefault(c, f"rule a: the constant {_fmt(k.value)} at {k.loc} names classes of one "
                                        f"size, which keep one size")
            # Meanwhile it is the size value of the largest (what the next round makes of
            # all of them), so that rule (a) does not read it as a literal.
            v = max(new_values, key=lambda x: x if x is not None else 0.0)
            assert v is not None
            tied[(k.program, k.value_name)] = int(v) if k.is_int else float(v)
            tied_classes[(k.program, k.value_name)] = tuple(c for _, _, cs in shrunk for c in cs)
            continue
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
        if k.truncates:
            # Rule (a), integer division: the rewritten divisor keeps INT_DIVISOR elements.
            for _, o, cs in shrunk:
                for c in cs:
                    need = INT_DIVISOR + (a.classes[c].size - int(o) if len(cs) == 1 else 0)
                    near_bounds[c] = max(near_bounds.get(c, 0), need)
        tied_classes[(k.program, k.value_name)] = tuple(c for _, _, cs in shrunk for c in cs)
    for overflow in where.overflows:
        # Rule (a), integer overflow: the site wraps at the original sizes only if they
        # stay (overflow.py); every shrunk class it was computed from keeps its size.
        wrapping = set(overflow.classes) | {c for name in overflow.constants
                                            for c in tied_classes.get((overflow.program, name), ())}
        for c in wrapping:
            if sizes[c] < a.classes[c].size:
                pins.setdefault(c, f"integer arithmetic that overflows at the original sizes ({overflow.where})")
    for program, name, value in where.positions:
        if (program, name) not in tied:
            untied_index[program] = max(untied_index.get(program, 0), value)
    bounds: dict[int, int] = dict(near_bounds)
    named: dict[int, int] = {}
    for pos in where.named:
        if (pos.program, pos.constant) not in tied:
            for c in pos.classes:
                named[c] = max(named.get(c, 0), pos.position)
    for c, cls in enumerate(a.classes):
        if cls.iota:
            programs = {p for p, _, _ in cls.members}
            worst = max([untied_index.get(p, 0) for p in programs] + [named.get(c, 0)])
            bounds[c] = max(bounds.get(c, 0), 3, 2 * worst + 2)
    for c, site, bad, consts in where.offsets:
        if sizes[c] == a.classes[c].size:
            continue
        if bad:
            pins.setdefault(c, f"{site}: offsets computed from {' and '.join(sorted(bad))} values")
        for program, name, offset, mesh_step in consts:
            if where.clashes((program, name), sizes) or \
                    ((program, name) not in tied and offset not in (0, 1) and not mesh_step):
                pins.setdefault(c, f"{site}: start offset uses constant "
                                     f"{'array ' + name if offset is None else offset}")
    return tied, pins, bounds, tied_classes


@dataclass
class Order:
    """What rule (a) asks of one size assignment: classes to grow by one admissible step,
    classes with a lower bound, classes to pin (with the reason)."""

    grow: set[int] = field(default_factory=set)
    bounds: dict[int, int] = field(default_factory=dict)
    pins: dict[int, str] = field(default_factory=dict)


def order(a: DimAnalysis, where: Sites, sizes: list[int], constants: list[Constant],
          tied: dict[tuple[str, str], float | int], tied_classes: dict[tuple[str, str], tuple[int, ...]],
          counted: set[int], trip_only: dict[tuple[str, str], frozenset[int]] | None = None) -> Order:
    """Rule (a): the rewrite maps the program's numbers injectively and in order. The
    *size values* are the rewritten constants (a mean's 4096, an offset's 512, a clamp's
    V - 1) and the counts a sum of a constant makes (n * c); the *literals* are every other
    splat constant of either program (integers from 2 to 2^16, or the reciprocals of such;
    device counts excluded, rule f). For every shrunk size value x (original o, new n):
      - no literal u equals o or lies within NEAR below it (u is that size, or size - k,
        in a role the rewrite does not see: ambiguous, so the classes are pinned);
      - every literal u < o stays below: n > u (a bound on the class);
      - every other size value keeps its order: o > o' implies n > n' (two constants 4096
        and 512 never both become 4; the larger grows).
    Two literals of different values never become equal this way, and the order and
    small differences between a literal and a size survive the rewrite. `trip_only`: the
    trip constants (trips.trip_constants) and the classes each can name; such a literal
    meets no size value of another class (trips.TRIP_ORDER)."""
    out = Order()
    by_key = {(k.program, k.value_name): k for k in constants}
    # (original, new, shrunk classes, how far below its class's size the value is)
    values: list[tuple[float, float, tuple[int, ...], int | None, str]] = []
    keys: list[_Key | None] = []  # the tied constant (or implicit clamp) behind each size value
    for key, new in tied.items():
        k = by_key.get(key)
        shrunk = tuple(c for c in tied_classes.get(key, ()) if sizes[c] < a.classes[c].size)
        if k is None or not shrunk:
            continue
        o, n = (1.0 / abs(k.value), 1.0 / abs(new)) if k.role == "reciprocal" else (abs(k.value), abs(new))
        # Classes of one size a constant names together as their size or size - k (rule a,
        # classes of one size) are bounded alike, as one class is; an element count of
        # several classes is not a size of each (it grows one class, as before).
        below: int | None = int(a.classes[shrunk[0]].size - round(o))
        if len(shrunk) > 1 and (len({a.classes[c].size for c in shrunk}) > 1 or not 0 <= (below or 0) <= NEAR):
            below = None
        values.append((o, n, shrunk, below, f"constant {_fmt(k.value)} at {k.loc}"))
        keys.append(key)
    for c in counted:
        if sizes[c] < a.classes[c].size:
            values.append((a.classes[c].size, sizes[c], (c,), 0, "a count (a sum of a constant over it)"))
            keys.append(None)
    for clamp in where.clamps:
        # Rule (a), implicit clamps: the gather's own clamp at |C| - 1 is a size value.
        c = clamp.cls
        if sizes[c] < a.classes[c].size:
            values.append((a.classes[c].size - 1, sizes[c] - 1, (c,), 1, f"the index clamp of {clamp.where}"))
            keys.append((clamp.program, clamp))
    limit = max(_ORDER_MAX, position_reach(max((c.size for c in a.classes), default=0))) if WIDE_LITERALS \
        else _ORDER_MAX
    literals: dict[float, str] = {}
    occurrences: dict[float, list[tuple[str, str]]] = {}
    for program, name, v in where.literals:
        if (program, name) in tied:
            continue
        u = v if float(v).is_integer() else (round(1.0 / v) if v < 1 and abs(1.0 / v - round(1.0 / v)) <= 1e-6 / v
                                               else None)
        if u is not None and 2 <= u <= limit:
            literals.setdefault(float(u), f"{program} {name}")
            occurrences.setdefault(float(u), []).append((program, name))
    for (o, n, classes, below, what), at in zip(values, keys):
        for u, where_u in literals.items():
            if trip_only is not None and trips_apart(occurrences[u], classes, trip_only):
                continue  # only trip counts and slice starts of other classes read it
            if u == o or 0 < o - u <= NEAR:
                why = f"literal {_fmt(u)} ({where_u}) is {what}'s value" + \
                    ("" if u == o else f" minus {_fmt(o - u)}") + " but is not rewritten with it"
                for c in classes:
                    out.pins.setdefault(c, why)
            elif u < o and n <= u and MEETING and at is not None and where.meets and \
                    all(apart(_reach(where, at), where.meets[p].reach(m), p == at[0])
                        for p, m in occurrences[u]):
                continue  # the literal never meets the size value: its order is not seen
            elif u < o and n <= u:
                if below is not None:
                    for c in classes:
                        out.bounds[c] = max(out.bounds.get(c, 0), int(u) + 1 + below)
                else:
                    out.grow.add(min(classes, key=lambda c: sizes[c]))
    _folded(a, where, sizes, tied_classes, out)
    if SCALED_COUNTS and where.scales is not None:
        _scaled_counts(a, where, sizes, counted, tied, out, trip_only)
    met = _met_positions(a, where, sizes, tied, tied_classes) if POSITION_SIZES else []
    # A class's size met by positions is compared where the constant that met them reaches.
    compared = list(zip(values, keys)) + [(m[:5], m[5]) for m in met]
    for (o, n, classes, _, _), at in compared:
        for (o2, n2, classes2, _, _), at2 in compared:
            if o > o2 and n <= n2 and not set(classes) & set(classes2) and \
                    not (PAIR_MEETING and at is not None and at2 is not None and where.data_meets and
                         apart(_reach(where, at, True), _reach(where, at2, True), at[0] == at2[0])):
                out.grow.add(min(classes, key=lambda c: sizes[c]))
    if RATIOS:
        ratios(a, where, sizes, tied, tied_classes, out)
    return out


_Key = tuple[str, str] | tuple[str, Clamp]


def _folded(a: DimAnalysis, where: Sites, sizes: list[int], tied_classes: dict[tuple[str, str], tuple[int, ...]],
            out: Order) -> None:
    """Rule (a) through a function the verifier folds (overflow.FOLDS): f(s) for a size
    value s meets a literal u where s meets f's preimage of u, so s keeps its order with
    every literal's preimages (a preimage below s bounds the class past it; one equal to s
    is ambiguous and pins). An operand that is not one shrunk class's size (2 * T, T - 1,
    a product of classes) has no new value this can order: its classes are pinned."""
    for f in where.folds:
        classes = set(f.classes) | {c for name in f.constants for c in tied_classes.get((f.program, name), ())}
        shrunk = sorted(c for c in classes if sizes[c] < a.classes[c].size)
        if not shrunk:
            continue
        o = f.operand
        if len(shrunk) != 1 or a.classes[shrunk[0]].size != o:
            for c in shrunk:
                out.pins.setdefault(c, f"a function the verifier folds of a value computed from sizes ({f.where})")
            continue
        c = shrunk[0]
        for program, name, v in where.literals:
            for p in preimages(f.fn, v):
                if abs(p - o) <= 1e-6 * o:
                    out.pins.setdefault(c, f"literal {_fmt(v)} ({program} {name}) is {f.where} of this size, "
                                           "not rewritten with it")
                elif p < o and sizes[c] <= p:
                    out.bounds[c] = max(out.bounds.get(c, 0), math.floor(p) + 1)


def _scaled_counts(a: DimAnalysis, where: Sites, sizes: list[int], counted: set[int],
                   tied: dict[tuple[str, str], float | int], out: Order,
                   trip_only: dict[tuple[str, str], frozenset[int]] | None) -> None:
    """Rule (a), scaled counts: a counted class's number is c x n for each constant term c
    of its sums (`CountScales`), so for every literal v (any finite one: c n meets 1.5 at
    n = 2 for c = 0.75, and n meets 15.5 between 15 and 16) n keeps its order with u = v / c:
    u equal to n or within NEAR below it pins, u below n bounds n' past u. With c = 1 and
    integer literals this is the order above; a c not known as a number pins. Constants
    rewritten with a size (`tied`) are size values, not literals."""
    assert where.scales is not None
    occurrences: dict[float, list[tuple[str, str]]] = {}
    for program, name, v in where.literals:
        if (program, name) not in tied:
            occurrences.setdefault(v, []).append((program, name))
    values = sorted(occurrences)
    for c in sorted(counted):
        o, n = a.classes[c].size, sizes[c]
        if n >= o:
            continue
        scales = where.scales.of(c)
        if scales is None:
            out.pins.setdefault(c, "a count of it scaled by a constant term not known as a number (rule a)")
            continue
        for s in sorted({abs(x) for x in scales} | {1.0}):
            for v in values:
                if trip_only is not None and trips_apart(occurrences[v], (c,), trip_only):
                    continue  # only trip counts and slice starts of other classes read it
                u = v / s
                if abs(u - o) <= 1e-9 * o or 0 < o - u <= NEAR:
                    out.pins.setdefault(c, f"a count of it times {_fmt(s)} meets the literal {_fmt(v)} at "
                                           f"{'its size' if abs(u - o) <= 1e-9 * o else f'size - {_fmt(o - u)}'}")
                elif u < o and n <= u:
                    out.bounds[c] = max(out.bounds.get(c, 0), math.floor(u) + 1)


def _reach(where: Sites, at: _Key, data_only: bool = False) -> Reach:
    """The reach of a size value: its constant's (the literals' reach, or with `data_only`
    the size values'), or an implicit clamp's (clamps.py), whose index is read with the
    data sources (`Meets.data_only`): a callee's argument every call site passes a constant
    is no source there (jnp.take's helper gets its bound V - 1 as an argument), where the
    literals' reach reads it as unknown and would meet every literal."""
    program, what = at
    if isinstance(what, Clamp):
        return where.data_meets[program].clamp_reach(what.index, what.operand)
    return (where.data_meets if data_only else where.meets)[program].reach(what)


def _met_positions(a: DimAnalysis, where: Sites, sizes: list[int], tied: dict[tuple[str, str], float | int],
                   tied_classes: dict[tuple[str, str], tuple[int, ...]]
                   ) -> list[tuple[float, float, tuple[int, ...], int | None, str, tuple[str, str]]]:
    """Rule (a), sizes met by positions: a rewritten constant combined with the positions
    of a class it is not the size of (a one-hot's shard offset `tp * 1024 + iota` along a
    local vocabulary of 8000) is compared with that class's size as with another size
    value, so their order survives: at hidden' = local' = 4 the wrong stride would be the
    right one."""
    out: list[tuple[float, float, tuple[int, ...], int | None, str, tuple[str, str]]] = []
    for pos in where.named:
        key = (pos.program, pos.constant)
        if key not in tied:
            continue
        for c in sorted(pos.classes - set(tied_classes.get(key, ()))):
            if sizes[c] < a.classes[c].size:
                # The size and the last positions: whether a position lies below, at or past
                # the constant is decided by its order with each of them (a window's offset
                # up to NEAR moves the boundary by as much; rule b bounds larger literal ones).
                for k in range(NEAR + 1 if LAST_POSITIONS else 1):
                    if sizes[c] - k >= 0:
                        out.append((float(a.classes[c].size - k), float(sizes[c] - k), (c,), None,
                                    f"positions met by constant {key[1]} ({key[0]})"
                                    + (f" (its size - {k})" if k else ""), key))
    return out


def _fmt(v: float | int) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


__all__ = ['INT_DIVISOR', 'MEAN_DIVISORS', 'NEAR', 'PAIR_MEETING', 'RATIOS', 'Order', 'Sites', 'mean_classes', 'order',
           'ratios', 'sites', 'tie_constants']
