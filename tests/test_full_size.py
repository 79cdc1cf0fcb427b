"""The numeric check at the original sizes (issue 12 item 3) and `not-equivalent` only when
reproduced at the original sizes (item 4): pairs where shrinking hides a bug, correct
pairs, the budget, and a shrunk witness the original sizes do not show."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tv_mlir
from tests.conftest import TESTDATA
from tv_mlir import api, regrow
from tv_mlir.api import prepare
from tv_mlir.cli import main as cli_main
from tv_mlir.errors import UsageError
from tv_mlir.execute.xla import XlaRunner
from tv_mlir.options import Options
from tv_mlir.report import to_json
from tv_mlir.verdict import Replay
from tv_mlir.witness import fullsize
from tv_mlir.witness import replay as witness_replay
from tv_mlir.witness.replay import xla_replay


def _module(args: str, results: str, body: str) -> str:
    return f"""module {{
 func.func public @main({args}) -> {results} {{
{body}
 }}
}}
"""


# Adversarial pairs: each bug is invisible at the sizes the shrinker picks today.

def _update(transposed: bool) -> str:
    """An SGD step `w - lr * g` on a square weight; the bug uses g transposed. Both dims
    are free and shrink to 1, where a transpose is the identity."""
    t = "tensor<64x64xf32>"
    g = f"  %gt = stablehlo.transpose %g, dims = [1, 0] : ({t}) -> {t}\n" if transposed else ""
    return _module(f"%w: {t}, %g: {t}", t, f"""{g}  %lr = stablehlo.constant dense<0.5> : {t}
  %s = stablehlo.multiply %lr, {'%gt' if transposed else '%g'} : {t}
  %r = stablehlo.subtract %w, %s : {t}
  return %r : {t}""")


def _top2(masked: bool) -> str:
    """A top-2 routing mask over 8 experts (max, then the max of the rest); the bug keeps
    every expert. The expert class is max-reduced and shrinks to 2, where top-2 is all."""
    t, ti, r = "tensor<16x8xf32>", "tensor<16x8xi1>", "tensor<16xf32>"
    if not masked:
        return _module(f"%x: {t}", t, f"  return %x : {t}")
    return _module(f"%x: {t}", t, f"""  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m1 = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f32>) -> {r}
  %b1 = stablehlo.broadcast_in_dim %m1, dims = [0] : ({r}) -> {t}
  %is1 = stablehlo.compare EQ, %x, %b1 : ({t}, {t}) -> {ti}
  %ninfs = stablehlo.broadcast_in_dim %ninf, dims = [] : (tensor<f32>) -> {t}
  %x2 = stablehlo.select %is1, %ninfs, %x : {ti}, {t}
  %m2 = stablehlo.reduce(%x2 init: %ninf) applies stablehlo.maximum across dimensions = [1] : ({t}, tensor<f32>) -> {r}
  %b2 = stablehlo.broadcast_in_dim %m2, dims = [0] : ({r}) -> {t}
  %keep = stablehlo.compare GE, %x, %b2 : ({t}, {t}) -> {ti}
  %z = stablehlo.constant dense<0.0> : {t}
  %out = stablehlo.select %keep, %x, %z : {ti}, {t}
  return %out : {t}""")


def _mean(divisor: str, rows: int = 512, cols: int = 1024) -> str:
    """A sum over both dims divided by a size: the bug divides by the other dim's size.
    Both classes are summed and shrink to 2, both constants are rewritten to 2."""
    t = f"tensor<{rows}x{cols}xf32>"
    return _module(f"%x: {t}", "tensor<f32>", f"""  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1] : ({t}, tensor<f32>) -> tensor<f32>
  %d = stablehlo.constant dense<{divisor}> : tensor<f32>
  %r = stablehlo.divide %s, %d : tensor<f32>
  return %r : tensor<f32>""")


def without_rules(monkeypatch) -> None:
    """The shrinking rules of issue 12 item 1 that see HIDDEN's bugs turned off (rule a:
    constants in order, c: order statistics, d: exchanged classes), so that these pairs
    hide their bugs at the shrunk sizes as they did before the rules: what the checks
    below are about (tests/test_shrink_rules.py tests the rules)."""
    from tv_mlir.shrink import plan
    from tv_mlir.shrink.constants import Order

    monkeypatch.setattr(plan, "order", lambda *args: Order())
    monkeypatch.setattr(plan, "order_statistics", lambda *args: None)
    monkeypatch.setattr(plan, "exchanged", lambda *args: None)


HIDDEN = {"transposed square weight": (_update(False), _update(True)),
          "top-2 over a class shrunk to 2": (_top2(True), _top2(False)),
          "two size constants that collide": (_mean("1024.0"), _mean("512.0"))}


@pytest.mark.parametrize("name", list(HIDDEN))
def test_full_size_check_finds_what_shrinking_hides(name: str) -> None:
    ref, bug = HIDDEN[name]
    v = tv_mlir.verify(ref, bug)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes"
    assert any(r.backend == "xla, original sizes" and r.confirmed for r in c.replay), c.replay
    assert v.shrink["applied"]
    # Found by the check (today's rules hide these at the shrunk sizes) or, once the
    # shrinking rules see them, by the proof and embedded: either way at the original sizes.
    if c.found_by == "full-size check":
        f = v.full_size_check
        assert f.ran and f.outcome == "differ" and f.input_sets >= 1 and f.max_rel_diff > 0.01
        assert f.kinds == list(fullsize.KINDS[:f.input_sets])
        # The witness is at the original sizes and still shows the difference on XLA.
        r = prepare(ref, Options())
        arrays = [np.array(c.inputs[n], dtype=np.float64).reshape(t.shape)
                  for n, t in zip(c.inputs, r.global_arg_types())]
        assert arrays[0].shape == r.global_arg_types()[0].shape
        replay = xla_replay(r, prepare(bug, Options()), arrays, c.output, tuple(c.index))
        assert replay.confirmed, replay


@pytest.mark.parametrize("name", list(HIDDEN))
def test_shrinking_alone_hides_these_bugs(name: str, monkeypatch) -> None:
    # What makes the pairs above adversarial: without the check (and without the second
    # witness, which catches two of them: tests/test_second_witness.py) they passed as
    # equivalent before the rules of issue 12 item 1; with the rules they do not.
    ref, bug = HIDDEN[name]
    v = tv_mlir.verify(ref, bug, full_size_check="off", second_witness=False)
    assert v.verdict == "not-equivalent" and v.counterexample.confirmed_at == "original sizes", v.reason
    without_rules(monkeypatch)
    v = tv_mlir.verify(ref, bug, full_size_check="off", second_witness=False)
    assert v.full_size_check is not None and not v.full_size_check.ran and "off" in v.full_size_check.reason
    assert v.verdict == "equivalent", v.reason


def test_check_on_the_original_modules_reports_the_difference() -> None:
    # The check itself, without the shrinking: the transposed update differs at once.
    ref, bug = (prepare(m, Options()) for m in HIDDEN["transposed square weight"])
    out = fullsize.check(ref, bug, "auto", XlaRunner(), ["w", "g"])
    assert out.check.ran and out.check.outcome == "differ" and out.counterexample is not None
    c = out.counterexample
    assert set(c.inputs) == {"w", "g"} and c.found_by == "full-size check"
    assert np.array(c.inputs["g"]).shape == (64, 64)
    # Minimised: the witness keeps few non-zero elements.
    assert sum(np.count_nonzero(np.array(a)) for a in c.inputs.values()) <= 8


def test_correct_pair_stays_equivalent_with_the_check_recorded() -> None:
    # The mean summed in another order (rows first, then columns).
    t = "tensor<512x1024xf32>"
    other = _module(f"%x: {t}", "tensor<f32>", f"""  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> tensor<512xf32>
  %s = stablehlo.reduce(%r0 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<512xf32>, tensor<f32>) -> tensor<f32>
  %d = stablehlo.constant dense<1024.0> : tensor<f32>
  %r = stablehlo.divide %s, %d : tensor<f32>
  return %r : tensor<f32>""")
    v = tv_mlir.verify(_mean("1024.0"), other)
    assert v.verdict == "equivalent", v.reason
    f = v.full_size_check
    assert f.ran and f.outcome == "agree" and f.input_sets == len(fullsize.KINDS) and f.kinds == list(fullsize.KINDS)
    assert f.max_rel_diff is not None and f.max_rel_diff < 1e-3
    assert f.estimate["ref"]["bytes"] > 0


def test_off_skips_and_json_records_it(capsys, tmp_path, monkeypatch) -> None:
    without_rules(monkeypatch)
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(_update(False))
    b.write_text(_update(True))
    # The second witness catches this pair before the check (tests/test_second_witness.py):
    # off here, so that the check is what finds it.
    code = cli_main(["verify", str(a), str(b), "--json", "--full-size-check", "off", "--no-second-witness"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verdict"] == "equivalent"
    assert data["full_size_check"]["ran"] is False and data["full_size_check"]["outcome"] == "skipped"
    code = cli_main(["verify", str(a), str(b), "--json", "--no-second-witness"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["full_size_check"]["outcome"] == "differ"
    assert data["counterexample"]["confirmed_at"] == "original sizes"
    code = cli_main(["verify", str(a), str(b), "--no-second-witness"])
    out = capsys.readouterr().out
    assert code == 1 and "full-size check: ran" in out and "confirmed at: original sizes" in out


def test_bad_values_are_usage_errors(capsys) -> None:
    with pytest.raises(UsageError):
        Options(full_size_check="sometimes")
    with pytest.raises(UsageError):
        tv_mlir.verify(_update(False), _update(False), full_size_check="yes")
    assert cli_main(["verify", "a.mlir", "b.mlir", "--full-size-check", "maybe"]) == 3


def test_over_the_compute_budget_is_skipped_and_says_why(monkeypatch) -> None:
    # 8.8 GiB of op results: the memory budget (half of MemAvailable) is what a busy
    # machine hits first; this test is about the compute budget, so memory is plenty here.
    monkeypatch.setattr(fullsize, "mem_available", lambda: 64 * 2**30)
    big = TESTDATA / "sharded_big"
    v = tv_mlir.verify(big / "mlp_tp.ref.mlir", big / "mlp_tp.shardy.mlir")
    assert v.verdict == "equivalent"
    f = v.full_size_check
    assert not f.ran and f.outcome == "skipped" and "compute budget" in f.reason
    assert f.estimate["ref"]["flops"] > 1e12


def test_memory_budget(monkeypatch) -> None:
    without_rules(monkeypatch)
    monkeypatch.setattr(fullsize, "mem_available", lambda: 1024)
    ref, bug = HIDDEN["transposed square weight"]
    # Without the second witness, which finds this pair's bug first (test_second_witness.py).
    v = tv_mlir.verify(ref, bug, second_witness=False)
    assert v.verdict == "equivalent" and "memory budget" in v.full_size_check.reason
    on = tv_mlir.verify(ref, bug, full_size_check="on", second_witness=False)
    assert on.verdict == "unknown" and "cannot run" in on.reason and on.exit_code == 2


def test_on_runs_over_the_compute_budget(monkeypatch) -> None:
    monkeypatch.setattr(fullsize, "FULL_SIZE_MAX_FLOPS", 0)
    t = "tensor<64x64xf32>"
    dot = _module(f"%w: {t}, %g: {t}", t, f"""  %d = stablehlo.dot_general %w, %g, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}
  return %d : {t}""")
    auto = tv_mlir.verify(dot, dot)
    assert auto.verdict == "equivalent" and auto.shrink["applied"]
    assert not auto.full_size_check.ran and "compute budget" in auto.full_size_check.reason
    on = tv_mlir.verify(dot, dot, full_size_check="on")
    assert on.verdict == "equivalent" and on.full_size_check.ran and on.full_size_check.outcome == "agree"


# Comparison: float noise never trips it, a clear difference always does.

def test_compare_tolerates_reduction_order_noise() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4096)).astype(np.float32)
    a = x.sum(axis=1, dtype=np.float32)
    b = np.array([np.sum(np.sort(row)) for row in x], dtype=np.float32)  # another order
    d = fullsize.compare([a], [b], ["f32"])
    assert d.score <= 1 and not d.noisy
    nan = np.array([np.nan, 1.0, np.inf], dtype=np.float32)
    assert fullsize.compare([nan], [nan.copy()], ["f32"]).rel == 0
    assert fullsize.compare([nan], [np.array([0.0, 1.0, np.inf], np.float32)], ["f32"]).score > 1
    bf = (x[:, :256].astype(np.float64).sum(axis=1))
    noisy = bf * (1 + rng.uniform(-4e-3, 4e-3, size=bf.shape))  # bf16 rounding of a sum
    assert fullsize.compare([bf], [noisy], ["bf16"]).score <= 1


def test_compare_grades_differences() -> None:
    a = np.linspace(-2, 2, 100)
    assert fullsize.compare([a], [a * 1.05], ["f32"]).score > 1  # clear
    marginal = fullsize.compare([a], [a * 1.004], ["f32"])
    assert marginal.score <= 1 and marginal.noisy  # above noise, not clearly a bug
    d = fullsize.compare([np.arange(5)], [np.array([0, 1, 2, 3, 5])], ["i32"])
    assert d.score > 1 and d.index == (4,) and (d.ref_value, d.other_value) == (4, 5)


def test_boundary_inputs_cover_ends_and_shard_boundaries() -> None:
    from tv_mlir.ir import TensorType

    sets = dict(fullsize.input_sets([TensorType((16, 32000), "f32"), TensorType((16,), "i32")]))
    assert list(sets) == list(fullsize.KINDS)
    onehot = sets["one-hot rows"][0]
    assert (np.count_nonzero(onehot, axis=1) == 1).all() and set(np.unique(onehot)) == {0.0, 1.0}
    labels = set(sets["boundary indices"][1].tolist())
    allowed = {0, 1, 31998, 31999} | {k * 32000 // s + e for s in (2, 4, 8) for k in range(1, s) for e in (-1, 0)}
    assert labels <= allowed and len(labels) > 3


# Item 4: a witness at the shrunk sizes the original sizes do not show is not exit 1.

def _not_reproduced(monkeypatch) -> list[int]:
    calls: list[int] = []

    def fake(*args, **kwargs) -> Replay:
        calls.append(1)
        return Replay("xla", 0.0, 0.0, False)

    monkeypatch.setattr(witness_replay, "xla_replay", fake)
    return calls


def test_unconfirmed_witness_is_retried_without_shrinking(monkeypatch) -> None:
    calls = _not_reproduced(monkeypatch)
    v = tv_mlir.verify(_mean("1024.0", 8, 256), _mean("7.0", 8, 256))
    assert calls  # the embedding was replayed (and, patched, not reproduced)
    # The retries: less-shrunk sizes first (also not reproduced), then the original sizes,
    # where the proof's own replay confirms the difference.
    assert v.retries and v.retries[-1]["sizes"] == "original", v.retries
    assert v.verdict == "not-equivalent" and v.counterexample.confirmed_at == "original sizes", v.reason
    assert not v.shrink["applied"] and "not shown" in v.shrink["reason"]


def test_unconfirmed_witness_without_a_retry_is_unknown(monkeypatch) -> None:
    _not_reproduced(monkeypatch)
    monkeypatch.setattr(regrow, "NO_SHRINK_MAX_ELEMENTS", 0)
    monkeypatch.setattr(regrow, "MAX_GROW", 1)
    v = tv_mlir.verify(_mean("1024.0", 8, 256), _mean("7.0", 8, 256))
    assert v.verdict == "unknown" and v.exit_code == 2
    assert "a counterexample at the shrunk sizes that the original sizes do not show" in v.reason
    c = v.counterexample  # kept for inspection, at the shrunk sizes
    assert c is not None and c.embedded is False and c.shrunk_index is not None
    assert c.confirmed_at == "shrunk sizes"  # XLA shows it there, and only there
    assert any(r["sizes"] == "original" and "not tried" in r["note"] for r in v.retries), v.retries
    data = json.loads(to_json(v))
    assert data["verdict"] == "unknown" and data["counterexample"]["embedded"] is False and data["retries"]


def test_too_large_to_replay_is_not_exit_1() -> None:
    # Realistic sizes: the twin's witness cannot be replayed at 16384 x 4096 x 14336 within
    # the budget, so the verdict says so instead of exiting 1.
    big = TESTDATA / "sharded_big"
    v = tv_mlir.verify(big / "mlp_tp.ref.mlir", big / "mlp_tp_bug_missing_psum.shardy.mlir")
    assert v.verdict == "unknown" and "too large to replay" in v.reason, v.reason
    assert v.counterexample is not None and v.counterexample.confirmed
    assert v.counterexample.confirmed_at == "shrunk sizes"


@pytest.mark.parametrize("name", ["mlp_tp_bug_missing_psum", "rope_seq_parallel_bug_no_offset",
                                  "vocab_ce_bug_no_offset", "replica_divergence_bug"])
def test_small_bug_twins_are_confirmed(name: str) -> None:
    d = TESTDATA / "sharded"
    e = next(x for x in json.loads((d / "manifest.json").read_text()) if x["name"] == name)
    v = tv_mlir.verify(d / e["ref"], d / e["shardy"])
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c.confirmed_at == "original sizes", (c.confirmed_at, c.not_embedded)


def test_unconfirmed_witness_is_confirmed_at_less_shrunk_sizes(monkeypatch) -> None:
    # The first witness's replays (both layouts) are made to fail; the witness found again
    # at the next admissible sizes is embedded and confirmed for real.
    real, calls = witness_replay.xla_replay, []

    def first_two_fail(*args, **kwargs) -> Replay:
        calls.append(1)
        return Replay("xla", 0.0, 0.0, False) if len(calls) <= 2 else real(*args, **kwargs)

    monkeypatch.setattr(witness_replay, "xla_replay", first_two_fail)
    v = tv_mlir.verify(_mean("1024.0", 8, 256), _mean("7.0", 8, 256))
    assert v.verdict == "not-equivalent" and v.counterexample.confirmed_at == "original sizes", v.reason
    assert v.counterexample.embedded and len(calls) >= 3
    assert v.retries and v.retries[0]["note"] == "confirmed at the original sizes", v.retries
    grown = v.retries[0]["sizes"]
    assert grown and v.shrink["applied"] and "was not" in v.reason
    # The verdict's shrink map is the grown one: the summed class is larger than at first.
    first = tv_mlir.verify(_mean("1024.0", 8, 256), _mean("7.0", 8, 256), replay=False)
    assert first.shrink["shrunk"][0]["verified"] < v.shrink["shrunk"][0]["verified"]


def test_replica_divergence_is_reproduced_at_the_original_sizes() -> None:
    # Issue 12 item 4: the divergence found at the shrunk sizes, embedded into the original
    # sizes and replayed on XLA there (regrow.confirm_divergence).
    from tv_mlir.driver import prove_pair

    # testdata/shrink_rules/gen_more.py: device 3's copy of a replicated output differs on
    # its last row (XLA's per-device copies are the ground truth); 32 x 64 shrinks.
    d = TESTDATA / "shrink_rules"
    o = Options(full_size_check="off", second_witness=False)
    reads = [api._read(str(d / f"replica_rows.small.{k}.mlir"), o)[0] for k in ("ref", "bug")]
    ref_m, other_m = (prepare(m, o) for m in reads)
    small_ref, small_other, summary, emb = api._shrink(*reads, ref_m, other_m, o)
    assert summary["applied"] and emb is not None
    v = prove_pair(small_ref, small_other, o)
    c = v.counterexample
    assert v.verdict == "not-equivalent" and c is not None and c.devices, v.reason
    assert regrow.confirm_divergence(c, emb, small_ref, ref_m, other_m), c.replay
    assert c.embedded and c.confirmed_at == "original sizes"
    assert c.replay[-1].backend == "xla, original sizes" and c.replay[-1].confirmed


@pytest.mark.parametrize("size,last", [("small", 31), ("big", 63)])
def test_verify_confirms_a_replica_divergence_at_the_original_sizes(size: str, last: int) -> None:
    # verify calls confirm_divergence (api._embed): exit 1 with the original-size witness,
    # device 3's copy of the last row; the correct twin stays equivalent.
    d = TESTDATA / "shrink_rules"
    v = tv_mlir.verify(d / f"replica_rows.{size}.ref.mlir", d / f"replica_rows.{size}.bug.mlir")
    assert v.shrink["applied"] and v.verdict == "not-equivalent" and v.exit_code == 1, v.reason
    c = v.counterexample
    assert c.devices and 3 in c.devices and c.embedded and c.confirmed_at == "original sizes", c.not_embedded
    assert c.index[0] == last and c.shrunk_index[0] < last and "replayed at the original sizes" in v.reason
    data = json.loads(to_json(v))
    assert data["counterexample"]["confirmed_at"] == "original sizes" and data["counterexample"]["embedded"]
    ok = tv_mlir.verify(d / f"replica_rows.{size}.ref.mlir", d / f"replica_rows.{size}.ok.mlir")
    assert ok.verdict == "equivalent", ok.reason


def test_unreproduced_replica_divergence_is_not_exit_1(monkeypatch) -> None:
    # A divergence the original sizes do not show is retried like any unconfirmed witness
    # (grown sizes, then no shrinking): never exit 1 on the shrunk sizes alone.
    from tv_mlir.witness import replay

    calls: list[int] = []

    def no_divergence(*args, **kwargs) -> Replay:  # regrow looks it up at call time
        calls.append(1)
        return Replay("xla", 0.0, 0.0, False)

    monkeypatch.setattr(replay, "xla_replay", no_divergence)
    monkeypatch.setattr(regrow, "NO_SHRINK_MAX_ELEMENTS", 0)
    d = TESTDATA / "shrink_rules"
    v = tv_mlir.verify(d / "replica_rows.big.ref.mlir", d / "replica_rows.big.bug.mlir")
    assert v.verdict == "unknown" and v.exit_code == 2, v.reason
    assert "the original sizes do not show" in v.reason and "device" in v.reason, v.reason
    assert calls and v.retries and v.counterexample.embedded is False, v.retries
    # The divergences found again at grown sizes were embedded and replayed too (regrow.retry).
    grown = [r for r in v.retries if r["sizes"] != "original"]
    assert grown and all("not reproduced" in r["note"] for r in grown), v.retries
    assert v.counterexample.confirmed_at == "shrunk sizes"  # XLA shows it there, and only there
