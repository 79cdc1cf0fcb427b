"""The cheap proof rules the sweep and the final check rely on: each must prove what it
claims and nothing else (a wrong True here is an unsound 'equivalent')."""
from __future__ import annotations

import z3

from tv_mlir.algebra.checks import (
    MAX_ITE_NESTING,
    difference_is_zero,
    indicator_form,
    ite_difference_is_zero,
    lattice_equal,
)
from tv_mlir.algebra.symbolic import POSITIVE_CUT_PREFIX, known_positive

x, y, z = z3.Reals("x y z")
c, d = x > 0, y > 0
exp = z3.Function("exponential", z3.RealSort(), z3.RealSort())


def test_selects_scaled_into_branches_are_proved() -> None:
    # relu'(h) * 2 * g summed over a batch, with the constant inside or outside the select.
    lhs = 2 * z3.If(c, z, 0) + 3 * z3.If(d, x, 0)
    rhs = z3.If(c, 2 * z, 0) + z3.If(d, 3 * x, 0)
    assert difference_is_zero(lhs, rhs)
    assert ite_difference_is_zero(z3.If(c, x, y) * 4, z3.If(c, 4 * x, 4 * y))


def test_different_selects_are_not_proved() -> None:
    assert not difference_is_zero(z3.If(c, x, y), z3.If(d, x, y))
    assert not difference_is_zero(z3.If(c, x, 0), x)
    assert not difference_is_zero(z3.If(c, x, y) + z3.If(c, y, x), x + y + 1)


def test_swapped_branches_with_negated_condition_is_not_claimed() -> None:
    # Equal in truth, but conditions are compared as terms: no proof, and no wrong one.
    assert not ite_difference_is_zero(z3.If(c, x, y), z3.If(z3.Not(c), y, x))


def test_indicator_form_agrees_with_the_select_at_both_indicator_values() -> None:
    t = 2 * z3.If(c, z * x, y) + z3.If(d, 1, x)
    form = indicator_form(t)
    inds = [v for v in _consts(form) if v.decl().name().startswith("ind!")]
    assert len(inds) == 2
    for vx, vy, vz in ((1, 2, 3), (-1, 5, 7), (2, -3, -1)):
        env = [(x, z3.RealVal(vx)), (y, z3.RealVal(vy)), (z, z3.RealVal(vz))]
        truth = z3.simplify(z3.substitute(t, *env))
        values = [(i, z3.RealVal(1 if z3.is_true(z3.simplify(z3.substitute(cond, *env))) else 0))
                  for i, cond in zip(sorted(inds, key=str), _conditions(t, inds))]
        assert z3.simplify(z3.substitute(form, *(env + values))) == truth


def test_nested_selects_become_nested_indicator_polynomials() -> None:
    """Selects in a select's branch (depth 2) and the same condition reused elsewhere: no
    real select is left, one indicator per condition, and the form agrees with the
    original at every 0/1 assignment that matches the conditions."""
    inner = z3.If(d, x * y, 3)
    t = z3.If(c, inner + z, 2 * x) + 5 * z3.If(d, y, z)
    form = indicator_form(t)
    assert not _has_real_ite(form)
    inds = sorted((v for v in _consts(form) if v.decl().name().startswith("ind!")), key=str)
    assert len(inds) == 2
    assert ite_difference_is_zero(t, z3.If(c, inner + z, 2 * x) + z3.If(d, 5 * y, 5 * z))
    for vx, vy, vz in ((1, 2, 3), (-1, 5, 7), (2, -3, -1)):
        env = [(x, z3.RealVal(vx)), (y, z3.RealVal(vy)), (z, z3.RealVal(vz))]
        truth = z3.simplify(z3.substitute(t, *env))
        values = [(i, z3.RealVal(1 if z3.is_true(z3.simplify(z3.substitute(cond, *env))) else 0))
                  for i, cond in zip(inds, _conditions(t, inds))]
        assert z3.simplify(z3.substitute(form, *(env + values))) == truth


def _has_real_ite(t: z3.ExprRef) -> bool:
    if z3.is_app_of(t, z3.Z3_OP_ITE) and t.sort().kind() == z3.Z3_REAL_SORT:
        return True
    return any(_has_real_ite(k) for k in t.children())


def test_deeply_nested_selects_are_left_to_the_solver() -> None:
    chain = x
    for k in range(MAX_ITE_NESTING + 2):
        chain = z3.If(x > k, chain, y + k)
    assert not ite_difference_is_zero(chain, chain + 0 * z)


def test_known_positive() -> None:
    assert known_positive(exp(x) + exp(y) * 2)
    assert known_positive(exp(x) / (exp(x) + exp(y)))
    assert known_positive(z3.Real(f"{POSITIVE_CUT_PREFIX}!7") + exp(z))
    assert not known_positive(exp(x) - exp(y))
    assert not known_positive(exp(x) * x)
    assert not known_positive(z3.Real("c!7"))
    assert not known_positive(z3.RealVal(0))
    assert not known_positive(z3.Function("log", z3.RealSort(), z3.RealSort())(x))


def _consts(t: z3.ExprRef) -> list[z3.ExprRef]:
    out, seen, stack = [], set(), [t]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and not z3.is_rational_value(e):
            out.append(e)
        stack.extend(e.children())
    return out


def _conditions(t: z3.ExprRef, inds: list[z3.ExprRef]) -> list[z3.ExprRef]:
    by_id = {}
    stack = [t]
    while stack:
        e = stack.pop()
        if z3.is_app_of(e, z3.Z3_OP_ITE):
            by_id[e.arg(0).get_id()] = e.arg(0)
        stack.extend(e.children())
    return [by_id[int(str(i).split("!")[1])] for i in sorted(inds, key=str)]


def test_min_max_networks_over_own_terms() -> None:
    """The 0-1 principle reads own terms too: the median of three written two ways, min
    commutes, -min(x, y) is max(-x, -y); min and max are told apart, and so are networks
    over different atoms."""
    from tv_mlir.algebra.term import REAL, TermStore

    s = TermStore()
    a, b, e = (s.var(n, REAL) for n in "abe")

    def mn(p, q):
        return s.ite(s.le(p, q), p, q)

    def mx(p, q):
        return s.ite(s.lt(q, p), p, q)

    m1 = mx(mn(a, b), mn(mx(a, b), e))
    m2 = mn(mx(a, b), mx(mn(a, b), e))
    assert lattice_equal([(m1, m2), (mn(a, b), mn(b, a)), (s.neg(mn(a, b)), mx(s.neg(a), s.neg(b)))]) == \
        [True, True, True]
    assert lattice_equal([(mx(a, b), mn(a, b)), (mn(a, b), mn(a, e)), (m1, mx(a, b))]) == [False, False, False]


def test_wide_min_max_networks_by_normal_form() -> None:
    """Past the 16 atoms the 0-1 enumeration takes, the normal form decides: a max over 64
    values against the max of four shards' maxes (a vocabulary-parallel softmax's max), a
    second-largest written two ways; and a max missing one value is told apart."""
    import random

    from tv_mlir.algebra.term import REAL, TermStore

    s = TermStore()
    xs = [s.var(f"x{i}", REAL) for i in range(64)]

    def mx(p, q):
        return s.ite(s.lt(q, p), p, q)

    def mn(p, q):
        return s.ite(s.le(p, q), p, q)

    def fold(f, items):
        acc = items[0]
        for t in items[1:]:
            acc = f(acc, t)
        return acc

    whole = fold(mx, xs)
    shards = fold(mx, [fold(mx, xs[16 * d:16 * d + 16]) for d in range(4)])
    shuffled = list(xs)
    random.Random(3).shuffle(shuffled)
    missing = fold(mx, xs[:-1])
    assert lattice_equal([(whole, shards), (whole, fold(mx, shuffled)), (whole, missing)]) == [True, True, False]

    # second largest of 20: max over pairs of their min, against the pairwise-max form
    ys = xs[:20]
    second = fold(mx, [mn(ys[i], ys[j]) for i in range(20) for j in range(i + 1, 20)])
    second_b = fold(mx, [mn(ys[j], ys[i]) for j in range(19, -1, -1) for i in range(j)])
    largest_min = fold(mx, [mn(ys[i], ys[i + 1]) for i in range(19)])
    assert lattice_equal([(second, second_b), (second, largest_min)]) == [True, False]


def test_exact_values_of_uninterpreted_functions_match_xla() -> None:
    """Where the own core folds a transcendental of a constant to a rational, XLA computes
    exactly that value (f32); everywhere else it stays uninterpreted."""
    from fractions import Fraction

    import jax
    import jax.numpy as jnp
    from jax import lax

    from tv_mlir.algebra.fast import exact_value

    fns = {"exponential": jnp.exp, "exponential_minus_one": jnp.expm1, "tanh": jnp.tanh,
           "logistic": jax.nn.sigmoid, "sine": jnp.sin, "cosine": jnp.cos, "tan": jnp.tan, "erf": lax.erf,
           "log_plus_one": jnp.log1p, "sqrt": jnp.sqrt, "cbrt": jnp.cbrt, "log": jnp.log, "rsqrt": lax.rsqrt,
           "atan2": jnp.arctan2, "power": lax.pow}
    points = [(name, (0.0,)) for name in fns if name not in ("atan2", "power", "log", "rsqrt")] + [
        ("log", (1.0,)), ("sqrt", (2.25,)), ("sqrt", (16.0,)), ("rsqrt", (4.0,)), ("rsqrt", (0.25,)),
        ("cbrt", (-8.0,)), ("cbrt", (0.125,)), ("atan2", (0.0, 3.0)), ("power", (2.0, -3.0)),
        ("power", (-1.5, 2.0)), ("power", (0.0, 0.0)), ("power", (7.0, 1.0))]
    for name, args in points:
        got = exact_value(name, [Fraction(a) for a in args])
        assert got is not None, (name, args)
        want = float(fns[name](*[jnp.float32(a) for a in args]))
        assert float(got) == want, (name, args, got, want)
    for name, args in [("sqrt", (2.0,)), ("cosine", (1.0,)), ("log", (2.0,)), ("power", (0.0, -1.0)),
                       ("atan2", (0.0, -1.0)), ("exponential", (1.0,))]:
        assert exact_value(name, [Fraction(a) for a in args]) is None, (name, args)
