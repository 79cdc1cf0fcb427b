"""The hash-consed term store (tv_mlir/algebra/term.py), its z3 translation and its exact
evaluator: normal-form properties, and a differential test of random real expressions built
through the store and directly in z3."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest
import z3

from tv_mlir.algebra import term as term_mod
from tv_mlir.algebra.term import (
    BOOL,
    CMP,
    INT,
    POLY,
    PROD,
    REAL,
    Term,
    TermStore,
    bitwise,
)
from tv_mlir.algebra.term_eval import EvalError, evaluate
from tv_mlir.algebra.term_z3 import Z3Translator

NAMES = ("x", "y", "z")


# -- random differential test -------------------------------------------------------
@dataclass
class Tree:
    ours: Term
    direct: Any  # z3 expression built with z3's own operators
    divisors: list[Any]  # every divisor in `direct` (z3 leaves x/0 open, as we do)
    text: str


def random_tree(rng: random.Random, s: TermStore, depth: int) -> Tree:
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.6:
            name = rng.choice(NAMES)
            return Tree(s.var(name, REAL), z3.Real(name), [], name)
        c = Fraction(rng.randint(-4, 4), rng.randint(1, 3))
        return Tree(s.real(c), z3.RealVal(c), [], f"({c})")
    op = rng.choice(["add", "sub", "mul", "neg", "scale", "div", "ite", "floor"])
    a = random_tree(rng, s, depth - 1)
    if op == "neg":
        return Tree(s.neg(a.ours), -a.direct, a.divisors, f"-{a.text}")
    if op == "floor":
        return Tree(s.floor(a.ours), z3.ToReal(z3.ToInt(a.direct)), a.divisors, f"floor({a.text})")
    if op == "scale":
        k = Fraction(rng.choice([-3, -2, -1, 2, 3]), rng.randint(1, 3))
        return Tree(s.scale(a.ours, k), z3.RealVal(k) * a.direct, a.divisors, f"({k})*{a.text}")
    b = random_tree(rng, s, depth - 1)
    divs = a.divisors + b.divisors
    if op == "add":
        return Tree(s.add(a.ours, b.ours), a.direct + b.direct, divs, f"({a.text} + {b.text})")
    if op == "sub":
        return Tree(s.sub(a.ours, b.ours), a.direct - b.direct, divs, f"({a.text} - {b.text})")
    if op == "mul":
        return Tree(s.mul(a.ours, b.ours), a.direct * b.direct, divs, f"({a.text} * {b.text})")
    if op == "div":
        return Tree(s.div(a.ours, b.ours), a.direct / b.direct, [*divs, b.direct], f"({a.text} / {b.text})")
    # ite: a <cmp> b ? t : e
    t = random_tree(rng, s, depth - 1)
    e = random_tree(rng, s, depth - 1)
    cmp = rng.choice(["lt", "le", "eq"])
    cond_ours = getattr(s, cmp)(a.ours, b.ours)
    cond_direct = {"lt": a.direct < b.direct, "le": a.direct <= b.direct, "eq": a.direct == b.direct}[cmp]
    return Tree(s.ite(cond_ours, t.ours, e.ours), z3.If(cond_direct, t.direct, e.direct),
                divs + t.divisors + e.divisors, f"({a.text} {cmp} {b.text} ? {t.text} : {e.text})")


@dataclass
class Report:
    trees: int = 0
    decided: int = 0          # solver proved to_z3(ours) == direct
    undecided: int = 0        # solver gave unknown (a tree with division or floor)
    undecided_plain: int = 0  # ... on a tree with neither
    points: int = 0           # evaluate() compared with z3 at a point
    skipped_points: int = 0   # a divisor was 0 there
    mismatches: list[str] = field(default_factory=list)


def differential(seed: int, n: int, *, solve: bool = True, points: int = 4) -> Report:
    rng = random.Random(seed)
    s = TermStore()
    tr = Z3Translator(s)
    rep = Report()
    zvars = [z3.Real(nm) for nm in NAMES]
    for _ in range(n):
        tree = random_tree(rng, s, rng.randint(1, 4))
        rep.trees += 1
        if solve:
            solver = z3.Solver()
            solver.set("timeout", 2000)
            solver.add(*[d != 0 for d in tree.divisors])
            solver.add(z3.Not(tr.to_z3(tree.ours) == tree.direct))
            r = solver.check()
            if r == z3.unsat:
                rep.decided += 1
            elif r == z3.sat:
                rep.mismatches.append(f"solver: {tree.text}: {solver.model()}")
            elif tree.divisors or "floor" in tree.text:
                rep.undecided += 1
            else:
                rep.undecided_plain += 1
        for _ in range(points):
            env = {nm: Fraction(rng.randint(-6, 6), rng.randint(1, 4)) for nm in NAMES}
            sub = [(v, z3.RealVal(env[nm])) for v, nm in zip(zvars, NAMES)]
            if any(z3.is_true(z3.simplify(z3.substitute(d, *sub) == 0)) for d in tree.divisors):
                rep.skipped_points += 1
                continue
            want = z3.simplify(z3.substitute(tree.direct, *sub))
            if not z3.is_rational_value(want):
                rep.mismatches.append(f"z3 did not evaluate {tree.text} at {env}: {want}")
                continue
            try:
                got = evaluate(tree.ours, env)
            except ZeroDivisionError:
                rep.mismatches.append(f"evaluate divided by 0: {tree.text} at {env}")
                continue
            rep.points += 1
            if got != want.as_fraction():
                rep.mismatches.append(f"evaluate: {tree.text} at {env}: {got} != {want.as_fraction()}")
    return rep


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_differential_random_trees(seed: int) -> None:
    rep = differential(seed, 100)
    assert not rep.mismatches, rep.mismatches[:5]
    assert rep.undecided_plain == 0, rep
    assert rep.decided >= 0.9 * rep.trees, rep
    assert rep.points >= 2 * rep.trees, rep


def _cmp_scaled_by_signed_lead(self: TermStore, op: str, d: Term) -> Any:
    """The mutant: orders scaled by the leading coefficient itself, sign and all."""
    k = self.constant(d)
    if k is not None:
        return {"lt0": k < 0, "le0": k <= 0, "eq0": k == 0}[op]
    lead = self.terms_of(d)[-1][1]
    return self._mk(CMP, BOOL, (self.scale(d, Fraction(1) / lead),), op)


def test_differential_catches_a_sign_mutant(monkeypatch: pytest.MonkeyPatch) -> None:
    # The unpatched store passes on this seed, the mutant fails both halves of the test.
    assert not differential(1, 30).mismatches
    monkeypatch.setattr(TermStore, "_cmp", _cmp_scaled_by_signed_lead)
    assert differential(1, 30, solve=False).mismatches  # evaluate() vs z3 at points
    assert any(m.startswith("solver:") for m in differential(1, 30, points=0).mismatches)


# -- normal form ------------------------------------------------------------------
@pytest.fixture
def s() -> TermStore:
    return TermStore()


def test_polynomial_normal_form(s: TermStore) -> None:
    x, y, z = (s.var(n, REAL) for n in NAMES)
    two = s.real(2)
    assert s.mul(s.add(x, y), s.add(x, y)) is s.add(s.mul(x, x), s.mul(two, s.mul(x, y)), s.mul(y, y))
    assert s.div(s.mul(x, y), y) is not x  # y may be 0
    assert s.add(x, y) is s.add(y, x)
    assert s.mul(x, y) is s.mul(y, x)
    assert s.add(s.add(x, y), z) is s.add(x, s.add(y, z))
    assert s.mul(s.mul(x, y), z) is s.mul(x, s.mul(y, z))
    assert s.sub(x, x) is s.real(0)
    assert s.real(0) is not s.int_(0)


def test_comparison_normal_form(s: TermStore) -> None:
    x, y = s.var("x", REAL), s.var("y", REAL)
    assert s.lt(s.scale(x, 3), s.scale(y, 3)) is s.lt(x, y)
    assert s.le(s.scale(x, Fraction(1, 2)), s.scale(y, Fraction(1, 2))) is s.le(x, y)
    assert s.eq(s.scale(x, 2), s.scale(y, 2)) is s.eq(x, y)
    assert s.eq(x, y) is s.eq(y, x)
    assert s.lt(s.neg(x), s.neg(y)) is not s.lt(x, y)
    assert s.lt(s.neg(x), s.neg(y)) is s.lt(y, x)
    assert s.lt(x, x) is False and s.le(x, x) is True and s.eq(x, x) is True
    assert s.lt(s.real(1), s.real(2)) is True


def test_int_comparisons_keep_integer_coefficients(s: TermStore) -> None:
    i, j = s.var("i", INT), s.var("j", INT)
    assert s.lt(s.scale(i, 3), s.scale(j, 3)) is s.lt(i, j)
    assert s.lt(s.scale(i, -3), s.scale(j, -3)) is s.lt(j, i)
    assert s.eq(s.scale(i, 2), s.scale(j, 2)) is s.eq(i, j)
    assert s.eq(s.scale(i, -2), s.scale(j, 2)) is s.eq(s.scale(j, -1), i)
    c = s.eq(s.scale(i, 2), s.scale(j, 3))
    assert isinstance(c, Term)
    assert all(k.denominator == 1 for _, k in c.args[0].data)  # not j - 2/3 i
    Z3Translator(s).to_z3(c)  # an int polynomial with a fractional coefficient would raise
    # 2i == 3j at i := 3 is j == 2 (a coefficient 2/3 read back as an int was 0: j == 0)
    assert s.substitute(c, {i.id: s.int_(3)}) is s.eq(j, s.int_(2))
    assert s.substitute(c, {i.id: s.int_(3), j.id: s.int_(2)}) is True


def test_booleans_and_selects(s: TermStore) -> None:
    x, y = s.var("x", REAL), s.var("y", REAL)
    a, b = s.var("a", BOOL), s.lt(x, y)
    assert isinstance(a, Term) and isinstance(b, Term)
    assert s.and_(a, s.not_(a)) is False
    assert s.or_(a, s.not_(a)) is True
    assert s.and_(a, b) is s.and_(b, s.and_(a, True))
    assert s.not_(s.not_(b)) is b
    assert s.ite(True, x, y) is x and s.ite(False, x, y) is y
    assert s.ite(s.lt(s.real(0), s.real(1)), x, y) is x
    assert s.ite(s.not_(a), x, y) is s.ite(a, y, x)
    assert s.bite(a, True, False) is a


def test_substitute_folds_and_renormalises(s: TermStore) -> None:
    x, y = s.var("x", REAL), s.var("y", REAL)
    p = s.mul(s.add(x, s.real(1)), s.sub(x, s.real(1)))
    assert s.substitute(p, {x.id: s.real(3)}) is s.real(8)
    x_atom = s.atom_of(x)
    assert x_atom is not None
    assert s.substitute(p, {x_atom.id: s.real(3)}) is s.real(8)
    # atoms the mapping leaves alone stay in the rebuilt polynomial
    q = s.mul(s.add(x, s.real(1)), y)
    assert s.substitute(q, {x.id: s.real(3)}) is s.scale(y, 4)
    assert s.substitute(s.lt(x, y), {x.id: y}) is False
    assert s.substitute(s.ite(s.lt(x, y), x, y), {x.id: s.real(0), y.id: s.real(1)}) is s.real(0)


# -- integers ---------------------------------------------------------------------
def test_idiv_imod_fold_euclidean(s: TermStore) -> None:
    i, j = s.var("i", INT), s.var("j", INT)
    q_term, r_term = s.idiv(i, j), s.imod(i, j)
    for a in range(-7, 8):
        for b in range(-7, 8):
            if b == 0:
                continue
            want_q = z3.simplify(z3.IntVal(a) / z3.IntVal(b)).as_long()
            want_r = z3.simplify(z3.IntVal(a) % z3.IntVal(b)).as_long()
            assert s.constant(s.idiv(s.int_(a), s.int_(b))) == want_q, (a, b)
            assert s.constant(s.imod(s.int_(a), s.int_(b))) == want_r, (a, b)
            assert evaluate(q_term, {"i": a, "j": b}) == want_q, (a, b)
            assert evaluate(r_term, {"i": a, "j": b}) == want_r, (a, b)
    tr = Z3Translator(s)
    solver = z3.Solver()
    zi, zj = z3.Int("i"), z3.Int("j")
    solver.add(z3.Or(tr.to_z3(q_term) != zi / zj, tr.to_z3(r_term) != zi % zj))
    assert solver.check() == z3.unsat
    with pytest.raises(ZeroDivisionError):
        evaluate(q_term, {"i": 1, "j": 0})


@pytest.mark.parametrize("width", [4, 8])
@pytest.mark.parametrize("signed", [False, True])
def test_bitwise_matches_z3_bitvectors(s: TermStore, width: int, signed: bool) -> None:
    ops = {"and": lambda p, q: p & q, "or": lambda p, q: p | q, "xor": lambda p, q: p ^ q,
           "not": lambda p, q: ~p}
    values = range(-8, 16)  # every 4-bit pattern, read signed and unsigned
    for op, f in ops.items():
        for a in values:
            for b in values:
                bv = f(z3.BitVecVal(a, width), z3.BitVecVal(b, width))
                want = z3.simplify(z3.BV2Int(bv, is_signed=signed)).as_long()
                args = [a] if op == "not" else [a, b]
                assert bitwise(op, width, signed, args) == want, (op, a, b)
                assert s.constant(s.bits(op, width, signed, [s.int_(v) for v in args])) == want
    # the atom's translation: Int2BV / BV2Int of the same width and signedness
    i, j = s.var("i", INT), s.var("j", INT)
    tr = Z3Translator(s)
    zi, zj = z3.Int("i"), z3.Int("j")
    for op, f in ops.items():
        args = [i] if op == "not" else [i, j]
        direct = z3.BV2Int(f(z3.Int2BV(zi, width), z3.Int2BV(zj, width)), is_signed=signed)
        solver = z3.Solver()
        solver.add(tr.to_z3(s.bits(op, width, signed, args)) != direct)
        assert solver.check() == z3.unsat, op


# -- every kind, to_z3 against evaluate ------------------------------------------------
def test_every_kind_translates_as_it_evaluates(s: TermStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_mod, "EXPAND_LIMIT", 2)  # so a product stays a PROD atom
    x, y = s.var("x", REAL), s.var("y", REAL)
    i, j = s.var("i", INT), s.var("j", INT)
    a = s.var("a", BOOL)
    assert isinstance(a, Term)
    big = s.mul(s.add(x, y, s.real(1)), s.sub(x, y))
    prod_atom = s.atom_of(big)
    assert prod_atom is not None and prod_atom.kind == PROD
    r = s.add(
        big,
        s.inv(s.add(s.mul(x, x), s.real(1))),
        s.floor(s.scale(y, Fraction(1, 3))),
        s.to_real(s.add(s.idiv(i, s.int_(3)), s.imod(j, s.int_(-4)), s.bits("xor", 8, True, [i, j]))),
        s.ite(s.and_(a, s.le(x, y)), x, s.real(5)),
    )
    k = s.to_int(s.scale(x, Fraction(7, 2)))
    b = s.or_(s.bite(s.lt(s.mul(i, j), s.int_(0)), a, s.eq(x, y)), s.not_(s.lt(r, s.real(3))))
    tr = Z3Translator(s)
    rng = random.Random(0)
    for _ in range(40):
        env: dict[str, Fraction | int | bool] = {
            "x": Fraction(rng.randint(-9, 9), rng.randint(1, 3)), "y": Fraction(rng.randint(-9, 9), rng.randint(1, 3)),
            "i": rng.randint(-20, 20), "j": rng.randint(-20, 20), "a": rng.random() < 0.5}
        sub = [(z3.Real("x"), z3.RealVal(env["x"])), (z3.Real("y"), z3.RealVal(env["y"])),
               (z3.Int("i"), z3.IntVal(env["i"])), (z3.Int("j"), z3.IntVal(env["j"])),
               (z3.Bool("a"), z3.BoolVal(env["a"]))]
        for t in (r, k, b):
            want = z3.simplify(z3.substitute(tr.to_z3(t), *sub))
            got = evaluate(t, env)
            if t.sort == BOOL:
                assert got is z3.is_true(want), (t, env)
            elif t.sort == INT:
                assert got == want.as_long(), (t, env)
            else:
                assert got == want.as_fraction(), (t, env)


def test_uninterpreted_functions(s: TermStore) -> None:
    x, i = s.var("x", REAL), s.var("i", INT)
    f1, f2 = s.uf("f", [x]), s.uf("f", [s.add(x, s.real(1))])
    g = s.uf("f", [i], INT)  # same name, another signature: another z3 function
    p = s.uf("p", [x, i], BOOL)
    tr = Z3Translator(s)
    z1, z2, zg, zp = (tr.to_z3(t) for t in (f1, f2, g, p))
    assert z1.decl().eq(z2.decl())
    assert not z1.decl().eq(zg.decl())
    assert zg.sort().eq(z3.IntSort()) and zp.sort().eq(z3.BoolSort())
    assert zp.decl().arity() == 2
    assert tr.to_z3(f1) is z1  # cached
    with pytest.raises(EvalError):
        evaluate(f1, {"x": Fraction(1)})


def test_inverse_of_zero_and_lazy_selects(s: TermStore) -> None:
    x, y = s.var("x", REAL), s.var("y", REAL)
    q = s.div(x, y)
    with pytest.raises(ZeroDivisionError):
        evaluate(q, {"x": Fraction(1), "y": Fraction(0)})
    guarded = s.ite(s.eq(y, s.real(0)), s.real(0), q)
    assert evaluate(guarded, {"x": Fraction(1), "y": Fraction(0)}) == 0
    assert evaluate(guarded, {"x": Fraction(1), "y": Fraction(4)}) == Fraction(1, 4)
    with pytest.raises(EvalError):
        evaluate(q, {"x": Fraction(1)})


def test_deep_terms_need_no_recursion(s: TermStore) -> None:
    x = s.var("x", REAL)
    t = x
    n = 5000
    for _ in range(n):
        t = s.floor(s.add(t, s.real(1)))
    assert evaluate(t, {"x": Fraction(1, 2)}) == n
    z = Z3Translator(s).to_z3(t)
    assert z.sort().eq(z3.RealSort())
    assert len(list(s.walk([t]))) > 2 * n
    assert s.substitute(t, {x.id: s.real(0)}) is s.real(n)
    assert t.kind == POLY


def test_known_positive_by_construction() -> None:
    """Positivity that keeps IEEE classes finite: squares plus a positive constant (RMSNorm's
    mean(x^2) + eps), sums of exponentials; never a sum that can be 0 or negative."""
    from tv_mlir.algebra.fast import known_positive

    s = TermStore()
    x, y = s.var("x", REAL), s.var("y", REAL)
    eps = s.real(Fraction(1, 10**6))
    ex = s.uf("exponential", [x])
    assert known_positive(s.add(s.mul(x, x), s.mul(y, y), eps))
    assert known_positive(s.add(ex, s.scale(s.uf("exponential", [y]), 2)))
    assert known_positive(s.add(s.mul(s.mul(x, x), ex), ex))
    assert not known_positive(s.add(s.mul(x, x), s.mul(y, y)))  # 0 at x = y = 0
    assert not known_positive(s.add(s.mul(x, x), x, eps))  # negative at x = -1/2
    assert not known_positive(s.sub(ex, s.uf("exponential", [y])))
    assert not known_positive(s.mul(x, ex))
    # The sweep cuts a square apart: its cut point is known >= 0, the mean plus eps > 0.
    from tv_mlir.algebra.fast import NONNEGATIVE_CUT_PREFIX, known_sign
    from tv_mlir.algebra.terms import fresh_cut

    sq = fresh_cut(s.mul(x, x))
    assert known_sign(s.mul(x, x)) == 1 and str(s.atom_of(sq).data).startswith(NONNEGATIVE_CUT_PREFIX)
    assert known_positive(s.add(s.scale(sq, Fraction(1, 4)), eps))
    assert not known_positive(s.add(sq, s.scale(fresh_cut(s.mul(x, y)), 1), eps))


def test_known_sign_same_with_the_atom_sign_cache() -> None:
    """Leaf atoms' signs are cached per store (`_poly_sign`): asking at another depth, or
    again, or of another polynomial over the same atoms gives what a fresh store says."""
    from tv_mlir.algebra.fast import NONNEG_SIGN, POS_SIGN, known_sign

    def signs(s: TermStore) -> list[int]:
        x = s.var("x", REAL)
        p = s.var("cpos!p", REAL)
        ex = s.uf("exponential", [x])
        polys = [s.add(p, ex), s.add(s.mul(x, x), p), s.add(x, p), s.mul(x, ex), s.mul(x, x),
                 s.add(s.mul(p, x), ex)]
        return [known_sign(q, depth) for q in polys for depth in (8, 1, 8)]

    cached = TermStore()
    signs(cached)  # fills the cache
    assert signs(cached) == signs(TermStore())
    assert signs(TermStore())[::3] == [POS_SIGN, POS_SIGN, 0, 0, NONNEG_SIGN, 0]


def test_division_by_a_known_positive_is_finite_without_a_case_split() -> None:
    """A finite value over a finite known-positive one (a softmax's sum of exponentials) is
    FIN with value a / b, the class the general case split folds to; any other divisor
    keeps the split (a divisor that can be 0 gives a symbolic class)."""
    from tv_mlir.algebra.fast import FF, FIN, FastAlgebra

    alg = FastAlgebra()
    s = alg.store
    a = FF(s.var("a", REAL), FIN)
    pos = FF(s.add(s.uf("exponential", [s.var("x", REAL)]), s.real(1)), FIN)
    before = len(s.nodes)
    q = alg.f_div(a, pos)
    assert q.k == FIN and q.v is s.div(a.v, pos.v)
    assert not any(t.kind == CMP for t in s.nodes[before:])  # no zero or sign tests built
    maybe_zero = FF(s.var("b", REAL), FIN)
    assert not isinstance(alg.f_div(a, maybe_zero).k, int)


def test_a_bound_noted_after_a_comparison_still_decides_it() -> None:
    """An input's own range constraints are built before its bounds are noted: the same
    comparison asked afterwards must fold by the bounds, not come back from the memo as an
    open atom (flax's embedding lookup tests `0 <= id <= V - 1` of assumed ids; left open,
    the NaN fill made every later float's IEEE class symbolic)."""
    s = TermStore()
    x = s.var("ids", INT)
    before = [s.le(s.int_(0), x), s.le(x, s.int_(63)), s.lt(x, s.int_(0))]
    assert all(isinstance(c, Term) for c in before)
    assert x.leaf is not None
    s.bounds[x.leaf.id] = (0, 63)
    assert s.le(s.int_(0), x) is True and s.le(x, s.int_(63)) is True and s.lt(x, s.int_(0)) is False
    assert isinstance(s.le(s.int_(1), x), Term)  # not decided by [0, 63]


def test_inputs_with_bounds_decide_their_range_tests() -> None:
    """The own core's inputs with --assume bounds: in-range tests fold as built."""
    from tv_mlir.algebra.base import Kind
    from tv_mlir.algebra.fast import FastAlgebra

    alg = FastAlgebra()
    arr, _ = alg.inputs("ids", (2,), Kind.INT, False, 32, bounds=(0, 63))
    x = arr[0]
    assert alg._int_cmp("GE", x, 0) is True and alg._int_cmp("LE", x, 63) is True
    assert alg._int_cmp("LT", x, 63) is not True


def test_powers_and_roots_of_positives_are_positive() -> None:
    """b^e for a known-positive b (RoPE's 1 / 10000^(2i/d)), sqrt/rsqrt of a positive
    variance: known positive in both cores, so a division by one stays finite without a
    case split; a power of a base of unknown sign is not."""
    from tv_mlir.algebra import symbolic
    from tv_mlir.algebra.fast import FF, FIN, NONNEG_SIGN, FastAlgebra, known_positive, known_sign

    alg = FastAlgebra()
    s = alg.store
    x = s.var("x", REAL)
    e = s.var("e", REAL)
    base = s.add(s.mul(x, x), s.real(1))
    assert known_positive(s.uf("power", [s.real(10000), s.real(Fraction(1, 4))]))
    assert known_positive(s.uf("power", [base, e]))
    assert known_positive(s.uf("rsqrt", [base])) and known_positive(s.uf("sqrt", [base]))
    assert not known_positive(s.uf("power", [x, e]))
    assert known_sign(s.uf("sqrt", [x])) == NONNEG_SIGN and not known_positive(s.uf("sqrt", [x]))
    q = alg.f_div(FF(s.real(1), FIN), FF(s.uf("power", [s.real(10000), s.real(Fraction(1, 4))]), FIN))
    assert q.k == FIN
    assert not isinstance(alg.f_div(FF(s.real(1), FIN), FF(s.uf("power", [x, e]), FIN)).k, int)
    power = z3.Function("power", z3.RealSort(), z3.RealSort(), z3.RealSort())
    zx = z3.Real("x")
    assert symbolic.known_positive(power(z3.RealVal(10000), z3.RealVal("1/4")))
    assert not symbolic.known_positive(power(zx, z3.RealVal(2)))


def test_bias_correction_is_positive_once_the_step_count_is_at_least_one() -> None:
    """Adam's 1 - beta^t (optax: t = count + 1 converted to a float) is >= 1 - beta > 0 over
    the reals when t >= 1 (a bound on the count): a division by it stays finite without a
    case split. With t unbounded (t = 0 divides by 0) it is not known positive, and
    neither is beta^t - 1/2 or 1 - b^t for a base b >= 1."""
    from tv_mlir.algebra.fast import FF, FIN, FastAlgebra, known_positive

    alg = FastAlgebra()
    s = alg.store
    beta = s.real(Fraction(9, 10))
    count = s.var("count", INT)
    assert count.leaf is not None
    s.bounds[count.leaf.id] = (1, 2**31 - 1)
    t = s.to_real(count)
    correction = s.sub(s.real(1), s.uf("power", [beta, t]))
    assert known_positive(correction)
    assert alg.f_div(FF(s.var("m", REAL), FIN), FF(correction, FIN)).k == FIN
    free = s.to_real(s.var("free_count", INT))
    assert not known_positive(s.sub(s.real(1), s.uf("power", [beta, free])))
    assert not known_positive(s.sub(s.uf("power", [beta, t]), s.real(Fraction(1, 2))))
    assert not known_positive(s.sub(s.real(1), s.uf("power", [s.real(2), t])))
    assert not known_positive(s.sub(s.real(1), s.uf("power", [s.real(1), t])))


def test_bias_correction_over_a_cut_power_is_positive() -> None:
    """The sweep cuts b^t into a variable of its own before 1 - b^t is formed: the cut keeps
    its definition's bounds (terms.record_range), so 1 - (cut) is still known positive; a
    cut of a long or unbounded definition keeps none."""
    from tv_mlir.algebra.fast import known_positive
    from tv_mlir.algebra.terms import fresh_cut, record_range

    s = TermStore()
    count = s.var("count", INT)
    assert count.leaf is not None
    s.bounds[count.leaf.id] = (1, 2**31 - 1)
    power = s.uf("power", [s.real(Fraction(9, 10)), s.to_real(count)])
    cut = fresh_cut(power)
    record_range(cut, power, lambda v: None)
    assert known_positive(s.sub(s.real(1), cut))
    free = s.uf("power", [s.real(Fraction(9, 10)), s.to_real(s.var("n", INT))])
    cut_free = fresh_cut(free)
    record_range(cut_free, free, lambda v: None)
    assert not known_positive(s.sub(s.real(1), cut_free))
