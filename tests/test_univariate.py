"""Canonical select conditions over one integer atom (tv_mlir/algebra/univariate.py): the
guards two programs write for the same rows become one term, and the rewrite never changes
a select's value (checked exactly at every point of a window around the breakpoints)."""
from __future__ import annotations

import random

from tv_mlir.algebra.term import INT, REAL, Term, TermStore
from tv_mlir.algebra.term_eval import evaluate


def _clamp(s: TermStore, x: Term, lo: int, hi: int) -> Term:
    # as the algebra's max/min build it: selects it keeps as built
    x = s.ite(s.lt(x, s.int_(lo)), s.int_(lo), x)
    return s.ite(s.lt(s.int_(hi), x), s.int_(hi), x)


def test_vocab_parallel_row_guard_is_the_reference_guard() -> None:
    """The row guard of a vocab-parallel scatter (shard 1 of 4, 16 rows each) and the
    reference's `ids == 21` select the same token gradients: one term."""
    s = TermStore()
    ids, dx = s.var("ids", INT), s.var("dx", REAL)
    zero = s.real(0)
    ref = s.ite(s.eq(_clamp(s, ids, 0, 63), s.int_(21)), dx, zero, canonical=True)
    local = s.sub(_clamp(s, ids, 0, 63), s.int_(16))
    hit = s.and_(s.le(s.int_(0), local), s.lt(local, s.int_(16)))
    inner = s.ite(hit, dx, zero, canonical=True)
    shard = s.ite(s.eq(_clamp(s, local, 0, 15), s.int_(5)), inner, zero, canonical=True)
    assert shard is ref
    # a different row is a different term, and so is the guard with the hit test left out
    # (clip(local) == 0 also holds for every id below 16)
    other_row = s.ite(s.eq(_clamp(s, ids, 0, 63), s.int_(22)), dx, zero, canonical=True)
    no_hit = s.ite(s.eq(_clamp(s, local, 0, 15), s.int_(0)), dx, zero, canonical=True)
    row16 = s.ite(s.eq(_clamp(s, ids, 0, 63), s.int_(16)), dx, zero, canonical=True)
    assert other_row is not ref and no_hit is not row16


def test_sums_of_guarded_rows_close_by_normal_form() -> None:
    """Squared gradient rows (an Adam update) over 8 tokens: equal as polynomials."""
    s = TermStore()
    zero = s.real(0)
    ref_terms, shard_terms = [], []
    for t in range(8):
        ids, dx = s.var(f"ids{t}", INT), s.var(f"dx{t}", REAL)
        ref_terms.append(s.ite(s.eq(_clamp(s, ids, 0, 15), s.int_(5)), dx, zero, canonical=True))
        local = s.sub(_clamp(s, ids, 0, 15), s.int_(4))
        inner = s.ite(s.and_(s.le(s.int_(0), local), s.lt(local, s.int_(4))), dx, zero, canonical=True)
        shard_terms.append(s.ite(s.eq(_clamp(s, local, 0, 3), s.int_(1)), inner, zero, canonical=True))
    g_ref, g_shard = s.sum(ref_terms, REAL), s.sum(shard_terms, REAL)
    assert s.mul(g_ref, g_ref) is s.mul(g_shard, g_shard)


def _random_int(s: TermStore, x: Term, rng: random.Random, depth: int) -> Term:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([x, s.add(x, s.int_(rng.randint(-5, 5))), s.scale(x, rng.choice([-2, -1, 2, 3])),
                           s.int_(rng.randint(-6, 6))])
    a, b = _random_int(s, x, rng, depth - 1), _random_int(s, x, rng, depth - 1)
    op = rng.choice(["add", "sub", "ite", "clamp"])
    if op == "add":
        return s.add(a, b)
    if op == "sub":
        return s.sub(a, b)
    if op == "clamp":
        lo = rng.randint(-4, 4)
        return _clamp(s, a, lo, lo + rng.randint(0, 6))
    return s.ite(_random_bool(s, x, rng, depth - 1), a, b)


def _random_bool(s: TermStore, x: Term, rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.4:
        a, b = _random_int(s, x, rng, max(depth - 1, 0)), _random_int(s, x, rng, max(depth - 1, 0))
        return rng.choice([s.lt, s.le, s.eq])(a, b)
    a, b = _random_bool(s, x, rng, depth - 1), _random_bool(s, x, rng, depth - 1)
    op = rng.choice(["and", "or", "not", "bite"])
    if op == "and":
        return s.and_(a, b)
    if op == "or":
        return s.or_(a, b)
    if op == "not":
        return s.not_(a)
    return s.bite(_random_bool(s, x, rng, 0), a, b)


def test_canonical_selects_keep_their_values() -> None:
    """Random guards over one integer (sums, scalings, clamps, nested selects, Boolean
    connectives): the canonical select equals the select as built at every point of a
    window past all their breakpoints, with and without known bounds."""
    rng = random.Random(20261201)
    changed = 0
    for case in range(300):
        s = TermStore()
        x = s.var("x", INT)
        if case % 2:
            assert x.leaf is not None
            s.bounds[x.leaf.id] = (-3, 9)  # an input of a narrow type
        cond = _random_bool(s, x, rng, 3)
        if isinstance(cond, bool):
            continue
        a, b = s.var("a", REAL), s.var("b", REAL)
        built = s.ite(cond, a, b)
        canon = s.ite(cond, a, b, canonical=True)
        changed += canon is not built
        points = range(-3, 10) if case % 2 else range(-60, 61)
        for v in points:
            env = {"x": v, "a": 1, "b": 2}
            assert evaluate(canon, env) == evaluate(built, env), (case, v)
    assert changed > 100  # the rewrite did happen in most cases


def test_nested_selects_with_a_shared_branch_join() -> None:
    s = TermStore()
    c, d = s.var("c", INT), s.var("d", INT)
    x, y = s.var("x", REAL), s.var("y", REAL)
    p, q = s.lt(c, d), s.lt(d, c)  # two atoms: no truth set, only the join
    assert s.ite(p, s.ite(q, x, y, canonical=True), y, canonical=True) is \
        s.ite(s.and_(p, q), x, y, canonical=True)
    assert s.ite(p, x, s.ite(q, x, y, canonical=True), canonical=True) is \
        s.ite(s.or_(p, q), x, y, canonical=True)
    for cv in range(-2, 3):
        for dv in range(-2, 3):
            env = {"c": cv, "d": dv, "x": 1, "y": 2}
            nested = s.ite(p, s.ite(q, x, y), y)
            assert evaluate(nested, env) == evaluate(s.ite(s.and_(p, q), x, y, canonical=True), env)


def test_point_guards_are_the_general_paths_terms() -> None:
    """`x == v` takes a shortcut past the interval arithmetic (the most common index
    guard): it must give the very term the general path gives for the same truth set
    (`x <= v and v <= x`, which takes no shortcut), at the domain's ends (emitted open
    there), inside it, outside it, and over a cut point's range; and keep its value."""
    for bounds in (None, ("bounds", (-3, 9)), ("ranges", (0, 7))):
        s = TermStore()
        x = s.var("x", INT)
        assert x.leaf is not None
        if bounds is not None:
            getattr(s, bounds[0])[x.leaf.id] = bounds[1]
        a, b = s.var("a", REAL), s.var("b", REAL)
        for v in range(-5, 12):
            point = s.ite(s.eq(x, s.int_(v)), a, b, canonical=True)
            general = s.ite(s.and_(s.le(x, s.int_(v)), s.le(s.int_(v), x)), a, b, canonical=True)
            assert point is general, (bounds, v)
            for xv in range(-6, 13):
                if bounds is None or bounds[1][0] <= xv <= bounds[1][1]:
                    assert evaluate(point, {"x": xv, "a": 1, "b": 2}) == (1 if xv == v else 2), (bounds, v, xv)
        # x + 1 == 4 is the point 3 too; two atoms are no point
        y = s.var("y", INT)
        assert s.ite(s.eq(s.add(x, s.int_(1)), s.int_(4)), a, b, canonical=True) is \
            s.ite(s.eq(x, s.int_(3)), a, b, canonical=True)
        two = s.eq(s.add(x, y), s.int_(4))
        assert s.ite(two, a, b, canonical=True) is s.ite(two, a, b)
