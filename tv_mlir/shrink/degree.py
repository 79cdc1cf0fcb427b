"""Summand degrees for shape shrinking: a class summed over must keep at least as many
elements as the degree, in the elements at one position of the class, of what is summed
(Newton's identities; docs/shrinking.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

from tv_mlir.ir import Block, ConvDims, Module, Op
from tv_mlir.semantics.ops import BRANCHES, DEGREE_ADDING, DEGREE_PRESERVING, DOTS
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts, splat
from tv_mlir.shrink.scatters import data_scatter

UNBOUNDED = 1 << 20
# Rule (l), per-trip loop degrees: a `while` at the top level of the program (not nested in
# another loop, branch or reduction; `inductive_loops`) has its carried values counted as
# fresh inputs (degree 1 along a family they lie on) in its body and condition, and its
# results as fresh inputs for what reads them, instead of the degree composed across its
# trips. Sound only for a verdict whose proof takes every such loop by induction, each
# loop one stage (its carried values and results cut variables): api.verify checks that
# (stages/loops.rests_on_induction) and otherwise shrinks again with the composed degrees
# (docs/shrinking.md, rule l; docs/stages.md). A switch so the tests can show what it does.
PER_TRIP = True
# The degree of a carried value in one trip: a free input's (a mutation test sets it to 0,
# which treats the carried values as constants along the class and hides a Newton pair in
# the body, testdata/loops).
CARRIED_DEGREE = 1
# Ops whose result is, piece by piece, one of their operands (or its negation): their
# degree is the largest operand degree, not an atom's 1. select is the same with its
# predicate's degree added (below).
PIECEWISE = frozenset({"stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp", "stablehlo.abs"})
# `lax.square` (flax's RMSNorm, LayerNorm's variance): the verifier computes x * x
# (semantics/elementwise.py), a product, not an atom; one operand, so it is not in
# DEGREE_ADDING (whose degree is the operands' sum) but read here as the product it is
# (docs/shrinking.md, "Squares"). SQUARE_DEGREE off: an atom of degree 1, as it was (the
# square_degree hole, hidden until then by SQUARE_TERMS' over-reading below).
SQUARE_DEGREE = True
# A square's constant term is its operand's (`_Terms`). Off: "may", as constant_terms.py
# reads every op it does not list (the 8B forward's vocabulary kept 160 words so).
SQUARE_TERMS = True
SQUARE = "chlo.square"


@dataclass
class Degrees:
    """Degree, in the elements at one position of a class family, of every value: the
    bound a reduction over that family needs. Transcendental and comparison results are
    atoms (an uninterpreted function application is one variable); loop-carried values
    are iterated to a fixpoint, or unbounded."""

    facts: ProgramFacts
    analysis: DimAnalysis
    family: set[int]
    bindings: dict[str, int] = field(default_factory=dict)  # a called function's arguments
    # A called function's degrees per argument degrees, shared by every Degrees of a family
    # (a function called at several depths is not one summary, but each is made once).
    calls: dict[tuple[str, tuple[int, ...]], Degrees] = field(default_factory=dict)
    memo: dict[str, int] = field(default_factory=dict)
    # ids of the while ops whose degree is taken per trip (rule l): the program's top-level
    # loops when the rule is on, else none.
    inductive: frozenset[int] = frozenset()

    def warm(self, block: Block) -> None:
        """Degrees of the block's values in program order: each finds its operands' known,
        so asking for a value at the end of a 10,000-op chain recurses one level, not
        10,000 (a RecursionError)."""
        for op in block.ops:
            # A region's values before its op's results (a manual computation's results
            # are its body's returns); a while loop resolves its own body from outside.
            if op.name != "stablehlo.while":
                for region in op.regions:
                    self.warm(region)
            for r in op.results:
                self.of(r)

    def has(self, value: str) -> bool:
        key = (self.facts.program, value)
        if key not in self.analysis.types:
            return False
        return any(c in self.family for c in self.analysis.classes_of(*key))

    def of(self, value: str) -> int:
        if value in self.memo:
            return self.memo[value]
        if not self.has(value):
            return 0
        self.memo[value] = UNBOUNDED  # cycles (loops) are unbounded unless resolved below
        d = self._compute(value)
        self.memo[value] = min(d, UNBOUNDED)
        return self.memo[value]

    def _compute(self, value: str) -> int:  # noqa: C901 - one dispatch over op kinds
        f = self.facts
        if value in self.bindings:
            return self.bindings[value]
        if value in f.entry_args:
            return 1
        if value in f.region_arg:
            owner, ri, k = f.region_arg[value]
            if owner.name == "sdy.manual_computation":
                return self.of(owner.operands[k])
            if owner.name == "stablehlo.while":
                self._loop(owner)
                return self.memo[value]
            return 1 if owner.name == "stablehlo.reduce" else UNBOUNDED
        if value in f.func_of_arg:
            return max((self.of(call.operands[k]) for call, k in f.callers.get(value, [])), default=1)
        if value not in f.defs:
            return UNBOUNDED
        op, idx = f.defs[value]
        ds = [self.of(o) for o in op.operands]
        n = op.name
        if n == "stablehlo.constant" or n == "stablehlo.iota":
            return 0 if n == "stablehlo.constant" else 1
        if n in DEGREE_ADDING:
            return sum(ds)
        if n == SQUARE and SQUARE_DEGREE:
            return 2 * ds[0]
        if n == "stablehlo.select":
            return ds[0] + max(ds[1:])
        if n == "stablehlo.divide":
            return ds[0] + (1 if ds[1] else 0)
        if n == "stablehlo.power":
            # A constant exponent: the semantics multiplies integer ones up to 64 out, so
            # x^e has e times x's degree (at least 8, the bound other exponents keep).
            e = _exponent(f, op.operands[1])
            return UNBOUNDED if ds[1] else ds[0] * max(8, e)
        if n == "stablehlo.scatter" and all((f.program, v) in self.analysis.types for v in op.operands) \
                and (reading := data_scatter(op, self._shape)) is not None:
            # Z + onehot(I)^T U: the one-hot predicate [I_t = v] is an atom, of degree 1
            # where it varies along the family (the addressed dim, or indices along it).
            along = ds[1] > 0 or self.analysis.class_of[(f.program, op.operands[0], reading.addressed)] in self.family
            return max(ds[0], ds[2] + (1 if along else 0))
        if n in ("stablehlo.reduce", "stablehlo.reduce_window"):
            d = max(ds[:len(ds) // 2], default=0)
            # A product over n positions has n times its operand's degree: n is a size, not
            # a bounded degree (the reduced class itself is pinned, see plan.py).
            body = op.regions[0].ops if op.regions else []
            if d and len(body) == 1 and body[0].name == "stablehlo.multiply":
                return UNBOUNDED
            return d
        if n == "func.call":
            sub = self.callee(op, ds)
            return sub.of(sub.facts.module.funcs[op.attrs["callee"]].body.returns[idx]) if sub else UNBOUNDED
        if n == "sdy.manual_computation":
            return self.of(op.regions[0].returns[idx])
        if n == "stablehlo.while":
            return self.of(op.regions[1].args[idx])
        if n in BRANCHES:
            return max(self.of(r.returns[idx]) for r in op.regions)
        if n in DEGREE_PRESERVING:
            return max(ds, default=0)
        if n in PIECEWISE:
            # max(x^3, -inf) is x^3 where it picks x^3: a piece of the result is one of
            # the operands, so the result has their degree (an atom would count 1 and
            # let Newton's pair hide inside a max, issue 12 mechanism 5).
            return max(ds, default=0)
        # Everything else (exp, max, compare, ...) is an atom of its arguments.
        return 1 if any(ds) else 0

    def _shape(self, value: str) -> tuple[int, ...]:
        return self.analysis.types[(self.facts.program, value)].shape

    def callee(self, op: Op, arg_degrees: list[int]) -> Degrees | None:
        """The called function's degrees with its arguments bound to this call's (calls
        are evaluated per distinct argument degrees, so a function called at several
        depths is not one summary)."""
        fn = self.facts.module.funcs.get(op.attrs.get("callee", ""))
        if fn is None:
            return None
        key = (fn.name, tuple(arg_degrees))
        sub = self.calls.get(key)
        if sub is None:
            sub = self.calls[key] = Degrees(self.facts, self.analysis, self.family,
                                            dict(zip(fn.body.args, arg_degrees)), self.calls,
                                            inductive=self.inductive)
            sub.warm(fn.body)
        return sub

    def _loop(self, op: Op) -> None:
        """Degrees of a while's carried values: iterate the body to a fixpoint (a few
        rounds), or as many rounds as the loop runs when that is a constant count (a
        pipeline's `i < 3` over stages: each stage's matmul adds a degree, and through
        a relu that counts its operand's degree there is no fixpoint), else unbounded."""
        cond, body = op.regions
        inner = self._defined_in(body) + self._defined_in(cond)
        if id(op) in self.inductive:
            # Rule l: one trip from free carried values. The initial operands' degrees do
            # not enter (the chain proves them before the loop stage), and the results are
            # the loop stage's outputs, free inputs of the stages that read them.
            for r in inner:
                self.memo.pop(r, None)
            for region in (cond, body):
                for a in region.args:
                    self.memo[a] = CARRIED_DEGREE if self.has(a) else 0
            self.warm(body)
            return
        degs = [self.of(o) for o in op.operands]
        trips = _trip_count(self.facts, op)
        rounds = trips if trips is not None and trips <= _MAX_TRIPS else 5

        def enter(ds: list[int]) -> None:
            for r in inner:
                self.memo.pop(r, None)
            for region in (cond, body):
                for a, d in zip(region.args, ds):
                    self.memo[a] = d
            self.warm(body)

        for _ in range(rounds):
            enter(degs)
            nxt = [max(d, self.of(ret)) for d, ret in zip(degs, body.returns)]
            if nxt == degs:
                return
            degs = nxt
        if trips is not None and trips <= _MAX_TRIPS:
            enter(degs)  # the values after the last trip; the body's own one more (an over-count)
            return
        for r in inner:
            self.memo.pop(r, None)
        for region in (cond, body):
            for a in region.args:
                self.memo[a] = UNBOUNDED

    @staticmethod
    def _defined_in(block: Block) -> list[str]:
        return [r for op in block.walk() for r in op.results] + \
            [a for op in block.walk() for region in op.regions for a in region.args]


def _warm_order(block: Block, out: dict[str, int] | None = None) -> dict[str, int]:
    """Value -> its place in the order `Degrees.warm` asks for values (regions before
    their op's results, but a while loop's results before its body)."""
    out = {} if out is None else out
    for op in block.ops:
        if op.name == "stablehlo.while":
            out.update((r, len(out)) for r in op.results if r not in out)
        for region in op.regions:
            _warm_order(region, out)
        out.update((r, len(out)) for r in op.results if r not in out)
    return out


def inductive_loops(module: Module) -> frozenset[int]:
    """ids of the while ops rule l takes per trip: those the staged proof can make a loop
    stage of, one loop per stage. They are the loops in the entry's own block, in the
    blocks of manual computations there, and in functions called once from such a place
    (the pass pipeline inlines those into the entry). A loop inside another loop, a branch,
    a reduction or a function called twice is not: the stage that holds it unrolls it."""
    calls: dict[str, int] = {}
    for fn in module.funcs.values():
        for op in fn.body.walk():
            if op.name == "func.call":
                calls[op.attrs.get("callee", "")] = calls.get(op.attrs.get("callee", ""), 0) + 1
    out: set[int] = set()

    def visit(block: Block, depth: int) -> None:
        for op in block.ops:
            if op.name == "stablehlo.while":
                out.add(id(op))
            elif op.name == "sdy.manual_computation":
                for region in op.regions:
                    visit(region, depth)
            elif op.name == "func.call" and depth < 16:
                fn = module.funcs.get(op.attrs.get("callee", ""))
                if fn is not None and calls.get(fn.name) == 1:
                    visit(fn.body, depth + 1)

    visit(module.main.body, 0)
    return frozenset(out)


_MAX_TRIPS = 64  # loops with a constant trip count up to this are unrolled for degrees


def _trip_count(f: ProgramFacts, op: Op) -> int | None:
    """The trip count of `while (i < N) { i = i + 1 }` with constant start and N."""
    cond, body = op.regions
    if len(cond.returns) != 1 or cond.returns[0] not in f.defs:
        return None
    cmp, _ = f.defs[cond.returns[0]]
    if cmp.name != "stablehlo.compare" or cmp.attrs.get("comparison_direction") != "LT":
        return None
    lhs, rhs = cmp.operands
    if lhs not in cond.args:
        return None
    k = cond.args.index(lhs)
    limit, start = _const(f, rhs), _const(f, op.operands[k])
    step = f.defs.get(body.returns[k])
    if limit is None or start is None or step is None or step[0].name != "stablehlo.add":
        return None
    a, b = step[0].operands
    if not ((a == body.args[k] and _const(f, b) == 1) or (b == body.args[k] and _const(f, a) == 1)):
        return None
    return max(0, int(limit) - int(start))


def _exponent(f: ProgramFacts, value: str) -> int:
    """A power's constant exponent (through broadcasts) when it is an integer up to 64, the
    ones the semantics multiplies out; 0 otherwise."""
    d = f.defs.get(value)
    while d is not None and d[0].name == "stablehlo.broadcast_in_dim":
        d = f.defs.get(d[0].operands[0])
    e = splat(d[0]) if d is not None and d[0].name == "stablehlo.constant" else None
    return int(abs(e)) if e is not None and float(e).is_integer() and abs(e) <= 64 else 0


def _const(f: ProgramFacts, value: str) -> float | int | None:
    d = f.defs.get(value)
    return splat(d[0]) if d is not None and d[0].name == "stablehlo.constant" else None


def summand_degrees(facts: ProgramFacts, analysis: DimAnalysis, families: dict[int, set[int]],
                    counted: set[int] | None = None, per_trip: bool = False) -> dict[int, int]:
    """class -> the largest summand degree of any sum over it in this program. Functions
    are entered at their call sites, with the call's argument degrees. `counted` receives
    the classes with a summand of degree 0 (the same value at every position): there the
    class's size itself becomes a factor of the result (n * c). `per_trip`: the top-level
    loops' degrees per trip (rule l, `PER_TRIP`), else composed across their trips."""
    counted = counted if counted is not None else set()
    inductive = inductive_loops(facts.module) if per_trip else frozenset()
    out: dict[int, int] = {}
    roots: dict[frozenset[int], Degrees] = {}

    order = _warm_order(facts.module.main.body)
    fn_classes: dict[str, frozenset[int]] = {}

    def classes_in(name: str) -> frozenset[int]:
        """The classes of a function's values and of the functions it calls."""
        if name not in fn_classes:
            fn_classes[name] = frozenset()  # no recursion (the reader refuses it)
            fn = facts.module.funcs[name]
            found: set[int] = set()
            values = list(fn.body.args)
            for op in fn.body.walk():
                values.extend(op.results)
                for region in op.regions:
                    values.extend(region.args)
                if op.name == "func.call" and op.attrs.get("callee", "") in facts.module.funcs:
                    found |= classes_in(op.attrs["callee"])
            for v in values:
                if (facts.program, v) in analysis.types:
                    found.update(analysis.classes_of(facts.program, v))
            fn_classes[name] = frozenset(found)
        return fn_classes[name]

    def root(c: int) -> Degrees:
        key = frozenset(families[c])
        if key not in roots:
            d = roots[key] = Degrees(facts, analysis, set(key), inductive=inductive)
            # Only the values along the family can have a degree: those, in the order
            # `warm` takes (a deep program has thousands of families, each with few values).
            values = {v for k in key for p, v, _ in analysis.classes[k].members if p == facts.program and v in order}
            for v in sorted(values, key=order.__getitem__):
                d.of(v)
        return roots[key]

    def visit(block: Block, context: dict[frozenset[int], Degrees], depth: int) -> None:
        def degrees(c: int) -> Degrees:
            return context.get(frozenset(families[c])) or root(c)

        for op in block.walk():
            if op.name in DOTS:
                lhs, rhs = op.operands
                dn = op.attrs.get("dot_dimension_numbers")
                lt = analysis.types[(facts.program, lhs)]
                for a in (list(dn.lhs_contracting) if dn else [len(lt.shape) - 1]):
                    c = analysis.class_of[(facts.program, lhs, a)]
                    d = degrees(c)
                    deg = d.of(lhs) + d.of(rhs)
                    out[c] = max(out.get(c, 0), deg)
                    if deg == 0 or (constant_part(d, lhs) and constant_part(d, rhs)):
                        counted.add(c)
            elif op.name == "stablehlo.convolution" and isinstance(op.attrs.get("dimension_numbers"), ConvDims):
                # Input features are contracted as a dot_general's contracting dims are.
                lhs, rhs = op.operands[:2]
                c = analysis.class_of[(facts.program, lhs, op.attrs["dimension_numbers"].input_feature)]
                d = degrees(c)
                deg = d.of(lhs) + d.of(rhs)
                out[c] = max(out.get(c, 0), deg)
                if deg == 0:
                    counted.add(c)
            elif op.name == "stablehlo.scatter" and all((facts.program, v) in analysis.types for v in op.operands) \
                    and (reading := data_scatter(op, lambda v: analysis.types[(facts.program, v)].shape)) is not None:
                # The one-hot contraction over the tokens: summand [I_t = v] U_t, the
                # predicate an atom of degree 1 (as a compare of position-dependent data).
                updates = op.operands[2]
                for _, du in reading.summed:
                    c = analysis.class_of[(facts.program, updates, du)]
                    deg = degrees(c).of(updates) + 1
                    out[c] = max(out.get(c, 0), deg)
            elif op.name == "stablehlo.reduce":
                body = op.regions[0].ops
                if len(body) != 1 or body[0].name != "stablehlo.add":
                    continue
                for v in op.operands[:len(op.operands) // 2]:
                    for a in op.attrs["dimensions"]:
                        c = analysis.class_of[(facts.program, v, a)]
                        deg = degrees(c).of(v)
                        out[c] = max(out.get(c, 0), deg)
                        if deg == 0 or constant_part(degrees(c), v):
                            counted.add(c)
            elif op.name == "func.call" and depth < 16:
                fn = facts.module.funcs.get(op.attrs.get("callee", ""))
                if fn is None:
                    continue
                inner = {}
                within = classes_in(fn.name)
                for key in list(roots):
                    if key.isdisjoint(within):
                        continue  # nothing in the callee lies along this family: all degree 0
                    d = context.get(key) or roots[key]
                    sub = d.callee(op, [d.of(o) for o in op.operands])
                    if sub is not None:
                        inner[key] = sub
                visit(fn.body, inner, depth + 1)

    terms: dict[int, constant_terms.ConstantTerms] = {}

    def constant_part(d: Degrees, v: str) -> bool:
        # Newton's argument needs summands with no constant term (constant_terms.py).
        if not constant_terms.CONSTANT_TERMS or not d.has(v):
            return False
        return terms.setdefault(id(d), _Terms(d)).may_have_constant(v)

    for c in range(len(analysis.classes)):
        if analysis.classes[c].reduced_by:
            root(c)
    visit(facts.module.main.body, {}, 0)
    return out


from tv_mlir.shrink import constant_terms  # noqa: E402 - it reads Degrees


class _Terms(constant_terms.ConstantTerms):
    """Constant terms with a square read as the product x * x: it has a constant term
    exactly where x has one ((x + 1)^2 = x^2 + 2x + 1; x^2 has none), as a product of x
    with itself has in ConstantTerms' own reading of products. Otherwise a square falls
    to ConstantTerms' "anything else may" and every RMSNorm's sum of squares made its
    hidden class counted: a size value rule a then ordered with the vocabulary's, and the
    8B forward's vocabulary kept 160 words (docs/jax.md, stop 42). Here rather than in
    constant_terms.py (another room's file), next to the degree of a square it goes with."""

    def _compute(self, value: str) -> bool:
        d = self.degrees.facts.defs.get(value)
        if SQUARE_TERMS and d is not None and d[0].name == SQUARE and self.degrees.has(value) \
                and self.degrees.of(value) > 0:
            return self._get(d[0].operands[0])
        return super()._compute(value)


__all__ = ['PER_TRIP', 'PIECEWISE', 'SQUARE_DEGREE', 'SQUARE_TERMS', 'UNBOUNDED', 'Degrees', 'inductive_loops',
           'summand_degrees']
