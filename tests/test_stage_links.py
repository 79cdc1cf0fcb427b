"""What lets a staged proof cut a backward pass: partial-sum links (a gradient accumulator
that is a dp partial sum until the final psum), one name per value (CSE), and stage inputs
whose sign the reference fixes (a softmax denominator a stage divides by)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import capture_stages
from tv_mlir.algebra import NumericAlgebra
from tv_mlir.api import prepare, verify
from tv_mlir.execute.interp import Interpreter
from tv_mlir.ir import Mesh, Sharding, TensorType
from tv_mlir.options import Options
from tv_mlir.passes.normalize import cse
from tv_mlir.stages import lineage
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.finite import NONNEG, POS, signed_values

ROOT = Path(__file__).resolve().parents[1]
STAGES = ROOT / "testdata" / "stages"
QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False)
MESH = Mesh((("dp", 2), ("tp", 2)))


def test_partial_parts_sum_over_the_unreduced_axis_and_replicas_must_agree() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    # devices in mesh order (dp, tp): (0,0) (0,1) (1,0) (1,1); dp unreduced, tp replicated
    s = Sharding(MESH, ((), ()), ("dp",))
    assert np.allclose(lineage._assemble([a, a, b, b], s), a + b)
    assert lineage._assemble([a, b, b, b], s) is None  # tp replicas that differ
    # dp unreduced, tp on dim 0: each tp block is the sum of its two dp parts
    s2 = Sharding(MESH, (("tp",), ()), ("dp",))
    c, d = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    assert np.allclose(lineage._assemble([a, c, b, d], s2), np.concatenate([a + b, c + d]))
    assert lineage._assemble([np.arange(6).reshape(2, 3)] * 4, s) is None  # integer parts: no sum
    layouts = list(lineage._shardings(MESH, 1))
    assert Sharding(MESH, ((),), ("dp",)) in layouts and Sharding(MESH, (("tp",),), ("dp",)) in layouts
    plain = 2 ** 2  # each of the 2 axes on dim 0 or on none, first
    assert all(x.unreduced for x in layouts[plain:]) and not any(x.unreduced for x in layouts[:plain])
    assert len(layouts) == 3 ** 2  # then: dim 0, replicated or summed, at least one summed


DUPLICATES = """
func.func @main(%w: tensor<4xf32>, %x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %a = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
  %b = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
  %c = stablehlo.constant dense<2.0> : tensor<3x4xf32>
  %d = stablehlo.constant dense<2.0> : tensor<3x4xf32>
  %e = stablehlo.constant dense<3.0> : tensor<3x4xf32>
  %p = stablehlo.multiply %a, %x : tensor<3x4xf32>
  %q = stablehlo.multiply %b, %x : tensor<3x4xf32>
  %r = stablehlo.add %p, %c : tensor<3x4xf32>
  %s = stablehlo.add %q, %d : tensor<3x4xf32>
  %t = stablehlo.add %q, %e : tensor<3x4xf32>
  %u = stablehlo.subtract %r, %s : tensor<3x4xf32>
  %v = stablehlo.add %u, %t : tensor<3x4xf32>
  return %v, %s : tensor<3x4xf32>, tensor<3x4xf32>
}
"""


def test_cse_keeps_one_op_per_computation_and_the_values() -> None:
    m = prepare(DUPLICATES, Options())
    c = cse(m)
    names = [op.name for op in c.main.body.ops]
    # a/b, c/d, p/q, r/s merge; the constant 3.0 and t, u, v stay
    assert names.count("stablehlo.broadcast_in_dim") == 1 and names.count("stablehlo.constant") == 2
    assert len(c.main.body.ops) == len(m.main.body.ops) - 4
    sub = next(op for op in c.main.body.ops if op.name == "stablehlo.subtract")
    assert sub.operands[0] == sub.operands[1]  # r - s is now r - r
    assert c.main.body.returns[1] == sub.operands[0]
    rng = np.random.default_rng(1)
    xs = [rng.normal(size=(4,)), rng.normal(size=(3, 4))]
    for got, want in zip(Interpreter(c, NumericAlgebra(), 8).run(xs), Interpreter(m, NumericAlgebra(), 8).run(xs)):
        assert np.allclose(got, want)


def test_cse_leaves_collectives_and_random_bits_apart() -> None:
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "stablehlo.all_reduce"(%x) ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  %b = "stablehlo.all_reduce"(%x) ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  %c = stablehlo.add %a, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
"""
    m = prepare(text, Options())
    assert [op.name for op in cse(m).main.body.ops].count("stablehlo.all_reduce") == 2


def test_sign_facts_of_reference_values() -> None:
    text = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %e = stablehlo.exponential %x : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  %sq = stablehlo.multiply %y, %y : tensor<4xf32>
  %d = stablehlo.subtract %x, %y : tensor<4xf32>
  return %s, %sq, %d : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
"""
    m = prepare(text, Options())
    signs = signed_values(m, True)
    ret = m.main.body.returns
    assert signs[ret[0]] == POS and signs[ret[1]] == NONNEG and ret[2] not in signs
    assert not signed_values(m, False).get(ret[0])  # IEEE inputs: exp(NaN) is no positive value


DIVIDE_REF = """
func.func @main(%a: tensor<4xf32>, %d: tensor<4xf32>) -> tensor<4xf32> {
  %q = stablehlo.divide %a, %d : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %r = stablehlo.multiply %q, %z : tensor<4xf32>
  %s = stablehlo.add %r, %a : tensor<4xf32>
  return %s : tensor<4xf32>
}
"""
DIVIDE_OTHER = """
func.func @main(%a: tensor<4xf32>, %d: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
"""


def test_a_positive_input_makes_its_quotients_finite() -> None:
    """(a / d) * 0 + a is a only where a / d is finite: for d = 0 it is NaN. Known d > 0
    (a stage's softmax denominator) it is a; the constraint is the solver's too, so a
    counterexample at d <= 0 is not found."""
    free = verify(DIVIDE_REF, DIVIDE_OTHER, stages=False, shrink=False, full_size_check="off",
                  second_witness=False)
    assert free.verdict == "not-equivalent"
    known = verify(DIVIDE_REF, DIVIDE_OTHER, stages=False, shrink=False, full_size_check="off",
                   second_witness=False, positive_inputs=(1,))
    assert known.verdict == "equivalent", known.reason
    nonneg = verify(DIVIDE_REF, DIVIDE_OTHER, stages=False, shrink=False, full_size_check="off",
                    second_witness=False, nonnegative_inputs=(1,))
    assert nonneg.verdict == "not-equivalent"  # d = 0 is still allowed


def test_parts_of_a_partial_sum_are_never_signed() -> None:
    f32 = TensorType((4,), "f32")
    stage = SimpleNamespace(ref=SimpleNamespace(main=SimpleNamespace(arg_types=(f32, f32, f32))),
                            slots=("%s", "%t", "%u"), partial=(1,))
    signs = {"%s": POS, "%t": POS, "%u": NONNEG}
    assert stages_run._signed(stage, signs, POS) == (0,)
    assert stages_run._signed(stage, signs, NONNEG) == (2,)


def _captured(monkeypatch: pytest.MonkeyPatch) -> list:
    return capture_stages(monkeypatch)


def test_a_backward_pass_is_cut_at_partial_sum_gradients(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4-layer fwd+bwd stack, tp x dp: the stacked weights' gradients are dp partial
    sums until the final psum, live across every backward layer. Linked as partial sums,
    the backward is cut per layer (no stage holds a whole backward) and every stage holds."""
    seen = _captured(monkeypatch)
    # 69 stage proofs, in this process: worker processes (tested in test_stages.py) would
    # only contend with the suite's own for two cores.
    v = verify(STAGES / "grad_L4.ref.mlir", STAGES / "grad_L4.shardy.mlir", jobs=1, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages["used"] and v.stages.get("failed") is None and v.stages["proved"] > 0
    assert any(s.partial for s in seen)
    assert max(s.other_ops for s in seen) < 200  # the whole backward is ~500 ops


def test_without_partial_links_the_backward_is_one_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the test above guards against: plain layouts only."""
    seen = _captured(monkeypatch)
    plain = lineage._shardings

    def only_plain(mesh: Mesh, rank: int):  # type: ignore[no-untyped-def]
        return (s for s in plain(mesh, rank) if not s.unreduced)

    monkeypatch.setattr(lineage, "_shardings", only_plain)
    monkeypatch.setattr(stages_run, "prove_stage", lambda r, o, opt: {
        "verdict": "equivalent", "reason": "", "time_s": 0.0, "outputs": [], "approximations": [], "precision": []})
    verify(STAGES / "grad_L4.ref.mlir", STAGES / "grad_L4.shardy.mlir", **QUICK)
    assert not any(s.partial for s in seen)
    assert max(s.other_ops for s in seen) > 400


def _global() -> SimpleNamespace:
    return SimpleNamespace(per_device=False, arg_shardings=(), result_shardings=(), num_devices=1)


def test_rounding_links_loosely_and_the_nearest_value_wins() -> None:
    """Deep in a stack, reordered float64 sums drift by up to 1e-8 of a value's scale: such
    a value still links (it was unlinked at 1e-12, leaving the 405B stack one 60 M-element
    stage). Of two reference values within that, the numerically nearest is taken, not the
    nearest in program position: RMSNorm's mean and mean + 1e-6 differ by 1e-9 at a
    scale of 1000. A value 1e-5 away links to nothing."""
    rng = np.random.default_rng(1)
    mean = [1000 + rng.normal(size=(4, 8)) for _ in range(3)]
    ref = {"mean": mean, "mean_eps": [m + 1e-6 for m in mean], "other": [rng.normal(size=(4, 8)) for _ in range(3)]}
    drift = [m + 1e-6 + 1e-8 * rng.normal(size=m.shape) for m in mean]  # 1e-11 of the scale: not exact
    far = [m * (1 + 1e-5) for m in mean]
    other = {"drift": drift, "exact": [m.copy() for m in mean], "far": far}
    rank_r = {"mean": 0.5, "mean_eps": 0.9, "other": 0.1}
    rank_o = {"drift": 0.5, "exact": 0.9, "far": 0.5}
    links = lineage.find(ref, other, _global(), other, ref, rank_r, rank_o)  # type: ignore[arg-type]
    assert links["drift"].ref == "mean_eps"  # though "mean" is at its position
    assert links["exact"].ref == "mean"  # an exact match wins over a nearer loose one
    assert "far" not in links
    assert lineage._error(ref["mean_eps"][0], drift[0]) > lineage.EXACT  # the drift is past the exact test


def test_a_bug_the_random_runs_show_is_lifted_before_any_stage_is_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 4-layer fwd+bwd stack with a bug in layer 3: nothing links past the bug, so the
    last stage runs from it to the outputs (it took 270 s to end unknown). The lineage's
    runs already show the outputs differ: the counterexample is lifted at once, and the
    verdict names that last stage as where the runs first differ, and its first op whose value
    matched no reference value. With the default options, as tests/test_exit_1.py holds
    every bug twin (it leaves this one here: one run serves both): exit 1, confirmed by
    XLA at the original sizes."""
    def no_proofs(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a stage was proved")

    monkeypatch.setattr(stages_run, "_prove_stages", no_proofs)
    v = verify(STAGES / "grad_L4.ref.mlir", STAGES / "grad_L4_bug_layer3.shardy.mlir", timeout_s=60)
    assert v.verdict == "not-equivalent" and v.exit_code == 1, v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes", (c and c.replay, v.reason)
    xla = [r for r in c.replay if r.backend == "xla"]
    assert xla and all(r.confirmed and not r.error for r in xla), c.replay
    failed = v.stages["failed"]
    assert failed["stage"] == v.stages["count"] - 1 and v.stages["proved"] == 0
    assert failed["reason"] == "the random runs differ at its outputs"
    fd = v.counterexample.first_divergence
    assert fd["stage"] == failed["name"]
    # The first op of that stage whose value matched no reference value: the residual add
    # that takes the MLP's unreduced partial sum (gen_depth.py:100, the missing psum).
    assert fd["op"] == "stablehlo.add" and "gen_depth.py:100" in fd["loc"], fd
