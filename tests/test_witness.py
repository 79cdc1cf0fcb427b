"""Counterexamples you can trust: minimised, replayed on XLA (`confirmed` means XLA shows
the difference), completed near a model that does not reproduce, located at the first
diverging op; approximations alone never give not-equivalent; precision findings."""
from __future__ import annotations

import numpy as np
import pytest

import tv_mlir
from conftest import TESTDATA
from tv_mlir import driver, report
from tv_mlir.verdict import Counterexample
from tv_mlir.witness import settle as witness

SHARDED = TESTDATA / "sharded"


def mod(body: str, args: str = "%x: tensor<4xf32>", result: str = "tensor<4xf32>") -> str:
    return f"module {{\n func.func public @main({args}) -> {result} {{\n{body}\n }}\n}}\n"


def _witness_of(monkeypatch, a, b):
    """The Witness the driver builds for the first differing element (settle is stubbed)."""
    seen = {}

    def spy(cex, w, thorough=True):
        seen["w"] = w
        return ("unknown", "spied")

    monkeypatch.setattr(driver, "settle", spy)
    tv_mlir.verify(a, b)
    monkeypatch.undo()
    return seen["w"]


def test_witness_is_minimised_confirmed_on_xla_and_located() -> None:
    v = tv_mlir.verify(SHARDED / "mlp_tp.ref.mlir", SHARDED / "mlp_tp_bug_missing_psum.shardy.mlir")
    c = v.counterexample
    assert v.verdict == "not-equivalent" and c.minimized and c.confirmed
    nonzero = sum(int(np.count_nonzero(np.array(x, dtype=float))) for x in c.inputs.values())
    assert nonzero <= 3, c.inputs
    assert all(float(x) == int(x) for arr in c.inputs.values() for x in np.ravel(np.array(arr, dtype=float)))
    # The partial product that never gets all-reduced.
    assert c.first_divergence["op"] == "stablehlo.dot_general" and "gen_sharded.py" in c.first_divergence["loc"]


@pytest.mark.parametrize("plan,bug,op", [
    ("dp_train_step", "dp_train_step_bug_psum_grads", "stablehlo.all_reduce"),
    ("attn_tp", "attn_tp_bug_wrong_axis", "stablehlo.all_reduce"),
])
def test_first_divergence_names_the_wrong_collective(plan: str, bug: str, op: str) -> None:
    v = tv_mlir.verify(SHARDED / f"{plan}.ref.mlir", SHARDED / f"{bug}.gspmd.mlir")
    fd = v.counterexample.first_divergence
    assert fd["op"] == op and fd["program"].endswith(f"{bug}.gspmd.mlir")


def test_first_divergence_can_be_in_the_reference() -> None:
    # x / y * y against x: the other program is the input itself; the reference's divide
    # is where they part.
    v = tv_mlir.verify(TESTDATA / "pairs/div_mul.a.mlir", TESTDATA / "pairs/div_mul.b.mlir")
    c = v.counterexample
    assert c.confirmed and c.ref_value == "nan"
    assert c.first_divergence["op"] == "stablehlo.divide" and c.first_divergence["program"].endswith("div_mul.a.mlir")


def test_needle_witness_is_unique_per_element() -> None:
    x = mod("  return %x : tensor<f32>", "%x: tensor<f32>", "tensor<f32>")
    needle = mod("""  %c = stablehlo.constant dense<3.5> : tensor<f32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.compare EQ, %x, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %0 = stablehlo.select %p, %z, %x : tensor<i1>, tensor<f32>
  return %0 : tensor<f32>""", "%x: tensor<f32>", "tensor<f32>")
    c = tv_mlir.verify(x, needle).counterexample
    assert c.inputs["arg0"] == 3.5 and c.unique is True and c.confirmed
    c2 = tv_mlir.verify(TESTDATA / "pairs/div_mul.a.mlir", TESTDATA / "pairs/div_mul.b.mlir").counterexample
    assert c2.unique is False  # any x works at y == 0


def test_a_second_witness_next_to_the_first_needs_no_solver(monkeypatch) -> None:
    # x / y * y against x differs for every x at y == 0: a point next to the witness shows
    # it exactly, and the solver (up to 2 s a verdict) is not asked.
    asked = []
    monkeypatch.setattr(witness, "solve", type("Solve", (), {"satisfiable": staticmethod(
        lambda *args, **kw: asked.append(1) or None)}))
    c = tv_mlir.verify(TESTDATA / "pairs/div_mul.a.mlir", TESTDATA / "pairs/div_mul.b.mlir").counterexample
    assert c.unique is False and not asked


def test_the_bindings_kept_between_checks_are_those_built_afresh(monkeypatch) -> None:
    # The exact check rebinds only the input elements that changed since its last point
    # (minimisation moves a few of thousands): a random walk that also moves elements back
    # gets the bindings `environment` builds from scratch at every step.
    sig = "(%x: tensor<3xf32>, %i: tensor<2xi32>) -> tensor<3xf32>"
    body = """  %s = stablehlo.slice %i [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %c = stablehlo.convert %s : (tensor<1xi32>) -> tensor<1xf32>
  %b = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<1xf32>) -> tensor<3xf32>
  %0 = stablehlo.OP %x, %b : tensor<3xf32>
  return %0 : tensor<3xf32>"""
    checked = []

    def walk(cex, w, thorough=True):  # in the verification: its term store closes at its end
        rng = np.random.default_rng(1)
        point = [np.zeros(w.inputs[0].shape), np.zeros(w.inputs[1].shape, dtype=np.int64)]
        kept = witness.Bindings(w.inputs, w.types)
        for _ in range(40):
            point = [p.copy() for p in point]
            for _ in range(rng.integers(1, 3)):
                k = int(rng.integers(2))
                point[k].reshape(-1)[rng.integers(point[k].size)] = rng.integers(-2, 3)
            got = kept.at(point)
            want = witness.environment(w.inputs, point, w.types)
            assert {i: str(v[1]) for i, v in got.items()} == {i: str(v[1]) for i, v in want.items()}
        # A value outside an input's domain (NaN for a finite real input) is no witness,
        # not an error, and the next point is bound afresh.
        nan, one = np.full(point[0].shape, np.nan), np.ones(point[1].shape, dtype=np.int64)
        assert witness.exact_difference(w, [nan, point[1]]) is None
        assert witness.exact_difference(w, [point[0], one]) is not None
        checked.append([p.shape for p in point])
        return ("unknown", "checked")

    monkeypatch.setattr(driver, "settle", walk)
    tv_mlir.verify(f"func.func @main{sig} {{\n{body.replace('OP', 'add')}\n}}\n",
                   f"func.func @main{sig} {{\n{body.replace('OP', 'subtract')}\n}}\n", shrink=False)
    assert checked == [[(3,), (2,)]]


def test_minimisation_keeps_a_positive_input_positive() -> None:
    # x against x + 1 differs everywhere; with x known positive (a stage's cut value) the
    # minimised witness is 1, not 0, which such an input never holds.
    plus_one = mod("""  %c = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.add %x, %c : tensor<f32>
  return %0 : tensor<f32>""", "%x: tensor<f32>", "tensor<f32>")
    x = mod("  return %x : tensor<f32>", "%x: tensor<f32>", "tensor<f32>")
    assert tv_mlir.verify(x, plus_one, positive_inputs=(0,)).counterexample.inputs["arg0"] == 1.0
    assert tv_mlir.verify(x, plus_one, nonnegative_inputs=(0,)).counterexample.inputs["arg0"] == 0.0


CAST_ABOVE = """  %c = stablehlo.constant dense<126> : tensor<i8>
  %z = stablehlo.constant dense<0> : tensor<i8>
  %p = stablehlo.compare GT, %x, %c, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
  %0 = stablehlo.select %p, %z, %x : tensor<i1>, tensor<i8>
  return %0 : tensor<i8>"""
HALF_OR_NEGATIVE = """  %c = stablehlo.constant dense<0.5> : tensor<f32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.compare EQ, %x, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %n = stablehlo.compare LT, %x, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %q = stablehlo.or %p, %n : tensor<i1>
  %0 = stablehlo.select %q, %z, %x : tensor<i1>, tensor<f32>
  return %0 : tensor<f32>"""


@pytest.mark.parametrize("dtype,body,opts,needle", [
    # In i8 only x == 127 differs; 128 would too, but is no i8: the point next to the
    # witness steps down, not out of the type (stepping up says `unique is False`).
    ("i8", CAST_ABOVE, {}, 127),
    # A positive input (a stage's cut value): only 0.5 differs among positives; the
    # negatives that do too are outside the domain (a step that may cross 0 says False).
    ("f32", HALF_OR_NEGATIVE, {"positive_inputs": (0,)}, 0.5),
])
def test_a_point_next_to_the_witness_stays_in_the_inputs_domain(dtype: str, body: str, opts: dict,
                                                                   needle: float) -> None:
    x = mod(f"  return %x : tensor<{dtype}>", f"%x: tensor<{dtype}>", f"tensor<{dtype}>")
    c = tv_mlir.verify(x, mod(body, f"%x: tensor<{dtype}>", f"tensor<{dtype}>"), **opts).counterexample
    assert c.inputs["arg0"] == needle and c.unique is True


def test_pythagoras_through_uninterpreted_sine_is_never_not_equivalent() -> None:
    # sin^2 + cos^2 = 1 only for the real functions: the solver's model is not
    # realisable, no nearby input reproduces it, so the verdict is unknown.
    a = mod("""  %s = stablehlo.sine %x : tensor<4xf32>
  %c = stablehlo.cosine %x : tensor<4xf32>
  %s2 = stablehlo.multiply %s, %s : tensor<4xf32>
  %c2 = stablehlo.multiply %c, %c : tensor<4xf32>
  %0 = stablehlo.add %s2, %c2 : tensor<4xf32>
  return %0 : tensor<4xf32>""")
    b = mod("""  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  return %one : tensor<4xf32>""")
    v = tv_mlir.verify(a, b, timeout_s=20)
    assert v.verdict == "unknown", v.reason
    assert "sine" in v.approximations and "cosine" in v.approximations


def test_model_completion_searches_near_a_model_that_does_not_reproduce(monkeypatch) -> None:
    # exp(x) against exp(x) * (x*x - x + 1): equal only at x = 0 and x = 1. Start a
    # counterexample at x = 1 (what an uninterpreted exp allows a solver model to be):
    # neither our interpreter nor XLA shows a difference there; a nearby input must.
    a = mod("""  %0 = stablehlo.exponential %x : tensor<1xf32>
  return %0 : tensor<1xf32>""", "%x: tensor<1xf32>", "tensor<1xf32>")
    b = mod("""  %e = stablehlo.exponential %x : tensor<1xf32>
  %one = stablehlo.constant dense<1.0> : tensor<1xf32>
  %x2 = stablehlo.multiply %x, %x : tensor<1xf32>
  %d = stablehlo.subtract %x2, %x : tensor<1xf32>
  %p = stablehlo.add %d, %one : tensor<1xf32>
  %0 = stablehlo.multiply %e, %p : tensor<1xf32>
  return %0 : tensor<1xf32>""", "%x: tensor<1xf32>", "tensor<1xf32>")
    w = _witness_of(monkeypatch, a, b)
    cex = Counterexample({"arg0": [1.0]}, 0, [0], 2.718, 2.718, uses_approximation=True)
    verdict, _ = witness.settle(cex, w)
    assert verdict == "not-equivalent" and cex.completed and cex.confirmed
    assert cex.inputs["arg0"] not in ([1.0], [0.0])


BF16_SUM = mod("""  %c = stablehlo.convert %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %z = stablehlo.constant dense<0.0> : tensor<bf16>
  %0 = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %1 = stablehlo.convert %0 : (tensor<4xbf16>) -> tensor<4xf32>
  return %1 : tensor<4xf32>""", "%x: tensor<4x8xf32>")
F32_SUM = mod("""  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>""", "%x: tensor<4x8xf32>")


def test_precision_findings_name_the_ops_without_changing_the_verdict() -> None:
    v = tv_mlir.verify(F32_SUM, BF16_SUM)
    assert v.verdict == "equivalent"
    assert any("stablehlo.reduce" in p and "bf16" in p and "f32" in p for p in v.precision), v.precision
    strict = tv_mlir.verify(F32_SUM, BF16_SUM, strict_dtypes=True)
    assert strict.verdict == "not-equivalent" and "--strict-dtypes" in strict.reason
    same = tv_mlir.verify(F32_SUM, F32_SUM, strict_dtypes=True)
    assert same.verdict == "equivalent" and not same.precision


BF16_PSUM = """
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["tp"=4]>
  func.func public @main(%x: tensor<2x8xf32>) -> tensor<2xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{}, {"tp"}]>] out_shardings=[<@mesh, [{}]>] manual_axes={"tp"} (%a: tensor<2x2xf32>) {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %s = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
      %h = stablehlo.convert %s : (tensor<2xf32>) -> tensor<2xbf16>
      %r = "stablehlo.all_reduce"(%h) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%p: tensor<bf16>, %q: tensor<bf16>):
        %t = stablehlo.add %p, %q : tensor<bf16>
        stablehlo.return %t : tensor<bf16>
      }) : (tensor<2xbf16>) -> tensor<2xbf16>
      %f = stablehlo.convert %r : (tensor<2xbf16>) -> tensor<2xf32>
      sdy.return %f : tensor<2xf32>
    } : (tensor<2x8xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""
SUM_ROWS = mod("""  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x8xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>""", "%x: tensor<2x8xf32>", "tensor<2xf32>")


def test_bf16_all_reduce_is_a_precision_finding() -> None:
    v = tv_mlir.verify(SUM_ROWS, BF16_PSUM)
    assert v.verdict == "equivalent", v.reason
    assert any(p.startswith("stablehlo.all_reduce") and "bf16" in p for p in v.precision), v.precision
    assert tv_mlir.verify(SUM_ROWS, BF16_PSUM, strict_dtypes=True).verdict == "not-equivalent"


def test_an_overflow_on_xla_is_not_a_difference_of_the_reals(monkeypatch) -> None:
    # Softmax with and without the max shift are equal over the reals; at inputs near
    # 100, exp overflows f32 and XLA shows NaN against 1.0. That must not make a witness.
    w = _witness_of(monkeypatch, TESTDATA / "pairs/softmax_shift.a.mlir", TESTDATA / "pairs/softmax_shift.b.mlir")
    big = [np.full(t.shape, 100.0) for t in w.types]
    cex = Counterexample({n: x.tolist() for n, x in zip(w.names, big)}, w.obligation.output,
                         list(w.obligation.global_index(w.index)), 1.0, "nan", uses_approximation=True)
    replays = witness.replays(w, big)
    assert any(r.backend == "xla" and r.confirmed for r in replays), "XLA overflows here"
    verdict, _ = witness.settle(cex, w)
    assert verdict == "unknown"


def test_a_value_moved_to_the_wrong_place_is_named_with_both_positions() -> None:
    v = tv_mlir.verify(SHARDED / "ring_matmul.ref.mlir", SHARDED / "ring_matmul_bug_direction.shardy.mlir")
    fd = v.counterexample.first_divergence
    assert fd["moved"] and fd["op"] is None
    assert fd["holds"]["value"] == fd["expected"]["value"] and fd["holds"]["index"] != fd["expected"]["index"]
    assert "data moved to the wrong place" in report.to_text(v)


def test_a_wrong_permute_inside_a_loop_is_blamed_inside_the_loop(monkeypatch) -> None:
    # The fori_loop of 3 trips is unrolled (passes/unroll.py), so the divergence is named in
    # the loop's body: the next trip's `h @ w` on the device the permute fed wrongly
    # (gen_sharded.py's `step`), not the whole while loop.
    v = tv_mlir.verify(SHARDED / "pipeline_ppermute.ref.mlir", SHARDED / "pipeline_ppermute_bug_direction.gspmd.mlir")
    fd = v.counterexample.first_divergence
    assert fd["op"] == "stablehlo.dot_general" and "gen_sharded.py:400:" in fd["loc"] and "device" in fd, fd
    # Kept as a loop (no unrolling), the loop itself is blamed.
    from tv_mlir.passes import unroll

    monkeypatch.setattr(unroll, "MAX_TRIPS", 0)
    kept = tv_mlir.verify(SHARDED / "pipeline_ppermute.ref.mlir", SHARDED / "pipeline_ppermute_bug_direction.gspmd.mlir")
    fd = kept.counterexample.first_divergence
    assert fd["op"] == "stablehlo.while" and "device" in fd, fd


def test_only_the_verdicts_counterexample_is_minimised(monkeypatch) -> None:
    # Two outputs differ; minimising the second one's witness too only costs time (a
    # missing psum reaching 7 outputs spent 35 s there).
    from tv_mlir.witness import settle as settle_mod

    sig = "(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)"
    a = f"""func.func @main{sig} {{
  %0 = stablehlo.add %x, %y : tensor<4xf32>
  %1 = stablehlo.multiply %x, %y : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}}
"""
    b = a.replace("stablehlo.add", "stablehlo.subtract").replace("stablehlo.multiply %x, %y", "stablehlo.add %x, %x")
    calls = []
    orig = settle_mod.minimize
    monkeypatch.setattr(settle_mod, "minimize", lambda *args, **kw: calls.append(1) or orig(*args, **kw))
    v = tv_mlir.verify(a, b)
    assert v.verdict == "not-equivalent" and v.counterexample.minimized
    assert [o.verdict for o in v.outputs] == ["not-equivalent", "not-equivalent"]
    assert len(calls) == 1


def test_replay_inputs_are_narrowed_to_the_entry_types_only() -> None:
    # The witness goes to the XLA child at the program's own element types (half the bytes
    # of float64 for an f32 program); an f64 or Boolean input keeps its type.
    from tv_mlir.frontend.read import load_module_mlir
    from tv_mlir.witness.replay import at_entry_dtypes

    m = load_module_mlir(mod("  return %x : tensor<2xf32>",
                             "%x: tensor<2xf32>, %i: tensor<2xi8>, %d: tensor<2xf64>, %b: tensor<2xi1>",
                             "tensor<2xf32>"), "m")
    got = at_entry_dtypes(m.module, [np.array([0.1, 2.0]), np.array([-1, 300]), np.array([0.1, 1.0]),
                                     np.array([True, False])])
    assert [a.dtype.name for a in got] == ["float32", "int8", "float64", "bool"]
    assert got[0][0] == np.float32(0.1) and got[1][1] == np.int8(np.int64(300).astype(np.int8))


def test_an_f64_needle_finer_than_f32_is_confirmed_at_f64() -> None:
    # Only x == 1 + 2^-40 differs, which f32 rounds to 1: XLA sees the difference only
    # when the f64 witness reaches it as f64 (narrowing every float input fails this).
    sig = ("%x: tensor<f64>", "tensor<f64>")
    needle = mod("""  %c = stablehlo.constant dense<1.0000000000009095> : tensor<f64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %p = stablehlo.compare EQ, %x, %c, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
  %0 = stablehlo.select %p, %z, %x : tensor<i1>, tensor<f64>
  return %0 : tensor<f64>""", *sig)
    v = tv_mlir.verify(mod("  return %x : tensor<f64>", *sig), needle)
    c = v.counterexample
    assert v.verdict == "not-equivalent" and c.confirmed and c.inputs["arg0"] == 1 + 2.0 ** -40, (v.reason, c)
