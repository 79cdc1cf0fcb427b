"""The verifier's decisions on small hand-written programs: proofs, refutations found by
random runs and by the solver, IEEE classes, unsupported ops, signatures."""
from __future__ import annotations

import pytest

import tv_mlir
from conftest import TESTDATA
from tv_mlir.errors import UsageError


def fn(body: str, args: str = "%x: tensor<4xf32>, %y: tensor<4xf32>", result: str = "tensor<4xf32>") -> str:
    return f"func.func @main({args}) -> {result} {{\n{body}\n}}"


X = fn("  return %x : tensor<4xf32>")
DIV_MUL = fn("""  %0 = stablehlo.divide %x, %y : tensor<4xf32>
  %1 = stablehlo.multiply %0, %y : tensor<4xf32>
  return %1 : tensor<4xf32>""")


def test_x_div_y_mul_y_is_refuted_at_y_zero() -> None:
    v = tv_mlir.verify(DIV_MUL, X)
    assert v.verdict == "not-equivalent" and v.exit_code == 1
    c = v.counterexample
    assert c.inputs["arg1"][c.index[0]] == 0
    assert c.ref_value == "nan"


def test_needle_difference_is_found_by_the_solver() -> None:
    # Differs only at x == 3.7: random runs cannot see it, the solver must.
    needle = fn("""  %c = stablehlo.constant dense<3.7> : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %p = stablehlo.compare EQ, %x, %c, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %0 = stablehlo.select %p, %z, %x : tensor<4xi1>, tensor<4xf32>
  return %0 : tensor<4xf32>""")
    v = tv_mlir.verify(X, needle)
    assert v.verdict == "not-equivalent"
    c = v.counterexample
    assert abs(c.inputs["arg0"][c.index[0]] - 3.7) < 1e-6
    assert v.stats["solver_queries"] == 1


def test_reassociation_and_commutation_are_proved() -> None:
    a = fn("""  %0 = stablehlo.add %x, %y : tensor<4xf32>
  %1 = stablehlo.multiply %0, %x : tensor<4xf32>
  return %1 : tensor<4xf32>""")
    b = fn("""  %0 = stablehlo.multiply %x, %x : tensor<4xf32>
  %1 = stablehlo.multiply %y, %x : tensor<4xf32>
  %2 = stablehlo.add %1, %0 : tensor<4xf32>
  return %2 : tensor<4xf32>""")
    v = tv_mlir.verify(a, b)
    assert v.verdict == "equivalent" and v.exit_code == 0


def test_min_as_negated_max_of_negations_is_proved() -> None:
    a = fn("""  %0 = stablehlo.minimum %x, %y : tensor<4xf32>
  return %0 : tensor<4xf32>""")
    b = fn("""  %0 = stablehlo.negate %x : tensor<4xf32>
  %1 = stablehlo.negate %y : tensor<4xf32>
  %2 = stablehlo.maximum %0, %1 : tensor<4xf32>
  %3 = stablehlo.negate %2 : tensor<4xf32>
  return %3 : tensor<4xf32>""")
    assert tv_mlir.verify(a, b).verdict == "equivalent"


def test_uninterpreted_congruence() -> None:
    # tanh(x + y) against tanh(y + x): equal by congruence alone, and tanh is listed.
    a = fn("""  %0 = stablehlo.add %x, %y : tensor<4xf32>
  %1 = stablehlo.tanh %0 : tensor<4xf32>
  return %1 : tensor<4xf32>""")
    b = fn("""  %0 = stablehlo.add %y, %x : tensor<4xf32>
  %1 = stablehlo.tanh %0 : tensor<4xf32>
  return %1 : tensor<4xf32>""")
    v = tv_mlir.verify(a, b)
    assert v.verdict == "equivalent" and v.approximations == ["tanh"]


def test_difference_through_an_approximation_is_confirmed_numerically() -> None:
    # tanh(x) against tanh(y): a real difference that the numeric replay reproduces.
    a = fn("  %0 = stablehlo.tanh %x : tensor<4xf32>\n  return %0 : tensor<4xf32>")
    b = fn("  %0 = stablehlo.tanh %y : tensor<4xf32>\n  return %0 : tensor<4xf32>")
    v = tv_mlir.verify(a, b)
    assert v.verdict == "not-equivalent"
    assert v.counterexample.uses_approximation and v.counterexample.confirmed


def test_unsupported_op_is_unknown_naming_it() -> None:
    a = fn("""  %s = stablehlo.constant dense<2> : tensor<1xi64>
  %0 = stablehlo.rng %x, %x, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>""", args="%x: tensor<f32>", result="tensor<2xf32>")
    v = tv_mlir.verify(a, a)
    assert v.verdict == "unknown" and v.exit_code == 2
    assert v.unsupported[0]["op"] == "stablehlo.rng"
    assert "stablehlo.rng" in v.reason and ":3:" in v.reason  # the location of the op


def test_data_dependent_while_is_unknown() -> None:
    a = fn("""  %c0 = stablehlo.constant dense<0.0> : tensor<f32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<f32>, tensor<f32>
  cond {
    %p = stablehlo.compare LT, %i, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %n = stablehlo.add %i, %one : tensor<f32>
    stablehlo.return %n, %acc : tensor<f32>, tensor<f32>
  }
  return %r#1 : tensor<f32>""", args="%x: tensor<f32>, %y: tensor<f32>", result="tensor<f32>")
    # Unrolled (the whole proof) the trip count is unknown; by induction over the loops
    # (stages/loops.py: the bodies agree on corresponding carried values, and so do the
    # conditions) the loops are proved without it.
    v = tv_mlir.verify(a, a, stages=False)
    assert v.verdict == "unknown"
    assert "while" in v.reason
    v = tv_mlir.verify(a, a)
    assert v.verdict == "equivalent", v.reason
    assert [s["name"].split(": ")[-1] for s in v.stages["list"]] == ["loop body", "loop condition"]
    # A body that adds x per trip where the other doubles the sum: the body stage fails
    # and a random run (y > 0: at least one trip) shows the difference.
    plus_x = a.replace("stablehlo.return %n, %acc", "%acc2 = stablehlo.add %acc, %x : tensor<f32>\n"
                      "    stablehlo.return %n, %acc2")
    doubled = a.replace("stablehlo.return %n, %acc", "%acc2 = stablehlo.add %acc, %acc : tensor<f32>\n"
                     "    stablehlo.return %n, %acc2")
    v = tv_mlir.verify(plus_x, doubled)
    assert v.verdict == "not-equivalent", v.reason
    assert v.stages["failed"]["name"].endswith("loop body") and v.counterexample.confirmed


def test_signature_mismatch_names_both() -> None:
    b = fn("  return %x : tensor<4xf32>", args="%x: tensor<4xf32>")
    with pytest.raises(UsageError) as err:
        tv_mlir.verify(X, b)
    msg = err.value.one_line()
    assert "tensor<4xf32>, tensor<4xf32>" in msg and "(tensor<4xf32>)" in msg


def test_output_shape_mismatch_is_not_equivalent() -> None:
    b = fn("""  %0 = stablehlo.slice %x [0:2] : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>""", result="tensor<2xf32>")
    v = tv_mlir.verify(X, b)
    assert v.verdict == "not-equivalent" and "shapes differ" in v.reason


def test_precision_difference_is_reported_not_refuted() -> None:
    b = fn("""  %0 = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>""", result="tensor<4xbf16>")
    v = tv_mlir.verify(X, b)
    assert v.verdict == "equivalent"
    assert v.precision and "bf16" in v.precision[0]


def test_integer_semantics_are_fixed_width() -> None:
    # i32 is two's complement: (i * 2) / 2 loses the top bit (issue 16).
    args = "%i: tensor<4xi32>"
    a = fn("""  %c = stablehlo.constant dense<2> : tensor<4xi32>
  %0 = stablehlo.multiply %i, %c : tensor<4xi32>
  %1 = stablehlo.divide %0, %c : tensor<4xi32>
  return %1 : tensor<4xi32>""", args=args, result="tensor<4xi32>")
    b = fn("  return %i : tensor<4xi32>", args=args, result="tensor<4xi32>")
    v = tv_mlir.verify(a, b)
    assert v.verdict == "not-equivalent"
    assert abs(int(v.counterexample.inputs["arg0"][v.counterexample.index[0]])) >= 2**30
    c = fn("""  %c = stablehlo.constant dense<2> : tensor<4xi32>
  %0 = stablehlo.divide %i, %c : tensor<4xi32>
  %1 = stablehlo.multiply %0, %c : tensor<4xi32>
  return %1 : tensor<4xi32>""", args=args, result="tensor<4xi32>")
    v = tv_mlir.verify(b, c)
    assert v.verdict == "not-equivalent"
    assert v.counterexample.inputs["arg0"][v.counterexample.index[0]] % 2 != 0


def test_parallel_jobs_give_the_same_verdicts() -> None:
    a = fn("""  %0 = stablehlo.maximum %x, %y : tensor<4xf32>
  %1 = stablehlo.minimum %x, %y : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>""", result="(tensor<4xf32>, tensor<4xf32>)")
    b = fn("""  %0 = stablehlo.maximum %y, %x : tensor<4xf32>
  %1 = stablehlo.minimum %y, %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>""", result="(tensor<4xf32>, tensor<4xf32>)")
    assert tv_mlir.verify(a, b, jobs=2).verdict == "equivalent"
    assert tv_mlir.verify(a, b.replace("minimum %y, %x", "maximum %y, %x"), jobs=2).verdict == "not-equivalent"


def test_totalorder_on_a_computed_nan_is_not_assumed_positive() -> None:
    # 0/0 is -NaN on x86, which TOTALORDER puts below -inf: "d < -inf" is true exactly
    # there. A model that put every NaN above +inf would call this "always false".
    a = fn("""  %d = stablehlo.divide %x, %y : tensor<4xf32>
  %m = stablehlo.constant dense<0xFF800000> : tensor<4xf32>
  %0 = stablehlo.compare LT, %d, %m, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>""", result="tensor<4xi1>")
    b = fn("""  %0 = stablehlo.compare LT, %x, %x, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>""", result="tensor<4xi1>")
    v = tv_mlir.verify(a, b)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c.inputs["arg0"][c.index[0]] == 0 and c.inputs["arg1"][c.index[0]] == 0
    assert any(r.backend == "xla" and r.confirmed for r in c.replay)


def test_unknown_core_is_a_usage_error() -> None:
    with pytest.raises(tv_mlir.UsageError, match="unknown symbolic core"):
        tv_mlir.verify(TESTDATA / "hand/add_commute.a.mlir", TESTDATA / "hand/add_commute.b.mlir", core="z4")
