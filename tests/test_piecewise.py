"""Equality by cases over one integer variable (tv_mlir/algebra/piecewise.py): the
sharded-lookup identity it exists for, its bug twins, and a random differential test
against exact evaluation at many integer points (a claimed equality must hold at every
point; a difference at some point must never be claimed equal)."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest

from tv_mlir.algebra.piecewise import PiecewiseChecker
from tv_mlir.algebra.term import INT, REAL, Term, TermStore
from tv_mlir.algebra.term_eval import evaluate


def _clamp(s: TermStore, x: Term, lo: int, hi: int) -> Term:
    """min(max(x, lo), hi) the way the algebra builds it: selects on comparisons."""
    m = s.ite(s.le(s.int_(lo), x), x, s.int_(lo))
    return s.ite(s.le(m, s.int_(hi)), m, s.int_(hi))


def _lookup(s: TermStore, rows: list[Term], i: Term) -> Term:
    """rows[clamp(i)] as a gather builds it: a chain of selects on the index."""
    hi = len(rows) - 1
    acc = rows[hi]
    for p in range(hi - 1, 0, -1):
        acc = s.ite(s.eq(i, s.int_(p)), rows[p], acc)
    return s.ite(s.le(i, s.int_(0)), rows[0], acc)


def _sharded_lookup(s: TermStore, rows: list[Term], i: Term, shards: int, offset_scale: int = 1,
                    mask: bool = True) -> Term:
    """Each shard looks up its rows at i - offset (clamped), masks ids outside its rows,
    and the parts are summed (a vocabulary-parallel embedding)."""
    n = len(rows) // shards
    parts = []
    for d in range(shards):
        local = s.sub(i, s.int_(d * n * offset_scale))
        hit = s.and_(s.le(s.int_(0), local), s.lt(local, s.int_(n)))
        got = _lookup(s, rows[d * n:(d + 1) * n], _clamp(s, local, 0, n - 1))
        parts.append(s.ite(hit, got, s.real(0)) if mask else got)
    return s.sum(parts, REAL)


def _setup(vocab: int = 16) -> tuple[TermStore, Term, list[Term], PiecewiseChecker, dict[int, Term]]:
    s = TermStore()
    tokens = s.var("tokens", INT)
    rows = [s.var(f"e{k}", REAL) for k in range(vocab)]
    cuts: dict[int, Term] = {}
    checker = PiecewiseChecker(lambda v: cuts.get(v.id))
    return s, tokens, rows, checker, cuts


def test_sharded_lookup_is_the_lookup() -> None:
    s, tokens, rows, checker, _ = _setup()
    ids = _clamp(s, tokens, 0, len(rows) - 1)
    assert checker.equal(_lookup(s, rows, ids), _sharded_lookup(s, rows, ids, shards=4))


def test_through_an_integer_cut_variable() -> None:
    """The clamped id is a cut variable (as in the sweep): its definition is looked through."""
    s, tokens, rows, checker, cuts = _setup()
    c = s.var("c!1", INT)
    cuts[s.atom_of(c).id] = _clamp(s, tokens, 0, len(rows) - 1)  # type: ignore[union-attr]
    assert checker.equal(_lookup(s, rows, c), _sharded_lookup(s, rows, c, shards=4))


@pytest.mark.parametrize("bug", ["no_offset", "no_mask", "no_clamp_of_ids"])
def test_bug_twins_are_not_equal(bug: str) -> None:
    s, tokens, rows, checker, _ = _setup()
    ids = _clamp(s, tokens, 0, len(rows) - 1)
    ref = _lookup(s, rows, ids)
    if bug == "no_offset":
        other = _sharded_lookup(s, rows, ids, shards=4, offset_scale=0)
    elif bug == "no_mask":
        other = _sharded_lookup(s, rows, ids, shards=4, mask=False)
    else:  # ids out of range: the reference clamps, the shards' masks drop them
        other = _sharded_lookup(s, rows, tokens, shards=4)
        ref = _lookup(s, rows, tokens)
    assert not checker.equal(ref, other)


def test_two_integer_variables_are_not_decided() -> None:
    s, tokens, rows, checker, _ = _setup()
    other = s.var("other", INT)
    a = s.ite(s.le(tokens, s.int_(3)), rows[0], rows[1])
    b = s.ite(s.le(other, s.int_(3)), rows[0], rows[1])
    assert not checker.equal(a, b)


# -- random differential test ---------------------------------------------------------


def _random_int(s: TermStore, x: Term, rng: random.Random, depth: int) -> Term:
    """A random integer term in x: affine pieces, clamps and selects on comparisons."""
    if depth == 0 or rng.random() < 0.3:
        return s.add(s.scale(x, rng.choice([1, 1, -1, 2])), s.int_(rng.randint(-6, 6)))
    kind = rng.choice(["clamp", "ite", "add"])
    if kind == "clamp":
        lo = rng.randint(-5, 5)
        return _clamp(s, _random_int(s, x, rng, depth - 1), lo, lo + rng.randint(0, 8))
    if kind == "add":
        return s.add(_random_int(s, x, rng, depth - 1), s.int_(rng.randint(-3, 3)))
    return s.ite(_random_cond(s, x, rng, depth - 1), _random_int(s, x, rng, depth - 1),
                 _random_int(s, x, rng, depth - 1))


def _random_cond(s: TermStore, x: Term, rng: random.Random, depth: int) -> Term | bool:
    a, b = _random_int(s, x, rng, depth), s.int_(rng.randint(-6, 6))
    c = rng.choice([s.lt, s.le, s.eq])(a, b)
    return s.not_(c) if rng.random() < 0.3 else c


def _random_real(s: TermStore, x: Term, rows: list[Term], rng: random.Random, depth: int) -> Term:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(rows)
    if rng.random() < 0.3:
        return s.add(_random_real(s, x, rows, rng, depth - 1), _random_real(s, x, rows, rng, depth - 1))
    return s.ite(_random_cond(s, x, rng, depth - 1), _random_real(s, x, rows, rng, depth - 1),
                 _random_real(s, x, rows, rng, depth - 1))


def test_random_terms_agree_with_exact_evaluation() -> None:
    rng = random.Random(7)
    claimed = differing = 0
    for _ in range(400):
        s, tokens, rows, checker, _ = _setup(vocab=4)
        a = _random_real(s, tokens, rows, rng, 4)
        # b: a itself rebuilt differently half of the time (equal), else another term
        b = s.add(s.ite(_random_cond(s, tokens, rng, 2), a, a), s.real(0)) if rng.random() < 0.5 else \
            _random_real(s, tokens, rows, rng, 4)
        env_rows = {f"e{k}": Fraction(10 ** k) for k in range(4)}  # distinct: sums do not collide
        points = range(-40, 41)
        same = all(evaluate(a, {**env_rows, "tokens": p}) == evaluate(b, {**env_rows, "tokens": p})
                   for p in points)
        if checker.equal(a, b):
            claimed += 1
            assert same, "claimed equal, but they differ at some integer point"
        elif not same:
            differing += 1
    assert claimed > 100 and differing > 50  # the test exercised both outcomes


def test_random_sharded_lookups_and_off_by_one_twins() -> None:
    """Lookups split over shards with random sizes, clamps and masks, correct or off by
    one somewhere (offset, mask bound, comparison strictness, clamp): the checker's answer
    must be what evaluation at every integer around the breakpoints says."""
    rng = random.Random(11)
    outcomes = {True: 0, False: 0}
    for _ in range(120):
        shards, n = rng.choice([2, 4]), rng.choice([2, 3, 4])
        s, tokens, rows, checker, _ = _setup(vocab=shards * n)
        mutation = rng.choice(["none", "none", "offset", "strict", "mask_hi", "clamp"])
        vocab = shards * n
        lo_clip, hi_clip = 0, vocab - 1
        ids = _clamp(s, tokens, lo_clip, hi_clip)
        parts = []
        for d in range(shards):
            off = d * n + (rng.choice([-1, 1]) if mutation == "offset" and d == shards - 1 else 0)
            local = s.sub(ids, s.int_(off))
            upper = s.le(local, s.int_(n)) if mutation == "mask_hi" and d == 0 else s.lt(local, s.int_(n))
            lower = s.lt(s.int_(0), local) if mutation == "strict" and d == 1 else s.le(s.int_(0), local)
            hi = n - 2 if mutation == "clamp" and d == 0 else n - 1
            got = _lookup(s, rows[d * n:(d + 1) * n], _clamp(s, local, 0, hi))
            parts.append(s.ite(s.and_(lower, upper), got, s.real(0)))
        ref, other = _lookup(s, rows, ids), s.sum(parts, REAL)
        env_rows = {f"e{k}": Fraction(3 ** k) for k in range(vocab)}
        same = all(evaluate(ref, {**env_rows, "tokens": p}) == evaluate(other, {**env_rows, "tokens": p})
                   for p in range(-3, vocab + 3))
        got = checker.equal(ref, other)
        assert got == same, (mutation, shards, n)
        outcomes[got] += 1
    assert outcomes[True] > 20 and outcomes[False] > 20


def test_sums_of_updates_at_data_dependent_rows() -> None:
    """An embedding gradient: row r sums the updates of every token whose (clamped) id is
    r; split over shards, each shard sums the masked updates of the ids in its rows. Each
    summand depends on one token's id: decided group by group. A twin whose last shard
    forgets its offset is told apart."""
    s = TermStore()
    vocab, shards, tokens = 8, 2, 3
    n = vocab // shards
    ids = [_clamp(s, s.var(f"tok{t}", INT), 0, vocab - 1) for t in range(tokens)]
    g = [s.var(f"g{t}", REAL) for t in range(tokens)]
    checker = PiecewiseChecker(lambda v: None)

    def ref_row(r: int) -> Term:
        return s.sum([s.ite(s.eq(ids[t], s.int_(r)), g[t], s.real(0)) for t in range(tokens)], REAL)

    def shard_row(r: int, bug: bool) -> Term:
        d, rl = divmod(r, n)
        off = 0 if bug and d == shards - 1 else d * n
        parts = []
        for t in range(tokens):
            local = s.sub(ids[t], s.int_(off))
            hit = s.and_(s.le(s.int_(0), local), s.lt(local, s.int_(n)))
            parts.append(s.ite(s.and_(hit, s.eq(_clamp(s, local, 0, n - 1), s.int_(rl))), g[t], s.real(0)))
        return s.sum(parts, REAL)

    assert all(checker.equal(ref_row(r), shard_row(r, bug=False)) for r in range(vocab))
    assert not all(checker.equal(ref_row(r), shard_row(r, bug=True)) for r in range(vocab))


def test_ranges_of_integer_terms_hold_at_every_point() -> None:
    """int_range of random clamps, selects and affine pieces in one variable: every value
    the term takes (at integer points around its breakpoints) lies in the range; a clamp's
    range is exactly its bounds."""
    from tv_mlir.algebra.piecewise import int_range

    s = TermStore()
    x = s.var("x", INT)
    assert int_range(_clamp(s, x, 0, 63), lambda v: None) == (0, 63)
    assert int_range(s.add(_clamp(s, x, 2, 5), s.int_(3)), lambda v: None) == (5, 8)
    rng = random.Random(5)
    bounded = 0
    for _ in range(300):
        t = _random_int(s, x, rng, 4)
        got = int_range(t, lambda v: None)
        if got is None:
            continue
        lo, hi = got
        bounded += lo != float("-inf") and hi != float("inf")
        for p in range(-60, 61):
            value = evaluate(t, {"x": p})
            assert lo <= value <= hi, (lo, hi, p, value)
    assert bounded > 50


def test_known_bounds_fold_comparisons() -> None:
    """A cut variable with recorded bounds (a clamped index): comparisons it decides fold
    to True/False as they are built, the others stay conditions."""
    s = TermStore()
    c = s.var("c!1", INT)
    s.bounds[s.atom_of(c).id] = (0, 63)  # type: ignore[union-attr]
    assert s.le(s.int_(0), c) is True and s.le(c, s.int_(63)) is True
    assert s.lt(c, s.int_(0)) is False and s.eq(c, s.int_(64)) is False
    assert isinstance(s.lt(s.int_(63), s.add(c, s.int_(1))), Term)  # c = 63 makes it true, c = 0 false
    assert isinstance(s.eq(c, s.int_(5)), Term)
