"""`TermStore.substitute` (tv_mlir/algebra/term.py) against a naive reference: the plain
bottom-up rebuild of every node through the public constructors, one interned product per
factor, as substitution was first written. The fast one skips subterms that cannot mention
a key (older than every key, or missing every key's bloom-filter bit) and rebuilds
polynomials in one dict; since terms are hash-consed and in normal form, both must return
the very same object on random terms, random mappings and chains of unfoldings."""
from __future__ import annotations

import random
from typing import Any

import pytest

from tv_mlir.algebra import term as term_mod
from tv_mlir.algebra.term import (
    AND,
    BITE,
    BITS,
    BUF,
    BVAR,
    CMP,
    FLOOR,
    IDIV,
    IMOD,
    INT,
    INV,
    ITE,
    NOT,
    OR,
    POLY,
    PROD,
    REAL,
    TO_INT,
    TO_REAL,
    UF,
    Term,
    TermStore,
)

Bool = bool | Term


# -- the reference ----------------------------------------------------------------
def reference_substitute(s: TermStore, t: Bool, mapping: dict[int, Any]) -> Bool:
    """Every node rebuilt, children first; a variable's polynomial as a key stands for
    its atom."""
    if isinstance(t, bool):
        return t
    for key in list(mapping):
        atom = s.atom_of(s.nodes[key])
        if atom is not None and atom.id not in mapping:
            mapping = {**mapping, atom.id: mapping[key]}
    memo: dict[int, Any] = {}
    for node in s.walk([t]):
        memo[node.id] = mapping[node.id] if node.id in mapping else _reference_rebuild(s, node, memo)
    return memo[t.id]


def _reference_rebuild(s: TermStore, t: Term, memo: dict[int, Any]) -> Any:
    args = [memo[a.id] for a in t.args]
    if all(x is a for x, a in zip(args, t.args)):
        return t
    k = t.kind
    if k == POLY:
        parts = []
        for m, c in t.data:
            term = s.polynomial(t.sort, {(): c})
            for atom_id, e in m:
                factor = memo[atom_id]
                if factor.kind != POLY:
                    factor = s.polynomial(factor.sort, {((factor.id, 1),): 1})
                for _ in range(e):
                    term = s.mul(term, factor)
            parts.append(term)
        return s.sum(parts, t.sort)
    one = {ITE: s.ite, INV: lambda x: s.inv(x), FLOOR: s.floor, TO_REAL: s.to_real, TO_INT: s.to_int,
           IDIV: s.idiv, IMOD: s.imod, PROD: s.mul, AND: s.and_, OR: s.or_, NOT: s.not_, BITE: s.bite}
    if k in one:
        return one[k](*args)  # type: ignore[operator]
    if k == UF:
        return s.uf(t.data, args, t.sort)
    if k == BUF:
        return s.uf(t.data, args, "bool")
    if k == BITS:
        return s.bits(t.data[0], t.data[1], t.data[2], args)
    if k == CMP:
        return s._cmp(t.data, args[0])
    raise AssertionError(k)


# -- random terms -----------------------------------------------------------------
class Gen:
    """Random real, int and Boolean terms over a pool of variables that grows as terms are
    made, so that later variables are newer than earlier terms (as cut variables are)."""

    def __init__(self, s: TermStore, rng: random.Random) -> None:
        self.s, self.rng = s, rng
        self.reals = [s.var(f"x{i}", REAL) for i in range(3)]
        self.ints = [s.var(f"n{i}", INT) for i in range(3)]
        self.bools: list[Term] = [s.var(f"b{i}", "bool") for i in range(2)]  # type: ignore[misc]

    def new_vars(self) -> None:
        s = self.s
        self.reals.append(s.fresh("c", REAL))
        self.ints.append(s.fresh("k", INT))
        self.bools.append(s.fresh("p", "bool"))  # type: ignore[arg-type]

    def real(self, depth: int) -> Term:
        s, r = self.s, self.rng
        if depth <= 0 or r.random() < 0.2:
            return r.choice(self.reals) if r.random() < 0.8 else s.real(r.randint(-3, 3))
        op = r.randrange(9)
        a = self.real(depth - 1)
        if op == 0:
            return s.add(a, self.real(depth - 1))
        if op == 1:
            return s.mul(a, self.real(depth - 1))
        if op == 2:
            return s.scale(a, r.choice([2, -1, 0]))
        if op == 3:
            return s.ite(self.boolean(depth - 1), a, self.real(depth - 1))
        if op == 4:
            return s.inv(a)
        if op == 5:
            return s.floor(a)
        if op == 6:
            return s.to_real(self.int_(depth - 1))
        if op == 7:
            return s.uf("f", [a, self.real(depth - 1)])
        return s.sub(s.mul(a, a), s.real(1))

    def int_(self, depth: int) -> Term:
        s, r = self.s, self.rng
        if depth <= 0 or r.random() < 0.25:
            return r.choice(self.ints) if r.random() < 0.8 else s.int_(r.randint(-4, 4))
        op = r.randrange(6)
        a = self.int_(depth - 1)
        if op == 0:
            return s.add(a, self.int_(depth - 1))
        if op == 1:
            return s.mul(a, self.int_(depth - 1))
        if op == 2:
            return s.idiv(a, self.int_(depth - 1))
        if op == 3:
            return s.imod(a, s.int_(r.randint(1, 5)))
        if op == 4:
            return s.bits(r.choice(["and", "or", "xor"]), 8, True, [a, self.int_(depth - 1)])
        return s.to_int(self.real(depth - 1))

    def boolean(self, depth: int) -> Bool:
        s, r = self.s, self.rng
        if depth <= 0 or r.random() < 0.2:
            return r.choice(self.bools)
        op = r.randrange(8)
        if op == 0:
            return s.lt(self.real(depth - 1), self.real(depth - 1))
        if op == 1:
            return s.le(self.int_(depth - 1), self.int_(depth - 1))
        if op == 2:
            return s.eq(self.real(depth - 1), self.real(depth - 1))
        if op == 3:
            return s.and_(self.boolean(depth - 1), self.boolean(depth - 1))
        if op == 4:
            return s.or_(self.boolean(depth - 1), self.boolean(depth - 1))
        if op == 5:
            return s.not_(self.boolean(depth - 1))
        if op == 6:
            return s.bite(self.boolean(depth - 1), self.boolean(depth - 1), self.boolean(depth - 1))
        return s.uf("g", [self.real(depth - 1)], "bool")

    def any_(self, depth: int) -> Bool:
        return self.rng.choice([self.real, self.int_, self.boolean])(depth)

    def value_for(self, v: Term, depth: int) -> Bool:
        """A replacement of v's sort: a constant, another variable or a term."""
        sort = v.sort
        r = self.rng
        if sort == "bool":
            return r.choice([True, False]) if r.random() < 0.2 else self.boolean(depth)
        if r.random() < 0.25:
            return self.s.real(r.randint(-2, 2)) if sort == REAL else self.s.int_(r.randint(-2, 2))
        return self.real(depth) if sort == REAL else self.int_(depth)


def _mapping(g: Gen, rng: random.Random, depth: int) -> dict[int, Any]:
    """Some variables, given by their polynomial (as cut variables are) or their atom."""
    pool = g.reals + g.ints + g.bools
    out: dict[int, Any] = {}
    for v in rng.sample(pool, rng.randint(1, 4)):
        key = v.id if v.kind == BVAR or rng.random() < 0.5 else v.leaf.id  # type: ignore[union-attr]
        out[key] = g.value_for(v, depth)
    return out


def _check(s: TermStore, t: Bool, mapping: dict[int, Any]) -> Bool:
    fast = s.substitute(t, dict(mapping))
    ref = reference_substitute(s, t, dict(mapping))
    assert fast is ref, (t, mapping, fast, ref)
    return fast


# -- tests --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(40))
def test_random_substitutions_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    s = TermStore()
    g = Gen(s, rng)
    for _ in range(25):
        if rng.random() < 0.3:
            g.new_vars()
        t = g.any_(rng.randint(1, 5))
        _check(s, t, _mapping(g, rng, rng.randint(0, 3)))


@pytest.mark.parametrize("seed", range(15))
def test_unfolding_chains_match_the_reference(seed: int) -> None:
    """As a local proof unfolds: each newer variable defined over older ones, the newest
    substituted first, batch after batch into the result of the previous batch."""
    rng = random.Random(1000 + seed)
    s = TermStore()
    g = Gen(s, rng)
    defs: list[tuple[Term, Term]] = []
    for _ in range(12):
        d = g.real(rng.randint(1, 3))
        v = s.fresh("c", REAL)
        g.reals.append(v)
        defs.append((v, d))
    t: Bool = s.add(*(v for v, _ in defs[-4:]))
    while defs:
        batch = [defs.pop() for _ in range(min(len(defs), rng.randint(1, 3)))]
        t = _check(s, t, {v.id: d for v, d in batch})


@pytest.mark.parametrize("seed", range(10))
def test_products_past_the_expansion_limit_match(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small `EXPAND_LIMIT`: products stay `PROD` atoms part way through a monomial,
    exactly where the interned product one factor at a time leaves them."""
    monkeypatch.setattr(term_mod, "EXPAND_LIMIT", 4)
    rng = random.Random(2000 + seed)
    s = TermStore()
    g = Gen(s, rng)
    xs = g.reals[:3]
    for _ in range(15):
        t = s.mul(s.mul(xs[0], xs[1]), s.add(*(rng.choice(g.reals) for _ in range(3))))
        t = s.add(t, s.mul(xs[2], xs[2]), g.real(2))
        v = rng.choice(xs)
        sums = s.add(g.real(1), g.real(1), s.real(rng.randint(0, 2)))
        _check(s, t, {v.id: sums})


def test_compound_keys_and_cancellation() -> None:
    """Keys that are not free constants (the select elimination of `checks` replaces ITE
    nodes) switch the bloom filter off; a replacement that cancels a monomial drops it."""
    s = TermStore()
    x, y, z = (s.var(n, REAL) for n in "xyz")
    c = s.lt(x, y)
    ite = s.ite(c, x, z)
    t = s.add(s.mul(ite, y), s.mul(x, z), s.real(2))
    atom = s.atom_of(ite)
    assert atom is not None and atom.kind == ITE
    got = _check(s, t, {atom.id: s.add(x, y)})
    assert got is s.add(s.mul(s.add(x, y), y), s.mul(x, z), s.real(2))
    gone = _check(s, s.add(s.mul(x, y), s.mul(x, z)), {y.id: s.neg(z)})
    assert s.constant(gone) == 0


def test_unrelated_subterms_are_kept_not_rebuilt() -> None:
    """A subterm that mentions no key comes back as the same object even when it is newer
    than the keys (the bloom filter, not only the age test, lets it through)."""
    s = TermStore()
    x = s.var("x", REAL)
    v = s.fresh("c", REAL)
    w = s.fresh("c", REAL)
    other = s.uf("f", [s.add(w, s.real(1))])
    t = s.add(other, v)
    mapping = {v.id: s.real(3)}
    assert _check(s, t, mapping) is s.add(other, s.real(3))
    assert s.free_mask(other) == s.free_mask(w)
    assert s.free_mask(x) != 0 and s.free_mask(s.real(5)) == 0


def test_a_shared_memo_gives_the_same_results() -> None:
    rng = random.Random(7)
    s = TermStore()
    g = Gen(s, rng)
    for _ in range(20):
        terms = [g.real(3) for _ in range(3)]
        mapping = _mapping(g, rng, 2)
        memo: dict[int, Any] = {}
        for t in terms:
            assert s.substitute(t, dict(mapping), memo) is reference_substitute(s, t, dict(mapping))


def test_reference_catches_a_wrong_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a rebuild that forgets a monomial's coefficient differs."""
    s = TermStore()
    x, y = s.var("x", REAL), s.var("y", REAL)
    t = s.add(s.scale(s.mul(x, y), 3), x)
    original = TermStore._mul_data

    def broken(self: TermStore, sort: str, a: Any, b: Term) -> Any:
        return original(self, sort, tuple((m, 1) for m, _ in a), b)

    monkeypatch.setattr(TermStore, "_mul_data", broken)
    assert s.substitute(t, {x.id: s.add(y, s.real(1))}) is not reference_substitute(s, t, {x.id: s.add(y, s.real(1))})


def test_comparison_memo_clears_when_bounds_appear() -> None:
    """A comparison built before its atom's bounds were known is built again after: the
    bounds decide it then (the memo by difference must not keep the undecided one)."""
    s = TermStore()
    x = s.var("n", INT)
    d = s.sub(x, s.int_(10))
    before = s._cmp("lt0", d)
    assert isinstance(before, Term)
    assert s._cmp("lt0", d) is before  # memoised
    assert x.leaf is not None
    s.bounds[x.leaf.id] = (0, 5)
    assert s._cmp("lt0", d) is True
    assert s.lt(s.add(x, s.int_(1)), s.int_(11)) is True


def test_repeated_monomial_products_match_the_reference() -> None:
    """One atom multiplied into longer monomials, before, inside and after them, and into
    itself: the insertion path of `_mono_mul` against the dict-and-sort one."""
    s = TermStore()
    xs = [s.var(f"x{i}", REAL) for i in range(5)]
    y = s.fresh("c", REAL)
    t = s.add(s.mul(s.mul(xs[0], xs[2]), xs[4]), s.mul(xs[1], s.mul(xs[3], y)), s.scale(y, 3))
    for value in (xs[0], xs[2], xs[3], xs[4], s.add(xs[1], xs[2]), s.mul(xs[0], xs[4])):
        _check(s, t, {y.id: value})


def test_local_proof_memos_are_kept_per_batch() -> None:
    """`LocalProver._substituted` shares one substitution memo between the elements that
    unfold the same batch of cut variables. Two batches over terms with common subterms
    must each give what a fresh substitution gives: a memo shared across batches would
    hand the second batch subterms rebuilt for the first."""
    import numpy as np

    from tv_mlir.algebra import Kind
    from tv_mlir.algebra import terms as T
    from tv_mlir.algebra.fast import FastAlgebra
    from tv_mlir.prove.cuts import CutStore
    from tv_mlir.prove.local import LocalProver

    alg = FastAlgebra()
    xs, _ = alg.inputs("x", (3,), Kind.FLOAT)
    cuts = CutStore(alg)
    u = cuts.cut_array(alg.mul(xs[:1], xs[1:2], Kind.FLOAT))  # u = x0 * x1
    w = cuts.cut_array(alg.add(xs[1:2], xs[2:3], Kind.FLOAT))  # w = x1 + x2
    common = cuts.cut_array(alg.add(u, w, Kind.FLOAT))  # a subterm both elements share
    p = alg.mul(common, u, Kind.FLOAT)[0]
    q = alg.add(common, w, Kind.FLOAT)[0]
    prover = LocalProver(cuts, alg)
    var = {name: T.term_id(T.element_terms(arr[0])[0]) for name, arr in
           (("u", u), ("w", w), ("common", common))}
    for batch in ([var["common"]], [var["common"], var["u"]], [var["common"], var["w"]]):
        for t in (p, q):
            terms = T.element_terms(t)
            got = prover._substituted(list(terms), batch)
            fresh = T.substitute_all(list(terms), [(cuts.info(v).var, cuts.info(v).term) for v in batch])
            assert all(a is b for a, b in zip(got, fresh)), (batch, got, fresh)
    assert len(prover._memos) == 3 and np.all([len(m) > 0 for m in prover._memos.values()])
