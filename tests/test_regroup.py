"""Regrouped sums (prove/regroup.py, switch `REGROUP`): a tensor-parallel all-reduce of
per-device sums of two dots' parts against the reference's sum of the two whole dots. One
level of definitions (`cuts._sum_of_partials`) meets no reference variable there; the
linear expansions through the cut definitions are the same polynomial, so the elements
merge without a local proof. Twins the rule must not hide: a partial that misses a
summand, a summand counted twice, a wrong divisor, and a regrouping equal only in value
where one side may be an infinity."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tv_mlir.algebra.fast import FF, FIN, NAN, FastAlgebra
from tv_mlir.algebra.term import REAL, Term
from tv_mlir.api import verify
from tv_mlir.prove import cuts, local, regroup
from tv_mlir.prove.cuts import Cut, CutStore, Origin

REF = """module @ref {
  func.func public @main(%x: tensor<8x4xf32>, %g: tensor<8x4xf32>, %y: tensor<8x4xf32>, %h: tensor<8x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.dot_general %x, %g, contracting_dims = [0] x [0] : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.dot_general %y, %h, contracting_dims = [0] x [0] : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.add %0, %1 : tensor<4x4xf32>
    return %2 : tensor<4x4xf32>
  }
}
"""
_TP = """module @tp attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["tp"=2]>
  func.func public @main(%x: tensor<8x4xf32>, %g: tensor<8x4xf32>, %y: tensor<8x4xf32>, %h: tensor<8x4xf32>) -> tensor<4x4xf32> {
    %0 = sdy.manual_computation(%x, %g, %y, %h) in_shardings=[<@mesh, [{"tp"}, {}]>, <@mesh, [{"tp"}, {}]>, <@mesh, [{"tp"}, {}]>, <@mesh, [{"tp"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"tp"} (%xl: tensor<4x4xf32>, %gl: tensor<4x4xf32>, %yl: tensor<4x4xf32>, %hl: tensor<4x4xf32>) {
      %1 = stablehlo.dot_general %xl, %gl, contracting_dims = [0] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %2 = stablehlo.dot_general %yl, %hl, contracting_dims = [0] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %3 = stablehlo.add %1, %2 : tensor<4x4xf32>
      %4 = "stablehlo.all_reduce"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<{groups}> : tensor<{gshape}xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
{tail}      sdy.return %5 : tensor<4x4xf32>
    } : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}
"""


def _tp(groups: str = "[[0, 1]]", gshape: str = "1x2", tail: str = "") -> str:
    return (_TP.replace("{groups}", groups).replace("{gshape}", gshape)
            .replace("{tail}", tail or "      %5 = stablehlo.add %4, %4 : tensor<4x4xf32>\n"))


# The reference's output doubled, so both sides compute 2 (x^T g + y^T h): the all-reduce
# itself is the value the sweep merges by the rule.
REF2 = REF.replace("    return %2 : tensor<4x4xf32>",
                   "    %3 = stablehlo.add %2, %2 : tensor<4x4xf32>\n    return %3 : tensor<4x4xf32>")
OK = _tp()
# Each device's all-reduce over itself alone: every summand of the other device missing.
MISSING = _tp("[[0], [1]]", "2x1")
# The all-reduced sum divided by 4 where the reference doubles it (a wrong divisor).
DIVISOR = _tp(tail="      %c = stablehlo.constant dense<4.0> : tensor<4x4xf32>\n"
                   "      %5 = stablehlo.divide %4, %c : tensor<4x4xf32>\n")

# One device's partial sum plus +inf: the all-reduce's value part is still the regrouped
# sum, its class is not finite.
INF = OK.replace("      %3 = stablehlo.add %1, %2 : tensor<4x4xf32>\n",
                 "      %s3 = stablehlo.add %1, %2 : tensor<4x4xf32>\n"
                 "      %i = stablehlo.constant dense<0x7F800000> : tensor<4x4xf32>\n"
                 "      %3 = stablehlo.add %s3, %i : tensor<4x4xf32>\n")
assert INF != OK


def _files(tmp_path: Path, **texts: str) -> dict[str, Path]:
    out = {}
    for name, text in texts.items():
        out[name] = tmp_path / f"{name}.mlir"
        out[name].write_text(text)
    return out


@pytest.fixture
def unfoldings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    n = [0]
    unfold = local.LocalProver._unfold

    def counted(self: local.LocalProver, *args: Any, **kw: Any) -> Any:
        n[0] += 1
        return unfold(self, *args, **kw)

    monkeypatch.setattr(local.LocalProver, "_unfold", counted)
    return n


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    n = [0]
    equal = regroup.Regrouper.equal

    def counted(self: regroup.Regrouper, a: object, b: object) -> bool:
        ok = equal(self, a, b)
        n[0] += ok
        return ok

    monkeypatch.setattr(regroup.Regrouper, "equal", counted)
    return n


@pytest.mark.parametrize("switch", [True, False])
def test_a_regrouped_all_reduce_merges_without_a_local_proof(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             unfoldings: list[int], closed: list[int],
                                                             switch: bool) -> None:
    monkeypatch.setattr(regroup, "REGROUP", switch)
    f = _files(tmp_path, ref=REF2, ok=OK)
    v = verify(f["ref"], f["ok"], cache=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    # On: the 16 all-reduced elements close by the rule (one value on both devices). Off: the one
    # level of `_sum_of_partials` misses them and they are local proofs.
    assert closed[0] == (16 if switch else 0), closed
    assert (unfoldings[0] == 0) == switch, unfoldings


def test_one_level_of_partial_sums_does_not_close_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     unfoldings: list[int]) -> None:
    """The pair needs the rule: with `_sum_of_partials` on and the rule off, local proofs."""
    monkeypatch.setattr(regroup, "REGROUP", False)
    monkeypatch.setattr(cuts, "PARTIAL_SUMS", True)
    f = _files(tmp_path, ref=REF2, ok=OK)
    assert verify(f["ref"], f["ok"], cache=False, shrink=False).verdict == "equivalent"
    assert unfoldings[0] > 0


@pytest.mark.parametrize("bug", ["MISSING", "DIVISOR", "INF"])
def test_wrong_all_reduces_still_differ(tmp_path: Path, bug: str) -> None:
    f = _files(tmp_path, ref=REF2, bug={"MISSING": MISSING, "DIVISOR": DIVISOR, "INF": INF}[bug])
    v = verify(f["ref"], f["bug"], cache=False, shrink=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


# -- the rule itself, on hand-made cut stores: the twins a loosened rule would call equal ---
class _Cuts:
    """A cut store with cut variables defined by hand (what the sweep records)."""

    def __init__(self) -> None:
        alg = FastAlgebra()
        self.terms = alg.store
        self.store = CutStore(alg)
        self.rule = regroup.Regrouper(self.store)

    def var(self, name: str) -> Term:
        return self.terms.var(name, REAL)

    def cut(self, definition: Term, side: str) -> Term:
        v = self.terms.fresh("c", REAL)
        i = v.leaf.id if v.leaf is not None else v.id
        self.store.cuts_by_id[i] = Cut(v, definition, len(self.store.cuts_by_id),
                                       site=Origin(side, "op", "loc", "%v", None))
        return v


def _sums(c: _Cuts, groups: list[list[int]], scale: Fraction | int = 1) -> tuple[Term, Term]:
    """Reference: (x0 w0 + x1 w1) + (x2 w2 + x3 w3), two dots cut apart. Ours: per-device
    partial sums over `groups` of the four products, each cut, then their sum times scale."""
    t = c.terms
    xs = [c.var(f"x{i}") for i in range(4)]
    ws = [c.var(f"w{i}") for i in range(4)]
    prods = [t.mul(x, w) for x, w in zip(xs, ws)]
    d1 = c.cut(t.add(prods[0], prods[1]), "ref")
    d2 = c.cut(t.add(prods[2], prods[3]), "ref")
    ref = c.cut(t.add(d1, d2), "ref")
    parts = [c.cut(t.add(*[prods[i] for i in g]) if len(g) > 1 else prods[g[0]], "other") for g in groups]
    return ref, t.scale(t.add(*parts), scale)


def test_the_rule_proves_a_regrouping() -> None:
    c = _Cuts()
    ref, ours = _sums(c, [[0, 2], [1, 3]])
    assert c.rule.equal(FF(ref, FIN), FF(ours, FIN))


@pytest.mark.parametrize("groups, scale", [
    ([[0, 2], [1]], 1),  # a partial misses a summand
    ([[0, 2], [1, 3], [3]], 1),  # a summand counted twice (a wrong replica group)
    ([[0, 2], [1, 3]], Fraction(1, 2)),  # a wrong divisor
    ([[0, 2], [1, 3]], Fraction(2, 1)),
])
def test_the_rule_keeps_twins_apart(groups: list[list[int]], scale: Fraction) -> None:
    c = _Cuts()
    ref, ours = _sums(c, groups, scale)
    assert not c.rule.equal(FF(ref, FIN), FF(ours, FIN))


def test_the_rule_compares_only_finite_floats() -> None:
    """Equal value terms say nothing when a side may be an infinity or a NaN: the class is
    left to the local proofs."""
    c = _Cuts()
    ref, ours = _sums(c, [[0, 2], [1, 3]])
    assert not c.rule.equal(FF(ref, FIN), FF(ours, NAN))
    k = c.terms.int_(FIN)
    assert not c.rule.equal(FF(ref, FIN), FF(ours, k))
