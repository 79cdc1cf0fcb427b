"""Deferred IEEE classes of divisions (algebra/fast.py `DEFER_CLASSES`, term.py `DEFER`):
a division whose class depends on its operands' values gets that class as one hash-consed
node over its operands' four terms, built into the case split's term only when something
reads it (the solver's translation, an evaluation, a select's narrowing, a substitution).

What must hold, and what each test holds:
- the node stands for exactly the eager split: its expansion is the very class term a
  non-deferring algebra builds from the same operands (every pair of operand forms);
- the node's identity names every operand term: two divisions that differ only in an
  operand's class, or only in a value, are different nodes (a key that dropped one would
  let two different classes merge: a wrong `equivalent`);
- the classes are XLA's: the whole op suite (tests/test_ops_xla.py's cases) with classes
  deferred, whose divisions meet 0 divisors, NaN square roots and infinities, and a
  mutated rule (the node read as finite) fails it;
- end to end, a pair whose outputs differ only in the class of a quotient is
  not-equivalent, confirmed on XLA (it is equivalent with the rule mutated to FIN), and a
  reordered pair stays equivalent, its quotients' classes one node in both programs.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from test_div_case_split import _operands
from test_ops_xla import CASES, Case, rng_for

from conftest import check_against_xla
from tv_mlir.algebra import Kind
from tv_mlir.algebra import fast as F
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.base import UNINTERPRETED
from tv_mlir.algebra.fast import FF, FIN, FastAlgebra
from tv_mlir.algebra.term import DEFER, TermStore
from tv_mlir.api import verify


@pytest.fixture
def deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(F, "DEFER_CLASSES", True)


def _node(k: Any) -> Any:
    return None if isinstance(k, int) else k.store.atom_of(k)


def _is_deferred(k: Any) -> bool:
    n = _node(k)
    return n is not None and n.kind == DEFER


def _same(p: Any, q: Any) -> bool:
    return p is q if not isinstance(p, (bool, int)) else type(p) is type(q) and p == q


def test_the_node_expands_to_the_eager_split() -> None:
    alg = FastAlgebra(defer_classes=True)
    eager = FastAlgebra(store=alg.store, defer_classes=False)
    s = alg.store
    ops = _operands(alg)
    met = 0
    for a, b in itertools.product(ops, ops):
        got, want = alg.f_div(a, b), eager.f_div(a, b)
        assert _same(got.v, want.v), (a, b)
        if _is_deferred(got.k):
            met += 1
            expanded = s.expand(got.k)
            want_k = s.int_(want.k) if isinstance(want.k, int) else want.k
            assert expanded is want_k, (a, b)
        else:
            assert _same(got.k, want.k), (a, b)
    assert met > 50  # most pairs: a divisor that may be 0, or an operand of a symbolic class


def test_the_node_names_every_operand_term() -> None:
    alg = FastAlgebra(defer_classes=True)
    s = alg.store
    x, _ = alg.inputs("x", (1,), Kind.FLOAT)
    y, _ = alg.inputs("y", (1,), Kind.FLOAT, ieee=True)
    z, _ = alg.inputs("z", (1,), Kind.FLOAT, ieee=True)
    d, _ = alg.inputs("d", (1,), Kind.FLOAT)
    xv, yk, zk, dv = x[0].v, y[0].k, z[0].k, d[0].v
    base = alg.f_div(FF(xv, yk), FF(dv, zk)).k
    assert _is_deferred(base)
    assert alg.f_div(FF(xv, yk), FF(dv, zk)).k is base  # hash-consed: one node for one split
    variants = [FF(xv, zk), FF(xv, FIN), FF(y[0].v, yk)]  # a's class, a's class known, a's value
    for a in variants:
        k = alg.f_div(a, FF(dv, zk)).k
        assert k is not base, a
    for b in [FF(dv, yk), FF(z[0].v, zk)]:  # b's class, b's value
        k = alg.f_div(FF(xv, yk), b).k
        assert k is not base, b
    # And the expansions differ where the classes do: a's class term is read by the split.
    assert s.expand(base) is not s.expand(alg.f_div(FF(xv, zk), FF(dv, zk)).k)


def test_a_finite_quotient_by_a_known_nonzero_divisor_is_not_deferred() -> None:
    alg = FastAlgebra(defer_classes=True)
    x, _ = alg.inputs("x", (1,), Kind.FLOAT)
    e = alg.uf("exponential", [x])[0]  # > 0: the fast path's FIN, no node
    assert alg.f_div(x[0], e).k == FIN
    assert alg.f_div(x[0], alg.f_const(4.0)).k == FIN


@pytest.mark.parametrize("name", ["sqrt", "log", "rsqrt", "exponential", "power", "tan"])
def test_a_function_class_node_expands_to_the_eager_split(name: str) -> None:
    alg = FastAlgebra(defer_classes=True)
    eager = FastAlgebra(store=alg.store, defer_classes=False)
    s = alg.store
    ops = _operands(alg)
    arity = UNINTERPRETED[name]
    met = 0
    for xs in itertools.product(ops, repeat=arity):
        got, want = alg._uf_apply(name, xs), eager._uf_apply(name, xs)
        assert _same(got.v, want.v), xs
        if _is_deferred(got.k):
            met += 1
            want_k = s.int_(want.k) if isinstance(want.k, int) else want.k
            assert s.expand(got.k) is want_k, xs
        else:
            assert _same(got.k, want.k), xs
    assert met >= 8


def test_a_function_class_node_counts_as_applying_the_function() -> None:
    """A definition that reads only the class of sqrt(x) applies sqrt's class functions,
    as the eager class does: a counterexample through it is replayed, not trusted."""
    alg = FastAlgebra(defer_classes=True)
    y, _ = alg.inputs("y", (1,), Kind.FLOAT, ieee=True)
    k = alg._uf_apply("sqrt", [y[0]]).k
    assert _is_deferred(k)
    assert T.scan(k, set(), check_uf=True)[2]
    eager = FastAlgebra(store=alg.store, defer_classes=False)
    assert T.scan(eager._uf_apply("sqrt", [y[0]]).k, set(), check_uf=True)[2]


def _count_nodes(store: TermStore) -> int:
    return sum(1 for t in store.nodes if t.kind == DEFER)


_DIVIDING = [c for c in CASES if "stablehlo.divide" in c.text]


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_op_suite_with_deferred_classes(xla, deferred: None, c: Case) -> None:
    inputs = c.inputs(rng_for(c.name))
    check_against_xla(xla, c.text, inputs, rtol=c.rtol, atol=c.atol, xla_text=c.xla_text)


def test_the_op_suite_meets_deferred_nodes(deferred: None) -> None:
    """The suite above can fail for a wrong node only if it makes nodes: count them."""
    from conftest import prepared, symbolic_values

    assert len(_DIVIDING) >= 4
    made = 0
    for c in _DIVIDING:
        alg = FastAlgebra()
        symbolic_values(prepared(c.text), c.inputs(rng_for(c.name)), alg=alg)
        made += _count_nodes(alg.store)
    assert made >= 20


@pytest.mark.parametrize("rule,name", [("_div_class_rule", n) for n in ("divide_f32", "ieee_arith", "minmax_f32")]
                         + [("_uf_class_rule", n) for n in ("uf_stablehlo_sqrt", "uf_stablehlo_log",
                                                             "uf_stablehlo_rsqrt")])
def test_mutation_deferred_class_read_as_finite(xla, deferred: None, monkeypatch: pytest.MonkeyPatch,
                                                rule: str, name: str) -> None:
    """A deferred class (a division's, or a function's of an operand with a symbolic class)
    read as finite: the own terms' output differs from XLA's, or is a finite quotient by 0,
    which has no value; either way the harness rejects it."""
    monkeypatch.setattr(F, rule, lambda store, rule, args: FIN)
    c = next(c for c in CASES if c.name == name)
    with pytest.raises(AssertionError, match=r"symbolic output \d+ \(own terms\)|symbolic result has no value"):
        check_against_xla(xla, c.text, c.inputs(rng_for(c.name)), rtol=c.rtol, atol=c.atol)


# -- end to end ---------------------------------------------------------------------

_CLASS_ONLY_REF = """
func.func @main(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
  %q = stablehlo.divide %a, %b : tensor<6xf32>
  %0 = stablehlo.subtract %q, %q : tensor<6xf32>
  return %0 : tensor<6xf32>
}
"""
# q - q is 0 wherever q is finite, NaN where b = 0 (inf - inf, or 0/0): only the class of
# the quotient tells the two apart.
_CLASS_ONLY_BUG = """
func.func @main(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
  %0 = stablehlo.constant dense<0.0> : tensor<6xf32>
  return %0 : tensor<6xf32>
}
"""
_REORDERED_REF = """
func.func @main(%a: tensor<6xf32>, %b: tensor<6xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %q = stablehlo.divide %a, %b : tensor<6xf32>
  %s = stablehlo.add %q, %c : tensor<6xf32>
  %r = stablehlo.divide %s, %b : tensor<6xf32>
  return %r : tensor<6xf32>
}
"""
_REORDERED = """
func.func @main(%a: tensor<6xf32>, %b: tensor<6xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %q = stablehlo.divide %a, %b : tensor<6xf32>
  %s = stablehlo.add %c, %q : tensor<6xf32>
  %r = stablehlo.divide %s, %b : tensor<6xf32>
  return %r : tensor<6xf32>
}
"""


def _verify(tmp_path: Path, ref: str, other: str) -> Any:
    a, b = tmp_path / "ref.mlir", tmp_path / "other.mlir"
    a.write_text(ref)
    b.write_text(other)
    return verify(a, b, core="own", cache=False, shrink=False, stages=False)


def test_a_class_only_difference_is_found_and_confirmed(tmp_path: Path, deferred: None) -> None:
    v = _verify(tmp_path, _CLASS_ONLY_REF, _CLASS_ONLY_BUG)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed_at is not None


def test_the_class_only_pair_needs_the_nodes_rule(tmp_path: Path, deferred: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above fails when the node is read as finite: the verdict rests on the rule."""
    monkeypatch.setattr(F, "_div_class_rule", lambda store, rule, args: FIN)
    v = _verify(tmp_path, _CLASS_ONLY_REF, _CLASS_ONLY_BUG)
    assert v.verdict != "not-equivalent"


def test_a_reordered_pair_stays_equivalent_with_one_node_per_quotient(tmp_path: Path, deferred: None) -> None:
    v = _verify(tmp_path, _REORDERED_REF, _REORDERED)
    assert v.verdict == "equivalent", v.reason
    assert v.stats["symbolic_classes"] > 0
