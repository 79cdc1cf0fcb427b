"""Shape shrinking, the planning stage: from the dimension classes of a program pair
(`dims.py`) pick the smallest size of every class that keeps the shrinking argument of
docs/shrinking.md valid, and decide how every shape-valued constant is rewritten.

Sizes. Classes joined by scale relations (global = shards x local) form a component;
the component is divided by one common divisor D, so every relation still holds. D is
the largest divisor of the sizes that keeps every class of the component at or above
its lower bound:
  - 1 per shard for a free class;
  - the degree of the summand (at least 2) for a class summed over (Newton: a symmetric
    identity of degree d that holds at n >= d holds at every n), 2 for max/min;
  - 2 per shard for a class indexed by data (a vocabulary lookup);
  - 3, and 2|c| + 2 for every index constant c that is not a size, for a class an iota
    runs along (positions compared with a window constant keep the window visible).
Product relations (hidden = heads x head_dim) need the product's divisor to be the
factors' divisors multiplied; where that is impossible every class involved is pinned.

Constants. An integer constant (index arithmetic) or a float divisor whose value is the
size of a shrunk class, that size minus one, or the element count of a reduction, is
rewritten to the new value. A value that names two different sizes, or a small value
(< 8) that names a shrunk size, is not guessed at: the classes are pinned and the
reason recorded. Pinning changes sizes, so planning repeats until nothing changes."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tv_mlir.frontend.classify import classify_pair, is_classified
from tv_mlir.ir import Module
from tv_mlir.semantics.ops import MULTIPLYING_REDUCERS, SELECTING_REDUCERS
from tv_mlir.shrink import degree as degree_rules
from tv_mlir.shrink.constants import Sites, order, sites, tie_constants
from tv_mlir.shrink.counts import count_bounds, count_poles
from tv_mlir.shrink.cutsize import CutWeights
from tv_mlir.shrink.degree import UNBOUNDED, summand_degrees
from tv_mlir.shrink.dims import DimAnalysis, analyse
from tv_mlir.shrink.facts import Constant, ProgramFacts, role_constants
from tv_mlir.shrink.lookups import IndexPredicates, guarded_lookups, index_predicates
from tv_mlir.shrink.positions import combined_positions
from tv_mlir.shrink.rules import Bounds, exchanged, order_statistics
from tv_mlir.shrink.trips import trip_constants
from tv_mlir.shrink.unionfind import UnionFind
from tv_mlir.shrink.zero_witness import Accepted

# Rule (k), sums of data predicates (shrink/counts.py); the switch is for the tests that
# show what the rule does.
COUNTS = True
# Rule (b), one coordinate: iota classes of one size combined by an op keep one size
# (a switch so the tests can show what it decides).
COORDINATES = True
# Rule (a), classes of one size: a constant naming several classes of one original size
# makes them grow to one size instead of pinning them (constants.tie_constants, equalize).
EQUALIZE = True


@dataclass
class ClassEntry:
    """One line of the shrink map."""

    original: int
    verified: int
    where: str  # a member dim, for people
    role: str  # free / reduced (degree d) / indexed / positions / pinned
    reason: str = ""  # why it keeps its size, for pinned classes
    cls: int = -1  # the class's number in the analysis: two plans of one pair share it
    # Why the verdict at the verified size carries over (issue 12 item 5): "free
    # (renaming)", "Newton (degree d)", and every rule of docs/shrinking.md that bounds
    # it ("rule c: ..."); "kept" for a class at its original size.
    argument: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {"class": self.cls, "original": self.original, "verified": self.verified, "where": self.where,
             "role": self.role}
        if self.reason:
            d["reason"] = self.reason
        if self.argument:
            d["argument"] = self.argument
        return d


@dataclass
class ShrinkPlan:
    analysis: DimAnalysis
    sizes: list[int]  # per class
    # (program, constant's value name) -> new value (a tuple: an offset table's entries)
    constants: dict[tuple[str, str], float | int | tuple[int, ...]]
    entries: list[ClassEntry] = field(default_factory=list)
    # class -> (original, shrunk) size of its finest shard block: position j of the shrunk
    # class is position (j // shrunk) * original + j % shrunk of the original one.
    blocks: dict[int, tuple[int, int]] = field(default_factory=dict)
    # A grown plan under an element budget: shrunk classes left at their first size, and why.
    held: dict[int, str] = field(default_factory=dict)
    # Rule l (shrink/degree.py): the classes whose degree bound the per-trip loop degrees
    # lowered. Non-empty: the sizes are sound only for a proof that takes every top-level
    # loop by induction (api.verify checks it, else plans again with per_trip off).
    per_trip: list[int] = field(default_factory=list)
    # A grown plan under a budget: the budget it was planned with and how many of the
    # caller's fallbacks it took (plan's `cut_limit`); empty otherwise.
    budget: dict[str, int] = field(default_factory=dict)
    # Rule k: the families whose zero type the normal form accepted and no numeric run has
    # yet witnessed at these sizes (shrink_pair runs them, zero_witness.py).
    zero_witness: list[Accepted] = field(default_factory=list)

    @property
    def shrinks(self) -> bool:
        return any(s != c.size for s, c in zip(self.sizes, self.analysis.classes))

    def new_shape(self, program: str, value: str) -> tuple[int, ...]:
        return tuple(self.sizes[c] for c in self.analysis.classes_of(program, value))

    @property
    def elements(self) -> int:
        """Tensor elements of both programs at the planned sizes (values as read, before
        inlining): the size measure the second witness's budget is about."""
        return elements(self.analysis, self.sizes)

    def summary(self) -> dict[str, Any]:
        s: dict[str, Any] = {"shrunk": [e.to_dict() for e in self.entries if e.verified != e.original],
                             "kept": [e.to_dict() for e in self.entries if e.verified == e.original],
                             "elements": self.elements}
        if self.held:
            s["held"] = {str(c): why for c, why in self.held.items()}
        if self.budget:
            s["budget"] = dict(self.budget)
        if self.per_trip:
            s["loops"] = {"rule": "l: loop degrees per trip", "classes": list(self.per_trip),
                          "needs": "every top-level loop proved by induction"}
        return s


@dataclass
class _State:
    """What a plan extends as it applies the rules: the lower bounds, the pins and the
    map's arguments (class -> rule tag -> what it asks)."""

    mins: list[int]
    pins: dict[int, str]
    argued: dict[int, dict[str, str]]

    def note(self, c: int, tag: str, what: str) -> None:
        self.argued.setdefault(c, {}).setdefault(tag, what)


@dataclass
class PlanBase:
    """`plan` up to and including its first (grow 0) fixpoint: the dimension classes, the
    program facts, every rule's bounds and pins, and the first sizes. It is made from the
    two modules, `ranges`, rule l's per-trip switch as used and `lookups` only: `grow`,
    `budget`, `fallbacks` and `cut_limit` enter `plan` after it (the growth and the budget
    loop start from the first fixpoint's state, as a fresh call does), so every plan of one
    pair with those four inputs equal can start from one base (`PlanMemo`). The fields are
    read only, but for `mins`, `pins` and `argued`, which a plan copies (`state`) before it
    extends them."""

    a: DimAnalysis
    facts: list[ProgramFacts]
    comp: list[int]  # scale component per class
    family_of: list[int]  # family (scale, product and offset relations) per class
    dead: set[int]
    roles: list[str]
    lowered: list[int]  # rule l: classes whose bound the per-trip degrees lowered
    rules: Bounds
    counted: set[int]
    looked: list[IndexPredicates]
    derived: dict[int, tuple[int, int]]
    coordinates: list[list[int]]
    constants: list[Constant]
    where: Sites
    trip_only: dict[tuple[str, str], frozenset[int]]
    mins: list[int]
    pins: dict[int, str]
    argued: dict[int, dict[str, str]]
    first: list[int] = field(default_factory=list)
    tied: dict[tuple[str, str], float | int] = field(default_factory=dict)
    # Rule k: the families the normal form accepted with a zero type (zero_witness.py)
    accepted: list[Accepted] = field(default_factory=list)

    def state(self) -> _State:
        return _State(list(self.mins), dict(self.pins), {c: dict(d) for c, d in self.argued.items()})


@dataclass
class PlanMemo:
    """The plan bases of one pair of modules, for every plan of it in one verification
    (api.verify's shrink context: the first plan, the second witness's, a loop re-plan, the
    retries'). Bound to the first pair it is asked about (the very Module objects: planning
    reads them, not their names); another pair is planned afresh. Keyed by what a base is
    made from besides the modules (`PlanBase`): `ranges`, the per-trip switch as used,
    `lookups`, and the rule switches the base reads (tests flip them between plans)."""

    ref: Module | None = None
    other: Module | None = None
    bases: dict[tuple[Any, ...], PlanBase] = field(default_factory=dict)
    made: int = 0  # bases computed (the rest were shared)

    def base(self, ref: Module, other: Module, analysis: DimAnalysis | None,
             ranges: Sequence[tuple[int, int] | None] | None, per_trip: bool | None, lookups: bool,
             unwitnessed: frozenset[int] = frozenset()) -> PlanBase:
        if self.ref is None:
            self.ref, self.other = ref, other
        if ref is not self.ref or other is not self.other:
            return _base(ref, other, analysis, ranges, per_trip, lookups, unwitnessed)
        used = degree_rules.PER_TRIP if per_trip is None else per_trip
        key = (tuple(ranges or ()), bool(used), lookups, COUNTS, COORDINATES, EQUALIZE, unwitnessed)
        known = self.bases.get(key)
        if known is not None and (analysis is None or analysis is known.a):
            return known
        self.made += 1
        # One analysis per pair: a base made without one (another key) takes the first's.
        if analysis is None and self.bases:
            analysis = next(iter(self.bases.values())).a
        self.bases[key] = _base(ref, other, analysis, ranges, used, lookups, unwitnessed)
        return self.bases[key]


def _degrees(facts: list[ProgramFacts], a: DimAnalysis, families: dict[int, set[int]], per_trip: bool
             ) -> tuple[dict[int, int], set[int]]:
    """Both programs' summand degrees per class (at least 2) and the classes summed at
    degree 0 (`summand_degrees`)."""
    degree: dict[int, int] = {}
    counted: set[int] = set()
    for fa in facts:
        for c, d in summand_degrees(fa, a, families, counted, per_trip).items():
            degree[c] = max(degree.get(c, 2), d)
    return degree, counted


def elements(a: DimAnalysis, sizes: list[int]) -> int:
    return sum(math.prod(sizes[c] for c in a.classes_of(p, v)) for p, v in a.types)


def plan(ref: Module, other: Module, analysis: DimAnalysis | None = None, grow: int = 0,
         budget: int | None = None, ranges: Sequence[tuple[int, int] | None] | None = None,
         per_trip: bool | None = None, lookups: bool = True, fallbacks: Sequence[int] = (),
         cut_limit: int | None = None, memo: PlanMemo | None = None,
         unwitnessed: frozenset[int] = frozenset()) -> ShrinkPlan:
    """Both modules as read (not inlined) and classified. `grow` > 0: that many times,
    every shrunk class is raised to its next admissible size (at least one more element),
    for verifying again at less-shrunk sizes when a witness found at the smallest sizes
    is not shown by the original sizes, or for the second witness of an `equivalent`
    (api.verify). `budget`: with `grow`, the grown plan's tensor elements (`elements`) at
    most this many: families (classes tied by scale or product relations, which grow
    together) are grown cheapest first while the estimate stays within it, the others
    keep their first size (`held`, with the reason). `ranges`: the closed bounds the user
    assumes per program input (`assume.resolve`; rule k's index predicates, lookups.py).
    `per_trip`: rule l's loop degrees (None: `degree.PER_TRIP`); the plan lists the classes
    whose bound they lowered (`ShrinkPlan.per_trip`). `fallbacks`, `cut_limit`: with
    `budget`, smaller budgets tried in order while the grown plan's estimated size in the
    staged cut's measure (`cutsize.CutWeights`) is over `cut_limit` (the last is kept
    whatever its estimate); `ShrinkPlan.budget` says which was used. `lookups`: partitioned lookups may be
    read as gathers (lookups.guarded_lookups); the plan is made again without them when a
    lookup that partitions the range at the original sizes does not at the planned ones.
    `memo`: the pair's plan bases (`PlanMemo`), shared by every plan of it in a verification.
    `unwitnessed`: classes of rule k families whose zero type no numeric run showed
    (zero_witness.py): counted, as for a family without one; `ShrinkPlan.zero_witness`
    lists the families still to witness at this plan's sizes.

    Modules that were never classified (read and planned without `check_signatures`, as
    the plan snapshot tool and the tests' helpers may do) are classified here first: their
    `per_device` default (a global program) made an XLA per-device entry's shards look like
    global arguments of another size, so the same pair planned differently by caller
    (flax/fwd.partitioned: ffn 32 kept, or 32 -> 16 after check_signatures)."""
    base = memo.base(ref, other, analysis, ranges, per_trip, lookups, unwitnessed) if memo is not None else \
        _base(ref, other, analysis, ranges, per_trip, lookups, unwitnessed)
    a, facts, n, find, family_of = base.a, base.facts, len(base.a.classes), base.comp.__getitem__, base.family_of
    dead, roles, derived, where, looked = base.dead, base.roles, base.derived, base.where, base.looked
    # This plan's own copies of the state the first fixpoint left: growing extends them.
    st = base.state()
    mins, pins, argued = st.mins, st.pins, st.argued

    def fixpoint() -> tuple[list[int], dict[tuple[str, str], float | int]]:
        return _fixpoint(base, st)

    sizes, tied = list(base.first), dict(base.tied)
    first = list(sizes)
    base_mins, base_pins = list(mins), dict(pins)

    def grown(hold: set[int]) -> tuple[list[int], dict[tuple[str, str], float | int]]:
        # fixpoint reads and extends `mins` and `pins`: every attempt starts from the first plan's
        mins[:] = base_mins
        pins.clear()
        pins.update(base_pins)
        s, t = first, tied
        for _ in range(grow):
            for c in range(n):
                if s[c] < a.classes[c].size and family_of[c] not in hold:
                    mins[c] = max(mins[c], s[c] + 1)
            s, t = fixpoint()
        return s, t

    held: dict[int, str] = {}
    tries, asked = 0, budget
    if grow:
        sizes, tied = grown(set())
        if budget is not None:
            # Each budget (the caller's, then its fallbacks) is planned as a plan of its own
            # would be: from the state after the unbudgeted growth (`grown` resets mins and
            # pins; the map's arguments are restored too), so a fallback's plan is the plan
            # a fresh call with that budget makes.
            full, full_tied = sizes, tied
            saved = (list(mins), dict(pins), {c: dict(d) for c, d in argued.items()})
            weights = CutWeights.of(a, ref, other) if cut_limit is not None else None
            for k, b in enumerate([budget, *fallbacks]):
                budget, tries = b, k
                mins[:] = saved[0]
                pins.clear()
                pins.update(saved[1])
                argued.clear()
                argued.update({c: dict(d) for c, d in saved[2].items()})
                hold: set[int] = set()
                sizes, tied = full, full_tied
                if elements(a, full) > b:
                    hold = _families_over_budget(a, family_of, first, full, b)
                    sizes, tied = grown(hold)
                if weights is None or cut_limit is None or weights.measure(sizes) <= cut_limit:
                    break
            for c in range(n):
                if family_of[c] in hold and sizes[c] == first[c] < a.classes[c].size and c not in dead:
                    held[c] = f"not grown: growing it would take the pair past {budget} tensor elements " \
                              f"(the second witness's budget)"
    # Offset tables follow their block's class (constants.OFFSET_TABLES).
    rewritten: dict[tuple[str, str], float | int | tuple[int, ...]] = {
        **tied, **where.table_values(sizes, [c.size for c in a.classes])}
    if COUNTS and any(lk.gathers for lk in looked) and \
            not _lookups_partition(facts, looked, ranges, rewritten, sizes, a):
        return plan(ref, other, a, grow, asked, ranges, per_trip, lookups=False, fallbacks=fallbacks,
                    cut_limit=cut_limit, memo=memo, unwitnessed=unwitnessed)
    names = {("ref", v): n for v, n in zip(ref.main.body.args, ref.main.arg_names)}
    names.update({("ref", v): f"result {k}" for k, v in enumerate(ref.main.body.returns)})
    entries = []
    for c, cls in enumerate(a.classes):
        if cls.size <= 1 or c in dead or all("~pieces" in v for _, v, _ in cls.members):
            continue  # a halves rule's piece count (dim_rules._pieces): no dim of any value
        member = _where(cls.members, names, facts)
        role = "pinned" if c in pins else roles[c]
        reason = pins.get(c, "")
        if not reason and sizes[c] == cls.size and cls.size > 1:
            reason = "already at its smallest admissible size" if mins[c] >= cls.size else \
                "sizes of its relations leave no smaller divisor"
        if c in derived and sizes[c] != cls.size:
            b, k = derived[c]
            role = f"offset ({a.classes[b].size} {'+' if k >= 0 else '-'} {abs(k)})"
        if sizes[c] == cls.size:
            argument = "kept (the original size)"
        else:
            parts = list(argued.get(c, {}).values())
            argument = "; ".join(parts) if parts else "free (positions along it are renamings of each other)"
            if sizes[c] > max(mins[c], 1) and not parts:
                argument += "; its size follows from the classes it is sharded or reshaped with"
        entries.append(ClassEntry(cls.size, sizes[c], member, role, reason, c, argument))
    blocks = {}
    comps: dict[int, list[int]] = {}
    for c in range(n):
        comps.setdefault(find(c), []).append(c)
    for members in comps.values():
        for c in members:
            inner = [m for m in members if a.classes[c].size % max(1, a.classes[m].size) == 0]
            finest = min(inner, key=lambda m: a.classes[m].size)
            blocks[c] = (a.classes[finest].size, sizes[finest])
    used = {"budget": budget, "fallbacks_taken": tries} if grow and budget is not None else {}
    return ShrinkPlan(a, sizes, rewritten, entries, blocks, held, base.lowered, used,
                      [f for f in base.accepted if not f.classes <= unwitnessed])


def _base(ref: Module, other: Module, analysis: DimAnalysis | None,
          ranges: Sequence[tuple[int, int] | None] | None, per_trip: bool | None, lookups: bool,
          unwitnessed: frozenset[int] = frozenset()) -> PlanBase:
    """`plan` up to its first fixpoint (`PlanBase`): what `grow`, `budget`, `fallbacks` and
    `cut_limit` do not enter."""
    if not (is_classified(ref) and is_classified(other)):
        classify_pair(ref, other)
    a = analysis or analyse(ref, other)
    facts = [ProgramFacts.of("ref", ref), ProgramFacts.of("other", other)]
    n = len(a.classes)
    # Components: classes one divisor scales together. Families: also through products
    # (what a degree or a signature tie reaches).
    scale_pairs = [(g, loc) for g, loc, _ in a.scales]
    comp = _components(n, scale_pairs)
    find = comp.__getitem__
    family_of = _components(n, scale_pairs + [(p, f) for p, fs in a.products for f in fs]
                            + [(b, d) for d, b, _ in a.offsets])
    family_sets: dict[int, set[int]] = {}
    for c in range(n):
        family_sets.setdefault(family_of[c], set()).add(c)
    families = {c: family_sets[family_of[c]] for c in range(n)}

    pins: dict[int, str] = {c: "; ".join(a.classes[c].pins[:2]) for c in range(n) if a.classes[c].pins}
    # A class no signature dim reaches (through equality, scale or product) has a size
    # only one program knows, like the length of a broadcast that is then summed: its
    # size is part of the function, not a free parameter.
    tied_to_signature = {family_of[c] for c in _signature_classes(a, ref, other)}
    dead = _dead_classes(a, facts)
    for c in range(n):
        if family_of[c] not in tied_to_signature and c not in dead:
            pins.setdefault(c, "not tied to the signature (a size only inside the program)")
    mins = [1] * n
    roles = ["free"] * n
    # class -> rule tag -> what it asks: the map's argument per class.
    argued: dict[int, dict[str, str]] = {}

    def note(c: int, tag: str, what: str) -> None:
        argued.setdefault(c, {}).setdefault(tag, what)
    degree, counted = _degrees(facts, a, families, False)
    lowered: list[int] = []
    if (degree_rules.PER_TRIP if per_trip is None else per_trip) and \
            any(degree_rules.inductive_loops(fa.module) for fa in facts):
        composed, composed_counted = degree, counted
        degree, counted = _degrees(facts, a, families, True)
        lowered = sorted(c for c in set(degree) | set(composed) | counted | composed_counted
                         if degree.get(c) != composed.get(c) or (c in counted) != (c in composed_counted))
    for c, d in degree.items():
        if d >= UNBOUNDED:
            pins.setdefault(c, "a sum over it whose summand degree is unbounded")
        mins[c] = max(mins[c], d)
        roles[c] = f"summed (degree {d})"
        note(c, "Newton", f"Newton (degree {d})")
    rules = Bounds()
    for fa in facts:
        order_statistics(fa, a, comp, rules)
        exchanged(fa, a, rules)
    counts = Bounds()
    looked: list[IndexPredicates] = []
    accepted: list[Accepted] = []
    if COUNTS:
        looked = [index_predicates(fa, ranges) for fa in facts]
        for fa, lk in zip(facts, looked):
            lk.gathers = guarded_lookups(fa, lk, ranges) if lookups else set()
        poles = [count_poles(fa, a, families, lk) for fa, lk in zip(facts, looked)]
        for i, (fa, lk) in enumerate(zip(facts, looked)):
            # the other programs' count-dependent denominators (rule k, rational degrees)
            others: dict[frozenset[int], int] = {}
            for j, pj in enumerate(poles):
                if j != i:
                    for fam, sj in pj.items():
                        others[fam] = others.get(fam, 0) + sj
            count_bounds(fa, a, families, degree, counts, lk, others, counted, accepted)
    # Rule k, zero types witnessed: a family no run showed at a zero type is counted.
    counted |= unwitnessed
    for c, b in counts.mins.items():
        mins[c] = max(mins[c], b)
        note(c, "k", f"rule k: {counts.why[c]} (at least {b})")
    for c, why in counts.pins.items():
        pins.setdefault(c, why)
    for c, cls in enumerate(a.classes):
        if cls.reduced_by & SELECTING_REDUCERS:
            mins[c] = max(mins[c], 2)
            if roles[c] == "free":
                roles[c] = "max/min-reduced"
            note(c, "c", "rule c: max/min over it (k + 1 elements for the k-th statistic)")
        if c in rules.mins:
            mins[c] = max(mins[c], rules.mins[c])
            if roles[c] == "free":
                roles[c] = "exchanged by a transpose"
            tag = "c" if rules.why[c].startswith("order") else "d"
            argued.setdefault(c, {})[tag] = f"rule {tag}: {rules.why[c]} (at least {rules.mins[c]})"
        if c in rules.pins:
            pins.setdefault(c, rules.pins[c])
        if cls.reduced_by & MULTIPLYING_REDUCERS:
            pins.setdefault(c, "a product/and/or reduction over it")
        if cls.indexed:
            mins[c] = max(mins[c], 2)
            roles[c] = "indexed by data (gather)"
            note(c, "indexed", "rule: indexed by data (2 per shard)")
        if cls.iota:
            mins[c] = max(mins[c], 3)
            roles[c] = "positions (iota)"
            note(c, "b", "rule b: positions (3 per shard)")
    derived = _halos(a, find, mins, pins, argued)
    coordinates = _coordinates(a, facts) if COORDINATES else []
    # Per-shard bounds: a local class's bound applies to every shard of its global.
    constants = [c for fa in facts for c in role_constants(fa)]
    where = sites(a, facts, ranges)
    trip_only = trip_constants(a, facts, constants)

    base = PlanBase(a, facts, comp, family_of, dead, roles, lowered, rules, counted, looked, derived, coordinates,
                    constants, where, trip_only, mins, pins, argued, accepted=accepted)
    # The first fixpoint extends the base's own state: what every plan of the pair starts from.
    base.first, base.tied = _fixpoint(base, _State(mins, pins, argued))
    return base


def _fixpoint(base: PlanBase, st: _State) -> tuple[list[int], dict[tuple[str, str], float | int]]:
    """Sizes and tied constants, the rules applied until nothing changes. Reads `base`,
    extends `st` (the lower bounds, pins and the map's arguments)."""
    a, n, find, derived = base.a, len(base.a.classes), base.comp.__getitem__, base.derived
    where, constants, coordinates, rules = base.where, base.constants, base.coordinates, base.rules
    counted, trip_only = base.counted, base.trip_only
    mins, pins, argued, note = st.mins, st.pins, st.argued, st.note
    tied: dict[tuple[str, str], float | int] = {}
    rounds = 4 * n + 8
    for r in range(rounds):
        sizes = _solve(a, find, _linked(derived, mins), _linked_pins(derived, pins))
        for d, (b, c) in derived.items():
            sizes[d] = sizes[b] + c
        i_notes: dict[int, str] = {}
        tied, new_pins, bounds, tied_classes = tie_constants(a, where, constants, sizes, i_notes,
                                                             equalize=EQUALIZE and r < rounds - 1,
                                                             only=trip_only)
        for c, why in i_notes.items():
            note(c, "i", why)
        changed = False
        for c, why in new_pins.items():
            if c not in pins:
                pins[c] = why
                changed = True
        for c, b in bounds.items():
            if b > 3 and a.classes[c].iota:
                argued.setdefault(c, {})["b"] = f"rule b: positions (at least {b}: 2c + 2 for the constants " \
                                                "combined with them)"
            elif b > 3:
                argued.setdefault(c, {})["a-near"] = f"rule a: a 'size - k' constant or an integer divisor " \
                                                     f"rewritten (at least {b})"
            if b > mins[c]:
                mins[c] = b
                changed = True
        for rp in where.ranged:
            # Rule (b), assumed ranges: a literal met by ids assumed in [0, |C|) names a
            # position of C (ranged.py); a constant rewritten with a size names none.
            names = [k for k in (rp.constant, *rp.others) if k]
            moving = [(rp.program, k) in tied for k in names]
            if moving and all(moving):
                continue
            # Some of the split's constants rewritten with a size, some not (id_splits.py):
            # the split moves by a difference of the two, so the class keeps its size.
            bound = a.classes[rp.cls].size if any(moving) else rp.bound
            if not bound:
                continue
            note(rp.cls, "b-range", f"rule b: ids assumed in its range meet the literal {rp.position} "
                                    f"(at least {bound}: 2u + 2, and u kept in its shard's block)")
            if bound > mins[rp.cls]:
                mins[rp.cls] = bound
                changed = True
        rule_a = order(a, where, sizes, constants, tied, tied_classes, counted, trip_only)
        for c, why in rule_a.pins.items():
            if c not in pins:
                pins[c] = why
                changed = True
        for c, b in rule_a.bounds.items():
            note(c, "a", "rule a: its size values stay in order with every literal")
            if b > mins[c]:
                mins[c] = b
                changed = True
        for c in rule_a.grow:
            note(c, "a", "rule a: its size values stay in order with every literal")
            if sizes[c] < a.classes[c].size:
                mins[c] = max(mins[c], sizes[c] + 1)
                changed = True
        for group in coordinates:
            # Rule (b), one coordinate: positions one op combines (q_pos - k_pos) range
            # over one sequence; its classes keep one size (the largest any of them needs).
            top = max(sizes[c] for c in group)
            for c in group:
                note(c, "b-same", "rule b: positions combined with positions of another class of its size "
                                  "keep one size")
                if sizes[c] < top:
                    mins[c] = max(mins[c], top)
                    changed = True
        for ci, cj in rules.distinct:
            # Rule (d): exchanged classes of different sizes stay different (else a
            # transpose between them could be told apart from none only by size).
            if a.classes[ci].size != a.classes[cj].size and sizes[ci] == sizes[cj]:
                c = ci if a.classes[ci].size > a.classes[cj].size else cj
                note(c, "d", "rule d: exchanged classes of different sizes keep different sizes")
                if sizes[c] < a.classes[c].size:
                    mins[c] = max(mins[c], sizes[c] + 1)
                    changed = True
        if not changed:
            break
    return sizes, tied


def _lookups_partition(facts: list[ProgramFacts], looked: list[IndexPredicates],
                       ranges: Sequence[tuple[int, int] | None] | None,
                       rewritten: dict[tuple[str, str], float | int | tuple[int, ...]], sizes: list[int],
                       a: DimAnalysis) -> bool:
    """Rule (k), partitioned lookups: every lookup read as a gather still partitions the
    range at the planned sizes (the rewritten integer constants and offset tables, and the
    assumed bounds moved with the classes, as `assume.shrunk_sizes` moves them)."""
    moved: dict[int, int] = {}
    for c, cls in enumerate(a.classes):
        if sizes[c] != cls.size:
            moved[cls.size] = max(moved.get(cls.size, sizes[c]), sizes[c])
    shrunk = [None if r is None else (moved.get(r[0], r[0]), moved.get(r[1] + 1, r[1] + 1) - 1)
              for r in (ranges or [])]
    for fa, lk in zip(facts, looked):
        ints = {name: (v if isinstance(v, tuple) else int(v)) for (prog, name), v in rewritten.items()
                if prog == fa.program and (isinstance(v, tuple) or float(v).is_integer())}
        if lk.gathers and guarded_lookups(fa, lk, ranges, (ints, shrunk)) != lk.gathers:
            return False
    return True


def _coordinates(a: DimAnalysis, facts: list[ProgramFacts]) -> list[list[int]]:
    """Rule (b), one coordinate (docs/shrinking.md): sets of iota classes of one original
    size whose positions an op combines (`positions.combined_positions`), merged where they
    overlap."""
    uf = list(range(len(a.classes)))

    def root(c: int) -> int:
        while uf[c] != c:
            uf[c] = uf[uf[c]]
            c = uf[c]
        return c
    touched: set[int] = set()
    for fa in facts:
        for group in combined_positions(fa, a):
            by_size: dict[int, list[int]] = {}
            for c in group:
                by_size.setdefault(a.classes[c].size, []).append(c)
            for same in by_size.values():
                for c in same[1:]:
                    uf[root(c)] = root(same[0])
                    touched.update((c, same[0]))
    out: dict[int, list[int]] = {}
    for c in sorted(touched):
        out.setdefault(root(c), []).append(c)
    return [g for g in out.values() if len(g) > 1]


def _halos(a: DimAnalysis, find: Callable[[int], int], mins: list[int], pins: dict[int, str],
           argued: dict[int, dict[str, str]]) -> dict[int, tuple[int, int]]:
    """Rule (h), halos and offsets (docs/shrinking.md, "Halos and tiles"). A class read by
    slices, pads or concatenations at constant distances from its ends keeps, in every
    shard, both end zones of the largest such distance R and two interior positions:
    every class of its scale component keeps (2R + 2) per shard of the finest class. A
    class that is an offset of another (the operand plus its pads, minus its slice
    bounds) takes the other's size plus the offset: it is left out of the divisor, may
    not be sharded or reshaped itself (the group is pinned), and its own lower bound
    moves to its base. -> derived class -> (base class, offset)."""
    derived = {d: (b, c) for d, b, c in a.offsets}
    scaled = {g for g, _, _ in a.scales} | {loc for _, loc, _ in a.scales}
    shaped = {p for p, _ in a.products} | {f for _, fs in a.products for f in fs}
    for d, (b, _) in derived.items():
        if d in scaled or d in shaped:
            why = f"an offset of a class ({a.classes[b].size} + {a.classes[d].size - a.classes[b].size}) " \
                  "that is itself sharded or reshaped"
            pins.setdefault(d, why)
            pins.setdefault(b, why)
    width: dict[int, tuple[int, str]] = {}
    for c, (r, where) in a.halos.items():
        base = derived[c][0] if c in derived else c
        if r > width.get(base, (-1, ""))[0]:
            width[base] = (r, where)
    comps: dict[int, list[int]] = {}
    for c in range(len(a.classes)):
        comps.setdefault(find(c), []).append(c)
    for base, (r, where) in width.items():
        if base in shaped and r > 0:
            # A reshape regroups positions (seq = blocks x block): a zone at the ends of
            # the whole is at the ends of some blocks only; the zone argument does not hold.
            pins.setdefault(base, f"read at constant distances from its ends ({where}) and reshaped")
            continue
        members = comps[find(base)]
        finest = min(a.classes[m].size for m in members)
        for m in members:
            if a.classes[m].size % max(1, finest):
                continue
            bound = a.classes[m].size // max(1, finest) * halo_bound(r)
            mins[m] = max(mins[m], bound)
            argued.setdefault(m, {})["h"] = f"rule h: halo width {r} ({where}): 2R + 2 = {halo_bound(r)} per shard"
    for d, (b, c) in derived.items():
        argued.setdefault(d, {})["h-offset"] = f"rule h: an offset of the class of size {a.classes[b].size} " \
                                              f"by {c} (its size follows)"
    return derived


def halo_bound(r: int) -> int:
    """Rule (h): the size per shard of a class read at distance r from its ends: both end
    zones of r positions and two interior positions (docs/shrinking.md)."""
    return 2 * r + 2


def _linked(derived: dict[int, tuple[int, int]], mins: list[int]) -> list[int]:
    """The lower bounds with every derived class's bound moved to its base."""
    out = list(mins)
    for d, (b, c) in derived.items():
        out[b] = max(out[b], mins[d] - c, 1 - c)
    return out


def _linked_pins(derived: dict[int, tuple[int, int]], pins: dict[int, str]) -> dict[int, str]:
    """A derived class pinned pins its base (and the base's size fixes the derived one)."""
    for d, (b, _) in derived.items():
        if d in pins and b not in pins:
            pins[b] = f"an offset of it is kept: {pins[d]}"
    return pins


def _families_over_budget(a: DimAnalysis, family_of: list[int], first: list[int], full: list[int],
                          budget: int) -> set[int]:
    """The families to keep at their first sizes so that the grown plan fits `budget`:
    families are added cheapest first (by the estimate with that family alone grown)
    while the estimate with every added family grown stays within it. An estimate only
    (constants can pin differently once fewer classes grow); the plan is solved again."""
    growing = sorted({family_of[c] for c in range(len(first)) if full[c] != first[c]})
    # The estimate with one more family grown differs from the current one only in the
    # values with a dim in that family: each family's values are found once, and the sums
    # are updated by those values alone (exact integers: the same estimates, and so the
    # same choice, as summing every value for every candidate, which took the 405B
    # stack's second witness ~10 s).
    shapes = [a.classes_of(p, v) for p, v in a.types]
    touching: dict[int, list[int]] = {f: [] for f in growing}
    for i, cl in enumerate(shapes):
        for f in {family_of[c] for c in cl}:
            if f in touching:
                touching[f].append(i)

    def delta(base: list[int], f: int) -> int:
        return sum(math.prod(full[c] if family_of[c] == f else base[c] for c in shapes[i])
                   - math.prod(base[c] for c in shapes[i]) for i in touching[f])

    total = elements(a, first)
    alone = {f: total + delta(first, f) for f in growing}
    current, chosen = list(first), set()
    for f in sorted(growing, key=lambda f: alone[f]):
        d = delta(current, f)
        if total + d <= budget:
            chosen.add(f)
            total += d
            for c in range(len(current)):
                if family_of[c] == f:
                    current[c] = full[c]
    return set(growing) - chosen


def _signature_classes(a: DimAnalysis, ref: Module, other: Module) -> set[int]:
    out = set()
    for program, m in (("ref", ref), ("other", other)):
        names = list(m.main.body.args) + list(m.main.body.returns)
        if m.per_device:
            names += [f"global arg {k}" for k in range(len(m.main.body.args))]
            names += [f"global result {k}" for k in range(len(m.main.body.returns))]
        for v in names:
            if (program, v) in a.types:
                out.update(a.classes_of(program, v))
    return out


def _dead_classes(a: DimAnalysis, facts: list[ProgramFacts]) -> set[int]:
    """Classes whose every member is a value no program result depends on (dead code, and
    residuals a function returns that no caller reads: `facts.needed_values`)."""
    live: set[int] = set()
    by_program = {f.program: f for f in facts}
    for c, cls in enumerate(a.classes):
        for prog, value, _ in cls.members:
            f = by_program[prog]
            if value in f.unreachable:
                continue
            if value in f.needed or "~" in value or value.startswith("global ") or value in f.entry_args:
                live.add(c)
                break
    return set(range(len(a.classes))) - live


def _where(members: list[tuple[str, str, int]], names: dict[tuple[str, str], str],
           facts: list[ProgramFacts] | None = None) -> str:
    """A member dim people can find: a reference argument or result, else the result of
    an op with a source location (reference program first)."""
    for prog, value, axis in members:
        if (prog, value) in names:
            return f"{names[(prog, value)]} dim {axis}"
    by_program = {f.program: f for f in facts or ()}
    for want in ("ref", "other"):
        for prog, value, axis in members:
            f = by_program.get(prog)
            if prog != want or f is None or value not in f.defs:
                continue
            op, _ = f.defs[value]
            if op.loc and op.name not in ("stablehlo.constant", "stablehlo.broadcast_in_dim"):
                side = "" if prog == "ref" else "other: "
                return f"{side}{op.name.split('.')[-1]} @ {op.loc.split(' @ ')[-1]} dim {axis}"
    prog, value, axis = members[0]
    return f"{prog} {value} dim {axis}"


def _components(n: int, pairs: list[tuple[int, int]]) -> list[int]:
    """A representative per class, equal for classes the pairs connect."""
    uf = UnionFind.of(range(n), [(y, x) for x, y in pairs])
    return [uf.find(c) for c in range(n)]


def _solve(a: DimAnalysis, find: Callable[[int], int], mins: list[int], pins: dict[int, str]) -> list[int]:
    """A divisor per scale component. A product's divisor must be its factors' divisors
    multiplied: factors give up shrinking (minor factor first) until that product is
    admissible for the product's component; a class with two decompositions pins."""
    n = len(a.classes)
    comps: dict[int, list[int]] = {}
    for c in range(n):
        comps.setdefault(find(c), []).append(c)
    divisor = {root: _best_divisor(a, members, mins, pins) for root, members in comps.items()}
    for _ in range(4 * len(a.products) + 4):
        stable = True
        for p, fs in a.products:
            rp, rf = find(p), [find(f) for f in fs]
            want = math.prod(divisor[r] for r in rf)
            if want == divisor[rp]:
                continue
            stable = False
            if rp in rf:
                # The whole scales with one of its own factors (experts = shards x local
                # experts, split again by a reshape): the other factors cannot shrink.
                for r in rf:
                    if r != rp:
                        divisor[r] = 1
                divisor[rp] = math.prod(divisor[r] for r in rf)
                continue
            if _decided(a, p, fs, find):
                for x in (p, *fs):
                    pins.setdefault(x, "reshaped in two different ways")
                    divisor[find(x)] = 1
                continue
            while want > 1 and not _admissible(a, comps[rp], mins, pins, want):
                for r in reversed(rf):
                    if divisor[r] > 1:
                        divisor[r] = max(d for d in _divisors(divisor[r]) if d < divisor[r])
                        break
                want = math.prod(divisor[r] for r in rf)
            divisor[rp] = want
        if stable:
            majors = _misaligned(a, find, divisor)
            if not majors:
                return [a.classes[c].size // divisor[find(c)] for c in range(n)]
            for r in majors:
                divisor[r] = 1
    for p, fs in a.products:  # no fixpoint: keep every reshaped class whole
        for x in (p, *fs):
            pins.setdefault(x, "reshape relations without a consistent shrink")
            divisor[find(x)] = 1
    return [a.classes[c].size // divisor[find(c)] for c in range(n)]


def _misaligned(a: DimAnalysis, find: Callable[[int], int], divisor: dict[int, int]) -> set[int]:
    """Where a sharded class is reshaped into factors (heads x head_dim, split over tp),
    its shards' boundaries fall on the factors' boundaries at the original sizes (a shard
    holds whole heads, or lies inside one): the shrunk sizes must keep that, or the two
    programs would split the dimension differently (4 heads of 4 over 4 devices shrunk to
    2 heads of 4 over 4 devices: each device half a head). A product made of the shards
    (an all-gather, transposed and reshaped: one factor is the shard) has no boundaries of
    its own to keep. The major factors of a misaligned product give up shrinking (their
    component roots are returned)."""
    def shrunk(c: int) -> int:
        return a.classes[c].size // divisor[find(c)]

    out: set[int] = set()
    for p, fs in a.products:
        for g, local, _ in a.scales:
            if find(g) != find(p) or a.classes[g].size != a.classes[p].size:
                continue
            if find(local) in {find(f) for f in fs}:
                continue  # the product is made of the shards themselves (an all-gather's interleave)
            n0, n1 = a.classes[local].size, shrunk(local)
            for j in range(1, len(fs)):
                s0 = math.prod(a.classes[f].size for f in fs[j:])
                s1 = math.prod(shrunk(f) for f in fs[j:])
                if (n0 % s0 == 0 and n1 % s1) or (s0 % n0 == 0 and s1 % n1):
                    out.update(find(f) for f in fs[:j] if divisor[find(f)] > 1)
    return out


def _decided(a: DimAnalysis, p: int, fs: tuple[int, ...], find: Callable[[int], int]) -> bool:
    """True when the product's component is also a factor elsewhere, or another product
    relation for it disagrees (two decompositions of one class)."""
    for q, gs in a.products:
        if find(q) == find(p) and tuple(find(g) for g in gs) != tuple(find(f) for f in fs):
            return True
    return False


def _best_divisor(a: DimAnalysis, members: list[int], mins: list[int], pins: dict[int, str]) -> int:
    if any(c in pins for c in members):
        return 1
    g = 0
    for c in members:
        g = math.gcd(g, a.classes[c].size)
    best = 1
    for d in _divisors(g):
        if _admissible(a, members, mins, pins, d):
            best = max(best, d)
    return best


def _admissible(a: DimAnalysis, members: list[int], mins: list[int], pins: dict[int, str], d: int) -> bool:
    if d == 1:
        return True
    if any(c in pins for c in members):
        return False
    return all(a.classes[c].size % d == 0 and a.classes[c].size // d >= mins[c] for c in members)


def _divisors(g: int) -> list[int]:
    out: list[int] = []
    for k in range(1, int(math.isqrt(g)) + 1):
        if g % k == 0:
            out.extend({k, g // k})
    return sorted(out)


__all__ = ["ClassEntry", "ShrinkPlan", "plan"]
