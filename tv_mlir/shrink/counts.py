"""Rule (k): sums of data-dependent predicates (docs/shrinking.md, "Rules").

A `compare` of data along a class is not an uninterpreted atom to the verifier: it is
decided exactly, so its values are Booleans (b * b = b), and Newton's argument, which
needs the summands' elements free, does not hold for what is summed over them. The count
k = sum_i [x_i > 0] takes only the values 0..n: a cubic in it that vanishes at k = 0, 1, 2
(C(k, 3) = k(k-1)(k-2)/6, against the same with 3 for 3!) is equal on every input at 2
positions and differs at 64. The argument that replaces Newton's: split the positions
by the outcomes of the m predicates at each (T = 2^m types). On every type assignment
the programs are polynomials in each type's power sums and in the type counts k_t, and
a polynomial identity on an open set of inputs is an identity of those polynomials; the
power sums of a type are independent once it has d elements (d: the summand degree, as
for Newton), and a polynomial of degree D in the counts that vanishes on every count
vector with sum n' and each k_t >= d vanishes everywhere once n' - T d >= D. So the class
keeps D + T d elements, D the degree of the program's results in those sums (a masked
mean sum(m * l) / sum(m) has D = 2), plus the largest constant a count is compared or
clipped with (max(k, 1): each piece needs its own points). A count that meets anything
else (exp(k), a compare with data, a loop) has no degree bound: the class is pinned."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from tv_mlir.ir import Block, ConvDims, Op
from tv_mlir.semantics.ops import DEGREE_ADDING, DEGREE_PRESERVING, DOTS, TRANSCENDENTAL_OPS
from tv_mlir.shrink import zero_types
from tv_mlir.shrink.degree import PIECEWISE, UNBOUNDED, Degrees
from tv_mlir.shrink.degree import _Terms as SquareTerms
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import SPLAT_PRESERVING, ProgramFacts, passed_whole, splat
from tv_mlir.shrink.lookups import IndexPredicates
from tv_mlir.shrink.rules import Bounds
from tv_mlir.shrink.scatters import data_scatter
from tv_mlir.shrink.scatters import shapes as scatter_shapes
from tv_mlir.shrink.zero_witness import Accepted

# More predicates than this along one family: 2^m types is no useful bound; pinned.
MAX_PREDICATES = 4
# Rule (k), index predicates (shrink/lookups.py): compares of one bounded integer input,
# evaluated on its assumed range: decided ones are no data predicates, the others count
# their types exactly. A switch so the tests can show what it decides.
LOOKUPS = True
# Rule (k), counts through uninterpreted ops: exp(k), log(sum) have their argument's degree
# in the counts, and max/min of counts their operands' largest, instead of no degree at
# all. OFF: it is unsound (docs/shrinking.md, rule k "atoms"; testdata/shrink_rules/
# gen_atoms.py): atoms whose arguments coincide on every count the shrunk size reaches
# (exp_coincide) and max/min pieces that cross at a count it never reaches (count_max)
# hide bugs. Kept, switched off, for its tests and for a sound successor.
ATOMS = False
# Rule (k), poles: a divide by a count-dependent value is a polynomial in the counts only
# off the denominator's zeros; an affine denominator's zero is kept within the class,
# any other such denominator pins (docs/shrinking.md, rule k "poles"; gen_pole.py). A
# switch so the tests can show the hole it closes.
POLES = True
# Rule (k), offsets: a count compared or clipped with a constant after an affine map
# (max(k - 20, 0)) splits where the map reaches the constant (k = 20), not at the constant.
OFFSETS = True
# Rule (k), non-affine splits: a count-dependent value of no affine form in one count
# (k k - 2000, (k - 3)(k - 40), k1 + k2) compared or clipped with a constant splits where
# it reaches the constant, which the constant alone does not locate (k k - 2000 > 0 splits
# at 44.7): the class is pinned (docs/shrinking.md, rule k "non-affine splits";
# gen_count_forms.py count_square). A switch so the tests can show the hole it closes.
SPLITS = True
# Rule (k), rational degrees: two programs with count-dependent denominators differ by
# p1 / q1 - p2 / q2, whose numerator p1 q2 - p2 q1 has degree up to D + S1 + S2 (S: each
# program's count-dependent denominators, with multiplicity), not D: the pair's bound adds
# both (docs/shrinking.md, rule k "rational degrees"; gen_count_forms.py count_rational).
RATIONAL = True
# Rule (k), constant tables read at data indices (`_table_lookup`): their results count as
# predicates, one per bit of the table's size. A switch so the tests can show the hole.
TABLES = True
# A power with a constant integer exponent up to this is multiplied out by the verifier
# (semantics/elementwise.py): its degree is the exponent times its base's, not an atom's.
MAX_EXPONENT = 64


@dataclass
class PredicatedSums:
    """The sums over one family's classes whose summand reads a data predicate along it."""

    predicates: set[str] = field(default_factory=set)  # compare results, and table lookups (below)
    # Lookups in a constant table at a data index (`_table_lookup`), by result: the binary
    # predicates they count as (ceil log2 of the table's elements, each a value it may give).
    tables: dict[str, int] = field(default_factory=dict)
    sums: dict[int, list[Op]] = field(default_factory=dict)  # class -> reductions over it
    results: set[str] = field(default_factory=set)  # the sums' results: the counts


def count_bounds(fa: ProgramFacts, a: DimAnalysis, families: dict[int, set[int]], degree: dict[int, int],
                 out: Bounds, lookups: IndexPredicates | None = None,
                 other_poles: dict[frozenset[int], int] | None = None, counted: set[int] | None = None,
                 accepted: list[Accepted] | None = None) -> None:
    """Rule (k) for one program: per family whose sums read data predicates, the bound
    D + T d + threshold on every class summed over (or a pin), into `out`. `lookups`: the
    program's compares evaluated on the assumed input ranges (`lookups.index_predicates`).
    `other_poles`: per family, the pair's other programs' S (`count_poles`): the difference
    of two fractions p1 / q1 - p2 / q2 has the numerator p1 q2 - p2 q1, whose degree is at
    most max(D1, D2) + S1 + S2. `counted` receives the classes whose predicated sums have
    no reachable zero type (`zero_type_counts`): their sums can add up to the size;
    `accepted` the families with one (for the numeric witness, zero_witness.py)."""
    lookups = lookups if LOOKUPS and lookups is not None else IndexPredicates()
    if counted is not None and zero_types.ZERO_TYPES:
        counted |= zero_type_counts(fa, a, families, lookups, accepted)
    found = _predicated(fa, a, families, lookups)
    for fam, ps in found.items():
        if not ps.sums:
            continue
        flow = _Flow(fa, ps.results)
        d_out = flow.result_degree()
        threshold = flow.threshold
        m = len(ps.predicates) - len(ps.tables) + sum(ps.tables.values())
        exact = lookups.types(ps.predicates) if not ps.tables else None
        types = exact if exact is not None else 2 ** m
        poles = flow.poles + (other_poles or {}).get(fam, 0) if RATIONAL else 0
        if poles and d_out < UNBOUNDED:
            # p1 / q1 - p2 / q2 = (p1 q2 - p2 q1) / (q1 q2): the numerator's degree is at most
            # D plus every affine denominator of both programs (count_rational).
            d_out = min(d_out + poles, UNBOUNDED)
        for c, ops in ps.sums.items():
            where = ops[0].loc or ops[0].name
            if d_out >= UNBOUNDED or types > 2 ** MAX_PREDICATES:
                why = (f"a sum over it of data predicates (at {where}) whose results meet a non-polynomial op"
                       if d_out >= UNBOUNDED else f"a sum over it of {m} data predicates (at {where})"
                       + (f" of {types} types on the assumed input ranges" if exact is not None else ""))
                out.pins.setdefault(c, "rule k: " + why)
                continue
            if d_out == 0:
                continue
            bound, formula = count_bound(d_out, types, max(degree.get(c, 1), 1), threshold)
            kinds = f", {types} types on the assumed input ranges" if exact is not None else ""
            dens = f" (D counts {poles} count-dependent denominator{'s' if poles > 1 else ''} of the pair)" \
                if poles else ""
            out.at_least(c, bound, f"counts of {m} data predicate{'s' if m > 1 else ''}{kinds} summed at {where}: "
                                   f"{formula}{dens}")


def zero_type_counts(fa: ProgramFacts, a: DimAnalysis, families: dict[int, set[int]],
                     lookups: IndexPredicates, accepted: list[Accepted] | None = None) -> set[int]:
    """Rule (k), zero types (zero_types.py): the classes summed over by predicated sums of
    a family with no reachable type at which every such summand lacks a constant term.
    There the counts can add up to the class's size (`sum(ids == ids)` is n), which the
    count argument does not carry: such a class is counted (rule a orders n). Decided
    compares are read too (their one outcome is a type restriction), so the walk takes
    every data compare, the ones `lookups` decided included. `accepted` receives the
    families the normal form accepted, with their zero types, for a numeric witness
    (zero_witness.py), which can only count them too."""
    every = IndexPredicates(gathers=lookups.gathers, outcomes=lookups.outcomes)
    found = _predicated(fa, a, families, every)
    out: set[int] = set()
    if not found:
        return out
    normal = zero_types.normal_form(fa)
    for fam, ps in found.items():
        if not ps.sums or ps.tables or len(ps.predicates) > zero_types.MAX_ENUMERATED:
            continue  # too many to enumerate: rule k pins past MAX_PREDICATES anyway
        ops = [fa.defs[p][0] for p in sorted(ps.predicates) if p in fa.defs]
        if len(ops) != len(ps.predicates) or any(op.name != "stablehlo.compare" for op in ops):
            continue  # a scatter's one-hot: not read here (docs/shrinking.md, batch 6)
        preds = []
        for op in ops:
            v = op.results[0]
            if v in lookups.truths:
                preds.append(zero_types.Predicate(v, "EQ", (), 0.0 if lookups.truths[v] else 1.0))
            else:
                preds.append(zero_types.read_compare(normal, op, normal.dtype(op.operands[0])))
        ranged = {p: lookups.outcomes[p] for p in ps.predicates if p in lookups.outcomes}
        sums = zero_types.summands(op for c_ops in ps.sums.values() for op in c_ops)
        degrees = Degrees(fa, a, set(fam))
        related = normal.related if zero_types.RELATED else normal.inside
        types = zero_types.reachable(preds, ranged, related)
        # every zero type when a witness will look for one, else the first settles it
        zeros = [u for u in types if _zero_type(degrees, sums, u)] if accepted is not None else \
            [u for u in types[:1 + next((i for i, u in enumerate(types) if _zero_type(degrees, sums, u)), len(types))]
             if _zero_type(degrees, sums, u)]
        if not zeros:
            out.update(ps.sums)
        elif accepted is not None:
            accepted.append(Accepted(fa.program, tuple(sorted(ps.predicates)),
                                     tuple(tuple(sorted(u.items())) for u in zeros), frozenset(ps.sums),
                                     tuple((op.results[0], tuple(op.operands),
                                            str(op.attrs.get("comparison_direction", ""))) for op in ops)))
    return out


def _zero_type(degrees: Degrees, sums: list[list[str]], outcomes: dict[str, bool]) -> bool:
    """No summand has a constant term at this type (a product: unless every factor has)."""
    # degree.py's reading (a square has its operand's constant term), with the outcomes fixed
    terms = SquareTerms(degrees, outcomes=outcomes)
    return not any(all(v == "?" or terms.may_have_constant(v) for v in group) for group in sums)


def count_poles(fa: ProgramFacts, a: DimAnalysis, families: dict[int, set[int]],
                lookups: IndexPredicates | None = None) -> dict[frozenset[int], int]:
    """Per family whose sums read data predicates: the largest S of the program's results
    (its divides by count-dependent values, with multiplicity; `_Flow.poles`), which its
    partner's bound adds (`count_bounds`)."""
    lookups = lookups if LOOKUPS and lookups is not None else IndexPredicates()
    out: dict[frozenset[int], int] = {}
    for fam, ps in _predicated(fa, a, families, lookups).items():
        if ps.sums:
            flow = _Flow(fa, ps.results)
            flow.result_degree()
            out[fam] = flow.poles
    return out


def _predicated(fa: ProgramFacts, a: DimAnalysis, families: dict[int, set[int]],
                lookups: IndexPredicates) -> dict[frozenset[int], PredicatedSums]:
    data = _data_values(fa)
    found: dict[frozenset[int], PredicatedSums] = {}
    for op in fa.ops():
        bits = _table_lookup(fa, a, op, data) if TABLES else None
        if bits is not None:
            key = (fa.program, op.results[0])
            for c in set(a.classes_of(*key)) if key in a.types else ():
                if a.classes[c].size > 1:
                    ps = found.setdefault(frozenset(families[c]), PredicatedSums())
                    _follow(fa, a, frozenset(families[c]), op.results[0], ps)
                    if op.results[0] in ps.predicates:
                        ps.tables[op.results[0]] = bits
            continue
        if op.name == "stablehlo.scatter" and op.operands[1] in data:
            _scatter_predicate(fa, a, families, op, found)  # the lookup's transpose (shrink/scatters.py)
            continue
        if op.name != "stablehlo.compare" or not any(v in data for v in op.operands):
            continue
        if op.results[0] in lookups.decided:
            continue  # one outcome on every assumed input and every device: a constant
        if op.results[0] in lookups.gathers:
            continue  # it only picks which device's gathered element a sum keeps: a gather
        key = (fa.program, op.results[0])
        if key not in a.types:
            continue
        for c in set(a.classes_of(*key)):
            if a.classes[c].size > 1:
                fam = frozenset(families[c])
                _follow(fa, a, fam, op.results[0], found.setdefault(fam, PredicatedSums()))
    return found


def _scatter_predicate(fa: ProgramFacts, a: DimAnalysis, families: dict[int, set[int]], op: Op,
                       found: dict[frozenset[int], PredicatedSums]) -> None:
    """A scatter-add by data indices is `Z + onehot(I)^T U`: its one-hot [I_t = v] is a data
    predicate along the tokens and the addressed dim; the scatter sums it over the tokens'
    summed dims, and what its result meets downstream is followed as a compare's is."""
    if not all((fa.program, v) in a.types for v in op.operands + op.results):
        return
    reading = data_scatter(op, lambda v: a.types[(fa.program, v)].shape)
    if reading is None:
        return
    tokens = [a.class_of[(fa.program, op.operands[2], du)] for _, du in reading.summed]
    along = set(a.classes_of(fa.program, op.results[0])) | set(tokens)
    for c in along:
        if a.classes[c].size <= 1:
            continue
        fam = frozenset(families[c])
        ps = found.setdefault(fam, PredicatedSums())
        if any(t in fam for t in tokens):
            _record(fa, a, fam, op, op.operands[2], tuple(du for _, du in reading.summed), ps)
            ps.predicates.add(op.results[0])
        _follow(fa, a, fam, op.results[0], ps)


def _table_lookup(fa: ProgramFacts, a: DimAnalysis, op: Op, data: set[str]) -> int | None:
    """For a gather or dynamic slice of a table computed without the inputs (a constant)
    at an index that depends on them: the binary predicates it counts as under rule (k),
    else None. Its elements take only the table's values, as a compare's take 0 and 1, so
    Newton's argument (free summands) fails for sums over them the same way: one type per
    table element is more than enough (a table [0, 0, 0, 1, ...] read at token ids is a
    mask: sum(table[ids]) is the count of ids equal to 3, and C(k, 3) of it vanishes at 2
    tokens; testdata/shrink_rules/gen_tables.py)."""
    if op.name not in ("stablehlo.gather", "stablehlo.dynamic_slice") or op.operands[0] in data:
        return None
    if not any(v in data for v in op.operands[1:]):
        return None
    if _splat_table(fa, op.operands[0]):
        return None  # one value everywhere (indices are clamped): the lookup reads no data
    t = a.types.get((fa.program, op.operands[0]))
    if t is None:
        return MAX_PREDICATES + 1
    n = math.prod(t.shape)
    return max(1, (n - 1).bit_length())


def _splat_table(fa: ProgramFacts, v: str) -> bool:
    """v is one constant value everywhere: a splat constant through broadcasts, reshapes,
    converts and manual computations' whole arguments."""
    v = passed_whole(fa, v)
    while v in fa.defs:
        op = fa.defs[v][0]
        if op.name == "stablehlo.constant":
            return splat(op) is not None
        if op.name not in SPLAT_PRESERVING:
            return False
        v = passed_whole(fa, op.operands[0])
    return False


def count_bound(d_out: int, types: int, d: int, threshold: int) -> tuple[int, str]:
    """The size rule (k) asks for (module docstring), and how it is made up. Results linear
    in the sums (D = 1: a masked gradient w - lr * sum(m * g)) need one position of every
    type, where a linear function of a type's power sums is already determined, and one
    more for the counts' linear part: T + 1. Higher degrees need d of every type (Newton
    within it) and D + 1 count vectors: D + T d."""
    if d_out <= 1:
        return types + 1 + threshold, f"T + 1 + c = {types} + 1 + {threshold} (D = 1)"
    return d_out + types * d + threshold, f"D + T d + c = {d_out} + {types} x {d} + {threshold}"


def _data_values(fa: ProgramFacts) -> set[str]:
    """Values that depend on a program input (an iota or a constant alone is no data: a
    position mask's counts are rule b's). Forward over program order, regions and calls
    included, a few rounds for loops and callee bodies placed before their callers."""
    data = set(fa.entry_args)
    ops = fa.ops()
    for _ in range(8):
        grew = False
        for op in ops:
            inputs = fa.sources(op)
            if op.name == "func.call":
                fn = fa.module.funcs.get(op.attrs.get("callee", ""))
                if fn is not None:
                    for arg, v in zip(fn.body.args, op.operands):
                        if v in data and arg not in data:
                            data.add(arg)
                            grew = True
            if any(v in data for v in inputs):
                for r in op.results:
                    if r not in data:
                        data.add(r)
                        grew = True
                for region in op.regions:
                    for arg in region.args:
                        if arg not in data:
                            data.add(arg)
                            grew = True
        if not grew:
            break
    return data


def _along(fa: ProgramFacts, a: DimAnalysis, fam: frozenset[int], v: str) -> bool:
    key = (fa.program, v)
    return key in a.types and any(c in fam for c in a.classes_of(*key))


def _follow(fa: ProgramFacts, a: DimAnalysis, fam: frozenset[int], start: str, ps: PredicatedSums) -> None:
    """Forward from a predicate through every use (into callees, region arguments and
    back out) to the sums over the family's classes that read it."""
    todo, seen = [start], {start}
    found_any = False

    def push(v: str) -> None:
        if v not in seen:
            seen.add(v)
            todo.append(v)

    while todo:
        v = todo.pop()
        for op in fa.uses.get(v, []):
            if op.name == "stablehlo.reduce" and v in op.operands[:len(op.operands) // 2]:
                body = op.regions[0].ops
                if len(body) == 1 and body[0].name == "stablehlo.add":
                    found_any |= _record(fa, a, fam, op, v, tuple(op.attrs["dimensions"]), ps)
            elif op.name == "stablehlo.convolution" and v in op.operands[:2] \
                    and isinstance(op.attrs.get("dimension_numbers"), ConvDims):
                # Input features are contracted like a dot's contracting dims.
                dn = op.attrs["dimension_numbers"]
                dims = (dn.input_feature,) if op.operands[0] == v else (dn.kernel_input_feature,)
                found_any |= _record(fa, a, fam, op, v, dims, ps)
            elif op.name in DOTS and v in op.operands:
                dn = op.attrs.get("dot_dimension_numbers")
                k = list(op.operands).index(v)
                dims = (dn.lhs_contracting if k == 0 else dn.rhs_contracting) if dn else \
                    ((len(a.classes_of(fa.program, v)) - 1,) if k == 0 else (0,))
                found_any |= _record(fa, a, fam, op, v, tuple(dims), ps)
            if op.name == "func.call":
                fn = fa.module.funcs.get(op.attrs.get("callee", ""))
                for arg, o in zip(fn.body.args if fn else [], op.operands):
                    if o == v:
                        push(arg)
            for region in op.regions:
                for k, o in enumerate(op.operands):
                    if o == v and k < len(region.args):
                        push(region.args[k])
                for k, r in enumerate(region.returns):
                    if r == v and op.name == "stablehlo.while" and k < len(region.args):
                        push(region.args[k])
            for r in op.results:
                push(r)
        # A function's return: the calls' results.
        returned = fa.returned_by(v)
        if returned:
            fn_name, idx = returned
            for call in _calls_of(fa, fn_name):
                push(call.results[idx])
    if found_any:
        ps.predicates.add(start)


def _record(fa: ProgramFacts, a: DimAnalysis, fam: frozenset[int], op: Op, v: str, dims: tuple[int, ...],
            ps: PredicatedSums) -> bool:
    hit = False
    for d in dims:
        c = a.class_of.get((fa.program, v, d))
        if c is not None and c in fam and a.classes[c].size > 1:
            ps.sums.setdefault(c, []).append(op)
            ps.results.update(op.results)
            hit = True
    return hit


def _calls_of(fa: ProgramFacts, name: str) -> list[Op]:
    # Indexed once per program (ProgramFacts.calls): listing every op per call made the
    # predicated sums' walk quadratic (0.29 s of the llama step's 1.01 s shrink analysis).
    return fa.calls.get(name, [])


def outer_degree(fa: ProgramFacts, seeds: set[str]) -> tuple[int, int]:
    """(D, threshold): the degree of the entry's results in the `seeds` (the counts), and
    the largest constant a count-dependent value is compared or clipped with. D is
    UNBOUNDED when a count meets an op without a polynomial degree."""
    flow = _Flow(fa, seeds)
    return flow.result_degree(), flow.threshold


@dataclass
class _Flow:
    facts: ProgramFacts
    seeds: set[str]
    threshold: int = 0
    calls: dict[tuple[str, tuple[int, ...]], list[int]] = field(default_factory=dict)
    # RATIONAL: per value v, S(v), its divides by a count-dependent (affine) value with
    # multiplicity (a divide adds one; products, sums, selects add their operands'; a power
    # e multiplies by e), kept in the degree dict under _S + v. v Q_v is a polynomial of
    # degree <= D(v) + S(v) (docs/shrinking.md, rule k "rational degrees"); `poles` is the
    # results' largest S.
    poles: int = 0
    call_s: dict[tuple[str, tuple[int, ...]], list[int]] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] | None = None

    def data_scatter(self, op: Op) -> bool:
        """A scatter-add by data indices: a sum over the tokens (shrink/scatters.py)."""
        if self.shapes is None:
            self.shapes = scatter_shapes(self.facts.module)
        return data_scatter(op, self.shapes.__getitem__) is not None

    def result_degree(self) -> int:
        body = self.facts.module.main.body
        deg = self.block(body, {})
        self.poles = max((deg.get(_S + r, 0) for r in body.returns), default=0)
        return max((deg.get(r, 0) for r in body.returns), default=0)

    def block(self, block: Block, deg: dict[str, int]) -> dict[str, int]:
        for op in block.ops:
            if RATIONAL and _meets_fraction(op, deg):
                # a fraction of counts summed over elements, contracted, looped over or
                # passed to a function: its denominators multiply past this count: no bound
                for r in op.results:
                    deg[r] = UNBOUNDED
                continue
            ds = self.op(op, deg)
            ss = self.fractions(op, deg) if RATIONAL else [0] * len(op.results)
            for k, d in enumerate(ds):
                r = op.results[k]
                deg[r] = max(d, 1) if r in self.seeds else d
                if ss[k]:
                    deg[_S + r] = ss[k]
        return deg

    def fractions(self, op: Op, deg: dict[str, int]) -> list[int]:
        """S of op's results (see `poles`), from its operands' (op: not a region op, no
        call with a fraction passed in)."""
        n, out = op.name, len(op.results)
        ss = [deg.get(_S + o, 0) for o in op.operands]
        if n == "func.call":
            key = (op.attrs.get("callee", ""), tuple(deg.get(o, 0) for o in op.operands))
            return list(self.call_s.get(key, [0] * out))
        if op.regions:
            return [0] * out
        if n == "stablehlo.divide" and deg.get(op.operands[1], 0):
            return [ss[0] + ss[1] + 1] * out
        if n == "stablehlo.power" and ss[0]:
            e = self.constant(op.operands[1])
            if e is not None and float(e).is_integer() and 0 <= e <= MAX_EXPONENT:
                return [ss[0] * int(e) + ss[1]] * out
            return [UNBOUNDED] * out
        return [min(sum(ss), UNBOUNDED)] * out

    def op(self, op: Op, deg: dict[str, int]) -> list[int]:
        ds = [deg.get(o, 0) for o in op.operands]
        n, out = op.name, len(op.results)
        if n == "func.call":
            return self.call(op, ds)
        if n == "sdy.manual_computation":
            inner = self.block(op.regions[0], {**deg, **dict(zip(op.regions[0].args, ds))})
            return [inner.get(r, 0) for r in op.regions[0].returns]
        if op.regions:
            # Loops, branches, reductions: a count entering one (or made inside one) has
            # no degree here, except a sum's add body over counts (degree kept).
            inner = dict(deg)
            for region in op.regions:
                inner.update((arg, max(ds, default=0)) for arg in region.args)
                inner = self.block(region, inner)
            touched = max([inner.get(v, 0) for region in op.regions for v in region.returns]
                          + [inner.get(o, 0) for region in op.regions for x in region.walk() for o in x.operands]
                          + ds, default=0)
            if not touched:
                return [0] * out
            if _adds(op) and (n == "stablehlo.reduce" or n in DEGREE_PRESERVING):
                return [max(ds)] * out  # a sum (a reduce, a psum) of counts: their degree
            if n == "stablehlo.scatter" and not ds[1] and self.data_scatter(op):
                # A scatter-add of counts at ids no count reaches: for fixed ids a sum of its
                # updates into the operand. A count in the ids picks rows by its value: no degree.
                return [max(ds)] * out
            if ATOMS and _selects(op) and (n == "stablehlo.reduce" or n in DEGREE_PRESERVING):
                # A max/min reduction (a logsumexp's shift): piece by piece one of its
                # operands, as rule (e) reads max and min for Newton's degree.
                return [max(ds)] * out
            return [UNBOUNDED] * out
        if not any(ds):
            return [0] * out
        if n == "stablehlo.divide" and ds[1] and POLES:
            # 1 / q(k) is a polynomial in the counts only where q(k) != 0: a pole at a count
            # the original size reaches and the shrunk one does not is inf or NaN in one
            # twin there only (pole_nan). An affine q = a k + b of one count has its pole at
            # k0 = -b / a: the class keeps room for it, as for a piece split at k0; any
            # other denominator of counts has poles this does not locate: pinned.
            zero = self.pole(op.operands[1])
            if zero is None:
                return [UNBOUNDED] * out
            self.threshold = max(self.threshold, zero)
            return [min(sum(ds), UNBOUNDED)] * out
        if n in DEGREE_ADDING or n == "stablehlo.divide":
            return [min(sum(ds), UNBOUNDED)] * out
        if n == "stablehlo.select":
            return [min(ds[0] + max(ds[1:]), UNBOUNDED)] * out
        if n in DEGREE_PRESERVING:
            return [max(ds)] * out
        if n == "stablehlo.power":
            # x^e with a constant small integer e is x * ... * x to the verifier: degree e
            # times the base's (count_pow); any other power is an atom (below) or pins.
            e = self.constant(op.operands[1]) if not ds[1] else None
            if e is not None and float(e).is_integer() and 0 <= e <= MAX_EXPONENT:
                return [min(ds[0] * int(e), UNBOUNDED)] * out
            if not ATOMS or ds[1]:
                return [UNBOUNDED] * out
        if ATOMS and (n in TRANSCENDENTAL_OPS or n == "stablehlo.is_finite"):
            # An uninterpreted op is any function of its argument: exp(k) is a polynomial
            # of k's degree for some choice of it (docs/shrinking.md, rule k, atoms).
            return [max(ds)] * out
        if n in PIECEWISE or n == "stablehlo.compare":
            # max(k, 1), k > 0: pieces split at a constant; each piece needs its points.
            others = [o for o, d in zip(op.operands, ds) if not d]
            if len(others) == len(ds) - 1 and all(self.constant(o) is not None for o in others):
                cs = [self.constant(o) for o in others]
                splits = [_piece(c) for c in cs]
                # max(k - 20, 0) splits at k = 20, not at 0: the count's affine form moves the
                # split (count_offset).
                form = self.affine(next(o for o, d in zip(op.operands, ds) if d))
                if form is None and SPLITS:
                    # k k - 2000 > 0: the split is at a root of a polynomial (44.7) that the
                    # constant (0) does not locate: no bound, pinned (count_square).
                    return [UNBOUNDED] * out
                if form is not None and OFFSETS:
                    k0s = [(float(c) - form[1]) / form[0] for c in cs]  # type: ignore[arg-type]
                    splits += [_piece(k0) for k0 in k0s if math.isfinite(k0) and k0 > 0]
                self.threshold = max([self.threshold] + splits)
                return [max(ds)] * out
        if ATOMS and n in PIECEWISE:
            # max(a, b) of two count-dependent values: piece by piece one of them (rule e's
            # reading of max and min).
            return [max(ds)] * out
        return [UNBOUNDED] * out

    def call(self, op: Op, ds: list[int]) -> list[int]:
        fn = self.facts.module.funcs.get(op.attrs.get("callee", ""))
        if fn is None:
            return [UNBOUNDED if any(ds) else 0] * len(op.results)
        key = (fn.name, tuple(ds))
        if key not in self.calls:
            self.calls[key] = [UNBOUNDED] * len(op.results)  # no recursion (the reader refuses it)
            inner = self.block(fn.body, dict(zip(fn.body.args, ds)))
            self.calls[key] = [inner.get(r, 0) for r in fn.body.returns]
            self.call_s[key] = [inner.get(_S + r, 0) for r in fn.body.returns]
        return self.calls[key]

    def pole(self, v: str) -> int | None:
        """The count a denominator v vanishes at, as a number of positions the class must
        reach (0 when it vanishes at no positive count, or at 0, which every size reaches),
        or None when v is not an affine function a k + b (a != 0) of one count k."""
        form = self.affine(v)
        if form is None:
            return None
        a, b = form
        k0 = -b / a
        return int(math.floor(k0)) if math.isfinite(k0) and k0 > 0 else 0

    def affine(self, v: str, depth: int = 0) -> tuple[float, float] | None:
        """v as a k + b for one count k (a seed): through broadcasts, reshapes, converts,
        negations, and adds, subtracts, multiplies and divides with a constant."""
        if v in self.seeds:
            return 1.0, 0.0
        d = self.facts.defs.get(v)
        if d is None or depth > 64:
            return None
        op = d[0]
        n = op.name
        if n in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.convert"):
            return self.affine(op.operands[0], depth + 1)
        if n == "stablehlo.negate":
            f = self.affine(op.operands[0], depth + 1)
            return None if f is None else (-f[0], -f[1])
        if n not in ("stablehlo.add", "stablehlo.subtract", "stablehlo.multiply", "stablehlo.divide"):
            return None
        x, y = op.operands
        cx, cy = self.constant(x), self.constant(y)
        if (cx is None) == (cy is None):
            return None  # two count-dependent operands (or none: no count here)
        f = self.affine(y if cy is None else x, depth + 1)
        c = float(cx if cx is not None else cy)  # type: ignore[arg-type]
        if f is None or not math.isfinite(c):
            return None
        a, b = f
        if n == "stablehlo.add":
            out = (a, b + c)
        elif n == "stablehlo.subtract":
            out = (a, b - c) if cy is not None else (-a, c - b)
        elif n == "stablehlo.multiply":
            out = (a * c, b * c)
        elif cy is not None and c != 0:
            out = (a / c, b / c)
        else:
            return None  # c / (a k + b): no affine form
        return out if out[0] != 0 else None

    def constant(self, v: str) -> float | int | None:
        d = self.facts.defs.get(v)
        while d is not None and d[0].name == "stablehlo.broadcast_in_dim":
            d = self.facts.defs.get(d[0].operands[0])
        return splat(d[0]) if d is not None and d[0].name == "stablehlo.constant" else None


_S = "S:"  # the degree dict's key prefix for S (SSA names start with %)


def _meets_fraction(op: Op, deg: dict[str, int]) -> bool:
    """A value with count-dependent denominators (S > 0) entering a region op (a sum over
    elements, a loop), a call or a contraction."""
    if not (op.regions or op.name == "func.call" or op.name in DOTS or op.name == "stablehlo.convolution"):
        return False
    used = list(op.operands) + [o for region in op.regions for x in region.walk() for o in x.operands]
    return any(deg.get(_S + o, 0) for o in used)


def _selects(op: Op) -> bool:
    body = op.regions[0].ops if op.regions else []
    return len(body) == 1 and body[0].name in ("stablehlo.maximum", "stablehlo.minimum")


def _adds(op: Op) -> bool:
    body = op.regions[0].ops if op.regions else []
    return len(body) == 1 and body[0].name == "stablehlo.add"



def _piece(c: float | int | None) -> int:
    """The points a split at constant c takes below the piece above it (an infinite bound,
    max(k, -inf), splits nothing)."""
    return int(abs(c)) + 1 if c is not None and math.isfinite(c) else 0


__all__ = ["ATOMS", "MAX_EXPONENT", "MAX_PREDICATES", "OFFSETS", "POLES", "RATIONAL", "SPLITS",
           "count_bound", "count_bounds", "count_poles", "outer_degree",
           "zero_type_counts"]
