"""Staged proofs (tv_mlir/stages): cutting, lineage, structural hashing, memoization, the
proof cache, the executors, and the soundness of the chain (a stage's inputs that may be
+-inf or NaN; a stage that fails only on unreachable inputs)."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tv_mlir.algebra import NumericAlgebra
from tv_mlir.api import prepare, verify
from tv_mlir.errors import UsageError
from tv_mlir.execute.interp import Interpreter
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.ir import Block, Module, TensorType
from tv_mlir.options import Options
from tv_mlir.prove.fingerprints import random_inputs
from tv_mlir.report import to_text
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.finite import finite_values
from tv_mlir.stages.flat import flatten
from tv_mlir.stages.hashing import stage_hash

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "testdata" / "core"
SHARDED = ROOT / "testdata" / "sharded"
# stage_min_elements=0: these pairs are small enough to be proved whole by default.
QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0)

# x / w is +inf at w = 0 (finite inputs): the reference's d - d is then NaN, the other's
# select(d == d, 0, 0) is 0. Cut after d with d a finite free variable, every stage holds.
IEEE_REF = """
func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.multiply %x, %x : tensor<4xf32>
  %b = stablehlo.add %a, %x : tensor<4xf32>
  %d = stablehlo.divide %b, %w : tensor<4xf32>
  %e = stablehlo.subtract %d, %d : tensor<4xf32>
  %f = stablehlo.add %e, %x : tensor<4xf32>
  %g = stablehlo.multiply %f, %x : tensor<4xf32>
  %h = stablehlo.add %g, %a : tensor<4xf32>
  return %h : tensor<4xf32>
}
"""
IEEE_OTHER = """
func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.multiply %x, %x : tensor<4xf32>
  %b = stablehlo.add %a, %x : tensor<4xf32>
  %d = stablehlo.divide %b, %w : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %c = stablehlo.compare EQ, %d, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %e = stablehlo.select %c, %z, %z : tensor<4xi1>, tensor<4xf32>
  %f = stablehlo.add %e, %x : tensor<4xf32>
  %g = stablehlo.multiply %f, %x : tensor<4xf32>
  %h = stablehlo.add %g, %a : tensor<4xf32>
  return %h : tensor<4xf32>
}
"""

# p = x*x + 1 >= 1, so max(p, 0.5) is p: equal programs. A stage that takes p as a free
# input cannot know p >= 1 and fails; the whole proof decides.
UNREACHABLE_REF = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %half = stablehlo.constant dense<0.5> : tensor<4xf32>
  %a = stablehlo.multiply %x, %x : tensor<4xf32>
  %p = stablehlo.add %a, %one : tensor<4xf32>
  %q = stablehlo.maximum %p, %half : tensor<4xf32>
  %r = stablehlo.multiply %q, %x : tensor<4xf32>
  %s = stablehlo.add %r, %x : tensor<4xf32>
  %t = stablehlo.multiply %s, %s : tensor<4xf32>
  return %t : tensor<4xf32>
}
"""
UNREACHABLE_OTHER = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %x : tensor<4xf32>
  %p = stablehlo.add %a, %one : tensor<4xf32>
  %r = stablehlo.multiply %p, %x : tensor<4xf32>
  %s = stablehlo.add %r, %x : tensor<4xf32>
  %t = stablehlo.multiply %s, %s : tensor<4xf32>
  return %t : tensor<4xf32>
}
"""


def _pair(ref: Path, other: Path) -> tuple[Module, Module]:
    opts = Options()
    r, o = prepare(str(ref), opts), prepare(str(other), opts)
    check_signatures(r, o)
    return r, o


@pytest.mark.parametrize("form", ["decoder_L1.shardy", "decoder_L1.gspmd", "attn_tp.partitioned"])
def test_flat_form_computes_the_same(form: str) -> None:
    """The per-device entry made of a manual computation or a GSPMD section (or XLA's own
    per-device module) computes the program's function."""
    folder = CORE if form.startswith("decoder") else SHARDED
    ref_name = form.split(".")[0] + ".ref.mlir"
    _, other = _pair(folder / ref_name, folder / f"{form}.mlir")
    flat = flatten(other)
    assert flat.ok, flat.reason
    assert flat.module.per_device
    inputs = random_inputs(other.global_arg_types())[1]
    want = Interpreter(other, NumericAlgebra()).run(inputs)
    got = Interpreter(flat.module, NumericAlgebra()).run(inputs)
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_partial_manual_computation_is_not_flattened() -> None:
    _, other = _pair(SHARDED / "mlp_partial_manual.ref.mlir", SHARDED / "mlp_partial_manual.shardy.mlir")
    assert "some of the mesh axes" in flatten(other).reason


def _stages(ref: Path, other: Path):
    r, o = _pair(ref, other)
    cut = stages_run._cut(r, o, Options(stage_min_elements=0), None)
    stages, why = cut.stages, cut.why
    assert stages, why
    return stages


def test_stage_hash_ignores_names_and_sees_constants_and_layouts() -> None:
    stages = _stages(CORE / "decoder_L2.ref.mlir", CORE / "decoder_L2.shardy.mlir")
    s = next(s for s in stages if any(op.name == "stablehlo.constant" for op in s.ref.main.body.ops))
    h = stage_hash(s.ref, s.other)

    def renamed(m: Module) -> Module:
        body = m.main.body
        table = {v: f"%zz{v[1:]}" for v in (*body.args, *(r for op in body.ops for r in op.results))}
        ops = [replace(op, operands=tuple(table.get(v, v) for v in op.operands),
                       results=tuple(table[v] for v in op.results), loc="elsewhere") for op in body.ops]
        new = Block(tuple(table[a] for a in body.args), body.arg_types, ops, tuple(table.get(v, v) for v in body.returns))
        return replace(m, funcs={m.entry: replace(m.main, body=new)})

    assert stage_hash(renamed(s.ref), renamed(s.other)) == h
    k = next(i for i, op in enumerate(s.ref.main.body.ops) if op.name == "stablehlo.constant")
    ops = list(s.ref.main.body.ops)
    ops[k] = replace(ops[k], attrs={**ops[k].attrs, "value": np.asarray(ops[k].attrs["value"]) + 1})
    changed = replace(s.ref, funcs={s.ref.entry: replace(s.ref.main, body=replace(s.ref.main.body, ops=ops))})
    assert stage_hash(changed, s.other) != h
    split = [(s, i) for s in stages for i, x in enumerate(s.other.arg_shardings) if x is not None and any(x.dims)]
    sharded, k = split[0]
    shards = list(sharded.other.arg_shardings)
    shards[k] = replace(shards[k], dims=((),) * len(shards[k].dims))  # the same block, now replicated
    assert stage_hash(sharded.ref, replace(sharded.other, arg_shardings=tuple(shards))) != \
        stage_hash(sharded.ref, sharded.other)


def test_identical_layers_are_proved_once(tmp_path: Path) -> None:
    """Two and four identical layers need the same proofs: the extra layers are reused."""
    counts = {}
    for layers in (2, 4):
        v = verify(str(CORE / f"decoder_L{layers}.ref.mlir"), str(CORE / f"decoder_L{layers}.shardy.mlir"),
                   cache=False, **QUICK)
        assert v.verdict == "equivalent", v.reason
        st = v.stages
        assert st["used"] and st["cached"] == 0
        assert st["proved"] + st["reused"] == st["count"]
        counts[layers] = st
    assert counts[4]["count"] > counts[2]["count"]
    assert counts[4]["proved"] == counts[2]["proved"]
    assert counts[4]["reused"] > counts[2]["reused"]


def test_warm_cache_proves_nothing_and_corrupt_entries_are_proved_again(tmp_path: Path) -> None:
    args = (str(CORE / "decoder_L1.ref.mlir"), str(CORE / "decoder_L1.shardy.mlir"))
    cold = verify(*args, cache_dir=str(tmp_path), **QUICK)
    assert cold.verdict == "equivalent" and cold.stages["proved"] > 0
    # One entry per proved stage, and the pair's lineage (stages/reuse.py).
    files = sorted(f for f in tmp_path.rglob("*.json") if '"lineage"' not in f.read_text())
    assert len(files) == cold.stages["proved"]
    assert len(list(tmp_path.rglob("*.json"))) == len(files) + 1
    warm = verify(*args, cache_dir=str(tmp_path), **QUICK)
    assert warm.verdict == "equivalent"
    assert warm.stages["proved"] == 0 and warm.stages["cached"] == cold.stages["proved"]
    for f in files[:3]:
        f.write_text("{not json")
    again = verify(*args, cache_dir=str(tmp_path), **QUICK)
    assert again.verdict == "equivalent" and again.stages["proved"] == 3
    off = tmp_path / "off"
    verify(*args, cache_dir=str(off), cache=False, **QUICK)
    assert not off.exists()


def test_a_cut_value_that_may_be_infinite_is_an_ieee_input() -> None:
    v = verify(IEEE_REF, IEEE_OTHER, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.stages["used"] and v.stages["failed"]["verdict"] == "not-equivalent"
    # Widened back to the inputs, the span still divides by a w that may be 0: no span
    # covers the failed stage, and the whole proof gives the verdict.
    spans = v.stages["widened"]
    assert spans and all(w["verdict"] == "not-equivalent" for w in spans), spans
    assert v.stages["whole"] == "not-equivalent"


def test_without_ieee_cut_inputs_the_chain_would_be_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the test above guards against: every cut value taken as finite."""
    real = stages_run.finite_and_signed

    def every_value_finite(m, f, decided=None, input_signs=()):  # type: ignore[no-untyped-def]
        return (set(m.main.body.args) | {r for op in m.main.body.ops for r in op.results},
                real(m, f, decided, input_signs)[1])

    monkeypatch.setattr(stages_run, "finite_and_signed", every_value_finite)
    v = verify(IEEE_REF, IEEE_OTHER, cache=False, **QUICK)
    assert v.verdict == "equivalent"  # wrong: what the IEEE inputs prevent


def test_finite_lattice_facts() -> None:
    r, _ = _pair(CORE / "decoder_L1.ref.mlir", CORE / "decoder_L1.shardy.mlir")
    fin = finite_values(r, True)
    names = {op.name: op.results[0] for op in r.main.body.ops if op.results}
    # rsqrt of mean(x^2) + eps, exp, and the softmax division by a sum of exps are finite
    for op_name in ("stablehlo.rsqrt", "stablehlo.exponential", "stablehlo.divide"):
        assert names[op_name] in fin, op_name
    assert not finite_values(r, False) & {names["stablehlo.rsqrt"]}  # IEEE inputs: nothing is
    ieee_ref = prepare(IEEE_REF, Options())
    d = next(op.results[0] for op in ieee_ref.main.body.ops if op.name == "stablehlo.divide")
    assert d not in finite_values(ieee_ref, True)


def test_a_stage_that_fails_on_unreachable_inputs_is_proved_with_the_stages_before_it() -> None:
    """The stage that takes p = x*x + 1 as any real fails (max(p, 0.5) is not p at p = 0);
    proved again as a span from x, p >= 1 is computed and the chain holds without the
    whole proof."""
    v = verify(UNREACHABLE_REF, UNREACHABLE_OTHER, cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    st = v.stages
    assert st["used"] and "whole" not in st and "failed" not in st
    assert st["covered"]["verdict"] == "not-equivalent"
    spans = st["widened"]
    assert spans[-1]["verdict"] == "equivalent" and all(w["verdict"] != "equivalent" for w in spans[:-1])
    assert "longer span" in v.reason and "(widened): equivalent" in to_text(v)


def test_without_widening_the_failed_stage_sends_the_pair_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages_run, "MAX_WIDEN", 0)
    v = verify(UNREACHABLE_REF, UNREACHABLE_OTHER, cache=False, **QUICK)
    whole = verify(UNREACHABLE_REF, UNREACHABLE_OTHER, stages=False, **QUICK)
    assert v.stages["used"] and v.stages["failed"] is not None and not v.stages["widened"]
    assert v.stages["whole"] == whole.verdict == v.verdict
    assert v.verdict != "not-equivalent"


def test_a_bug_names_its_stage_and_source_line() -> None:
    v = verify(str(SHARDED / "mlp_tp.ref.mlir"), str(SHARDED / "mlp_tp_bug_missing_psum.shardy.mlir"),
               cache=False, **QUICK)
    assert v.verdict == "not-equivalent"
    failed = v.stages["failed"]
    assert failed["verdict"] == "not-equivalent"
    assert any("gen_sharded.py" in loc for loc in failed["locs"])
    text = to_text(v)
    assert f"{failed['name']} is not-equivalent at " in text and "not proved whole: a random input" in text
    # Shown at program inputs without the whole proof: minimised, confirmed on XLA, and
    # located by the failed stage's own proof (an op of the stage, with its source line).
    c = v.counterexample
    assert c.found_by == "random run" and c.minimized and c.confirmed
    assert any(r.backend == "xla" and r.confirmed for r in c.replay)
    assert c.first_divergence["stage"] == failed["name"] and c.first_divergence["op"].startswith("stablehlo.")
    assert "gen_sharded.py" in c.first_divergence["loc"]


def test_parallel_workers_and_stage_timeouts() -> None:
    args = (str(SHARDED / "mlp_tp.ref.mlir"), str(SHARDED / "mlp_tp.shardy.mlir"))
    v = verify(*args, jobs=2, cache=False, **QUICK)
    assert v.verdict == "equivalent" and v.stages["proved"] > 2
    timed = verify(*args, jobs=2, cache=False, stage_timeout_s=0.001, **QUICK)
    assert timed.stages["failed"]["verdict"] == "unknown"
    assert "timed out" in timed.stages["failed"]["reason"]
    assert timed.verdict == "equivalent"  # the whole proof, after the stages timed out


def test_ray_executor() -> None:
    pytest.importorskip("ray")
    v = verify(str(SHARDED / "mlp_tp.ref.mlir"), str(SHARDED / "mlp_tp.shardy.mlir"), executor="ray", jobs=2,
               cache=False, **QUICK)
    assert v.verdict == "equivalent" and v.stages["used"] and v.stages["proved"] > 1


def test_cli_json_progress_and_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cmd = [sys.executable, "-m", "tv_mlir", "verify", str(CORE / "decoder_L1.ref.mlir"),
           str(CORE / "decoder_L1.shardy.mlir"), "--json", "--progress", "--cache", str(tmp_path),
           "--full-size-check", "off", "--no-second-witness", "--stage-min-elements", "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    st = json.loads(out.stdout)["stages"]
    assert st["used"] and len(st["list"]) == st["count"]
    assert {"index", "name", "hash", "how", "verdict", "time_s", "locs"} <= set(st["list"][0])
    assert "tv-mlir: stages " in out.stderr
    whole = subprocess.run(cmd + ["--no-stages"], capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0 and json.loads(whole.stdout)["stages"] is None
    # Usage errors in this process (`cli.main`): a CLI process costs seconds of imports.
    from tv_mlir import cli

    for flag, value in (("--executor", "slurm"), ("--stage-min-elements", "-1")):
        code = cli.main(cmd[3:6] + [flag, value])
        err = capsys.readouterr().err
        assert code == 3 and flag.lstrip("-") in err and "Traceback" not in err, err
    # By default a pair this small is proved whole, and the verdict says why.
    small = subprocess.run(cmd[:-2], capture_output=True, text=True, timeout=300)
    st = json.loads(small.stdout)["stages"]
    assert small.returncode == 0 and not st["used"] and "below --stage-min-elements 250000" in st["reason"]


def test_options_reject_a_bad_executor() -> None:
    with pytest.raises(UsageError):
        Options(executor="ray:")
    for bad in (-1, 1.5, True):
        with pytest.raises(UsageError):
            Options(stage_min_elements=bad)


STAGES = ROOT / "testdata" / "stages"


@pytest.mark.parametrize("form", ["shardy", "partitioned"])
def test_a_scan_over_layers_is_proved_by_induction(form: str) -> None:
    """Four layers as one `while` over stacked weights in both programs: the body and the
    condition are proved once each, with the carried values free (no unrolling)."""
    v = verify(STAGES / "scan_L4.ref.mlir", STAGES / f"scan_L4.{form}.mlir", cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    names = [s["name"] for s in v.stages["list"]]
    # The body, a decoder layer, is cut into a chain of its own (stages/loops._chained).
    assert any(": loop body" in n for n in names) and any(n.endswith("loop condition") for n in names)


def test_induction_needs_every_trip_to_agree() -> None:
    """The psum is missing in one trip only: the other loop carries a counter of its own
    (one more carried value, free in the proofs), a stage of the body fails, and a random
    run shows the bug at program inputs, located at the line that seeds it in the body.
    With the default options, as tests/test_exit_1.py holds every bug twin (it leaves this
    one here: one run of ~50 s on two shared cores serves both): exit 1, confirmed by XLA
    at the original sizes."""
    v = verify(STAGES / "scan_L4.ref.mlir", STAGES / "scan_L4_bug_iter3.shardy.mlir", cache=False, timeout_s=60)
    assert v.verdict == "not-equivalent" and v.exit_code == 1, v.reason
    assert v.stages["used"] and "loop body" in v.stages["failed"]["name"]  # a stage of the body's own chain
    c = v.counterexample
    assert c.confirmed and c.found_by == "random run"
    assert c.confirmed_at == "original sizes", (c.replay, v.reason)
    xla = [r for r in c.replay if r.backend == "xla"]
    assert xla and all(r.confirmed and not r.error for r in xla), c.replay
    fd = c.first_divergence
    # The body is cut into a chain (stages/loops._chained): the stage that fails holds the
    # seeded `jnp.where(i == bug_index, t, psum(t))` (gen_depth.py:123).
    assert "loop body" in fd["stage"] and "gen_depth.py:123" in fd["loc"], fd


def test_widened_spans_count_only_as_a_partition_of_the_chain() -> None:
    """Links 3 and 6 of 7 failed; spans 3-5 and 4-6 proved. The span 4-6 takes as input a
    value live across cut 4 that link 3 may make wrong and span 3-5 need not return (it
    dies inside it): overlapping spans prove nothing about link 6."""
    singles: dict[tuple[int, int], str | None] = {(k, k): None for k in (0, 1, 2, 4, 5)}
    assert stages_run._segments({**singles, (3, 5): "a", (4, 6): "b"}, 7) is None
    assert stages_run._segments({**singles, (3, 5): "a", (6, 6): None}, 7) == [None, None, None, "a", None]
    assert stages_run._segments({**singles, (2, 3): "c", (4, 6): "b"}, 7) == [None, None, "c", "b"]
    assert stages_run._segments({(0, 0): None}, 2) is None


# b = 2 exp(x) > 0, so m / b * b is m: equal programs. The stage after b takes b as a
# positive input; its random runs must draw it so (b = 0 in a run makes m / b * b NaN there:
# no fingerprints after it, and a "counterexample" at an input the proof excludes).
POSITIVE_REF = """
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %a = stablehlo.exponential %x : tensor<16xf32>
  %b = stablehlo.add %a, %a : tensor<16xf32>
  %m = stablehlo.multiply %y, %y : tensor<16xf32>
  %c = stablehlo.divide %m, %b : tensor<16xf32>
  %d = stablehlo.multiply %c, %b : tensor<16xf32>
  %e = stablehlo.add %d, %y : tensor<16xf32>
  %f = stablehlo.multiply %e, %e : tensor<16xf32>
  return %f : tensor<16xf32>
}
"""
POSITIVE_OTHER = """
func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %a = stablehlo.exponential %x : tensor<16xf32>
  %b = stablehlo.add %a, %a : tensor<16xf32>
  %m = stablehlo.multiply %y, %y : tensor<16xf32>
  %e = stablehlo.add %m, %y : tensor<16xf32>
  %f = stablehlo.multiply %e, %e : tensor<16xf32>
  %z = stablehlo.multiply %b, %f : tensor<16xf32>
  %g = stablehlo.divide %z, %b : tensor<16xf32>
  return %g : tensor<16xf32>
}
"""


def test_a_positive_stage_input_is_positive_in_the_random_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages_run, "MAX_WIDEN", 0)  # no second chance: the stage itself must hold
    v = verify(POSITIVE_REF, POSITIVE_OTHER, cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages["used"] and "failed" not in v.stages and "whole" not in v.stages, v.stages.get("failed")


def test_random_inputs_follow_the_signs_and_keep_the_other_draws() -> None:
    types = [TensorType((64,), "f32")] * 3 + [TensorType((8,), "i32")]
    plain = random_inputs(types)
    signed = random_inputs(types, signs=[2, 1, 0, 2])
    for a, b in zip(plain, signed):
        assert (b[0] > 0).all() and (b[1] >= 0).all() and (b[0] != 0).all()
        np.testing.assert_array_equal(np.abs(a[1]), b[1])  # the same draw, folded
        np.testing.assert_array_equal(a[2], b[2])  # an input without a sign: unchanged
        np.testing.assert_array_equal(a[3], b[3])  # integers: signs are for floats
    assert any((a[0] <= 0).any() for a in plain)  # what the signs change
