"""Rule (k)'s "atoms" attacked (docs/shrinking.md, rule k "atoms"): a count through an
uninterpreted op or max/min was given its argument's degree. Pairs:
testdata/shrink_rules/gen_atoms.py (manifest_atoms.json: a reference, a correct twin and a
bug twin, XLA-checked at the original sizes; every bug differs only on counts the size the
rule picked never reaches). Verdicts are taken with the full-size check and the second
witness off, so that the rules are what keeps the bug visible.

The rule hid three of them (`counts.ATOMS` on: `equivalent`), so it is off by default; the
fourth (`count_pow`) was a power with a constant exponent read as an atom, which the
verifier multiplies out: its degree is now the exponent times its base's, with or without
the switch."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import counts
from tv_mlir.shrink.facts import ProgramFacts
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
ATOMS = json.loads((D / "manifest_atoms.json").read_text())
HIDDEN_BY_ATOMS = ["count_max", "count_max_reduce", "exp_coincide"]


def _files(pair: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.small.ref.mlir"), str(D / f"{pair}.small.{kind}.mlir")


def _plan(pair: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _counted(pair: str) -> int:
    return next(e.verified for e in _plan(pair, "bug").entries if e.where == "x dim 0")


def test_atoms_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {e["pair"] for e in ATOMS} == set(HIDDEN_BY_ATOMS) | {"count_pow"}
    assert all(e["ran_on_xla"] for e in ATOMS)
    for e in ATOMS:
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_atoms_is_off_by_default() -> None:
    assert counts.ATOMS is False


@pytest.mark.parametrize("pair", HIDDEN_BY_ATOMS)
def test_the_atoms_rule_hides_these_bugs(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The evidence that the rule is unsound: with it on, the count class shrinks (64 -> 4
    # or 8) and the bug twin, which XLA shows different at 64, is proved equal there.
    monkeypatch.setattr(counts, "ATOMS", True)
    assert _counted(pair) <= 8
    ref, bug = _files(pair, "bug")
    assert tv_mlir.verify(ref, bug, **RULES_OFF).verdict == "equivalent"


@pytest.mark.parametrize("pair", HIDDEN_BY_ATOMS + ["count_pow"])
def test_the_bugs_are_found_with_the_default_rules(pair: str) -> None:
    # Rule k as it stands: a count through exp or a max of two counts pins the class; a
    # power's degree is its exponent's multiple. Each bug is confirmed at the original sizes.
    ref, ok = _files(pair, "ok")
    _, bug = _files(pair, "bug")
    assert tv_mlir.verify(ref, ok, **RULES_OFF).verdict == "equivalent"
    v = tv_mlir.verify(ref, bug, **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"


@pytest.mark.parametrize("atoms", [False, True])
def test_a_power_with_a_constant_exponent_is_a_product(atoms: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # lax.pow(k, 5.0): the verifier multiplies it out (k^5), so it has degree 5 in the count:
    # D + T d = 5 + 2 x 2 = 9, so 16 of 64; read as an atom it had degree 1 (T + 1 = 3, so 4),
    # where k^5 and its interpolant on 0..4 agree.
    monkeypatch.setattr(counts, "ATOMS", atoms)
    ref, bug = _files("count_pow", "bug")
    fr = ProgramFacts.of("ref", _raw(ref, prepare(ref, Options())).module)
    seeds = {op.results[0] for op in fr.ops() if op.name == "stablehlo.reduce"}
    assert counts.outer_degree(fr, seeds)[0] == 5
    assert _counted("count_pow") == 16


def test_newton_degree_of_a_power_reads_its_exponent() -> None:
    # sum(x^9) has degree 9 (p9 is no polynomial of p1..p8 in 9 or more variables); the
    # degree rule had capped a constant exponent at 8, so the class shrank to 8.
    text = (D / "count_pow.small.ref.mlir").read_text()
    mod = """module @jit_f {
  func.func public @main(%arg0: tensor<64xf32>) -> tensor<f32> {
    %cst = stablehlo.constant dense<E> : tensor<64xf32>
    %0 = stablehlo.power %arg0, %cst : tensor<64xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
"""
    assert text  # the fixture folder is there
    for e, degree, size in (("9.000000e+00", 9, 16), ("3.000000e+00", 8, 8)):
        m = mod.replace("E", e)
        p = plan(_raw(m, prepare(m, Options())).module, _raw(m, prepare(m, Options())).module)
        assert [(x.verified, x.argument) for x in p.entries] == [(size, f"Newton (degree {degree})")]


def test_a_power_s_constant_term_scales_its_count(tmp_path: Path) -> None:
    """Rule a's scaled counts through a power (constant_terms.Scales): sum((0.75 + 0 x)^2 +
    x) is 0.5625 n + sum(x), equal to sum(x) + 4.5 at n = 8 only. The power's constant term
    is the e-fold product of its base's (0.5625), so n is ordered against 4.5 / 0.5625 = 8
    and stays off 8; read as no constant term, 16 shrank to 8 and the bug was equivalent."""
    ref = tmp_path / "ref.mlir"
    bug = tmp_path / "bug.mlir"
    ref.write_text("""module @r {
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<f32> {
    %z = stablehlo.constant dense<0.000000e+00> : tensor<16xf32>
    %c = stablehlo.constant dense<7.500000e-01> : tensor<16xf32>
    %e = stablehlo.constant dense<2.000000e+00> : tensor<16xf32>
    %0 = stablehlo.multiply %arg0, %z : tensor<16xf32>
    %1 = stablehlo.add %0, %c : tensor<16xf32>
    %2 = stablehlo.power %1, %e : tensor<16xf32>
    %3 = stablehlo.add %2, %arg0 : tensor<16xf32>
    %i = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %i) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    return %4 : tensor<f32>
  }
}
""")
    bug.write_text("""module @b {
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<f32> {
    %i = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%arg0 init: %i) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    %k = stablehlo.constant dense<4.500000e+00> : tensor<f32>
    %5 = stablehlo.add %4, %k : tensor<f32>
    return %5 : tensor<f32>
  }
}
""")
    v = tv_mlir.verify(ref, bug, cache=False, **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
