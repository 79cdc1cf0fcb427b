"""Work the sharded program shares with the reference instead of redoing it:

- partial sums (prove/cuts.py `_sum_of_partials`, switch `PARTIAL_SUMS`): a data-parallel
  gradient, each device's local x^T g all-reduced, against the reference's one x^T g over
  the whole batch. The sum of the partials' definitions is the reference's definition, so
  the all-reduced elements merge without a local proof; a psum replaced by twice the local
  sum (each device's partial doubled) still differs;
- elementwise results by operand elements (execute/element_memo.py, switch `MEMO`): a
  shard's compare / multiply / subtract / select over the reference's own input elements
  takes the reference's results; a compare with another direction over the same operands
  must not (the memo is keyed by the op's attributes), nor an op whose operand types differ.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tv_mlir.api import verify
from tv_mlir.execute import element_memo
from tv_mlir.prove import cuts, local

REF_GRAD = """module @ref {
  func.func public @main(%x: tensor<8x4xf32>, %g: tensor<8x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.dot_general %x, %g, contracting_dims = [0] x [0] : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}
"""
_DP_GRAD = """module @dp attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2]>
  func.func public @main(%x: tensor<8x4xf32>, %g: tensor<8x4xf32>) -> tensor<4x4xf32> {
    %0 = sdy.manual_computation(%x, %g) in_shardings=[<@mesh, [{"dp"}, {}]>, <@mesh, [{"dp"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"dp"} (%xl: tensor<4x4xf32>, %gl: tensor<4x4xf32>) {
      %1 = stablehlo.dot_general %xl, %gl, contracting_dims = [0] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
{reduce}      sdy.return %2 : tensor<4x4xf32>
    } : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}
"""
DP_GRAD = _DP_GRAD.replace("{reduce}", """      %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
""")
# The all-reduce replaced by doubling each device's partial sum.
DP_GRAD_DOUBLED = _DP_GRAD.replace("{reduce}", """      %c = stablehlo.constant dense<2.0> : tensor<4x4xf32>
      %2 = stablehlo.multiply %1, %c : tensor<4x4xf32>
""")
REF_EW = """module @ref {
  func.func public @main(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %p = stablehlo.compare GT, %x, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xi1>
    %m = stablehlo.multiply %x, %y : tensor<8x4xf32>
    %s = stablehlo.subtract %x, %y : tensor<8x4xf32>
    %r = stablehlo.select %p, %m, %s : tensor<8x4xi1>, tensor<8x4xf32>
    return %r : tensor<8x4xf32>
  }
}
"""
DP_EW = """module @dp attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2]>
  func.func public @main(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = sdy.manual_computation(%x, %y) in_shardings=[<@mesh, [{"dp"}, {}]>, <@mesh, [{"dp"}, {}]>] out_shardings=[<@mesh, [{"dp"}, {}]>] manual_axes={"dp"} (%xl: tensor<4x4xf32>, %yl: tensor<4x4xf32>) {
      %p = stablehlo.compare GT, %xl, %yl : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
      %m = stablehlo.multiply %xl, %yl : tensor<4x4xf32>
      %s = stablehlo.subtract %xl, %yl : tensor<4x4xf32>
      %r = stablehlo.select %p, %m, %s : tensor<4x4xi1>, tensor<4x4xf32>
      sdy.return %r : tensor<4x4xf32>
    } : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"""
# The shard compares LT where the reference compares GT, over the same operand elements.
DP_EW_FLIPPED = DP_EW.replace("stablehlo.compare GT", "stablehlo.compare LT")


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

    def counted(self: local.LocalProver, *args: object, **kw: object) -> object:
        n[0] += 1
        return unfold(self, *args, **kw)

    monkeypatch.setattr(local.LocalProver, "_unfold", counted)
    return n


@pytest.mark.parametrize("switch", [True, False])
def test_all_reduced_partial_sums_meet_the_reference_sum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           unfoldings: list[int], switch: bool) -> None:
    monkeypatch.setattr(cuts, "PARTIAL_SUMS", switch)
    f = _files(tmp_path, ref=REF_GRAD, ok=DP_GRAD)
    v = verify(f["ref"], f["ok"], cache=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    # On: every element of the all-reduce is a structural hit. Off: local proofs.
    assert (unfoldings[0] == 0) == switch, unfoldings


@pytest.mark.parametrize("switch", [True, False])
def test_doubled_partial_sums_still_differ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: bool) -> None:
    monkeypatch.setattr(cuts, "PARTIAL_SUMS", switch)
    f = _files(tmp_path, ref=REF_GRAD, bug=DP_GRAD_DOUBLED)
    v = verify(f["ref"], f["bug"], cache=False, shrink=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


@pytest.mark.parametrize("switch", [True, False])
def test_a_shard_takes_the_references_elementwise_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           switch: bool) -> None:
    monkeypatch.setattr(element_memo, "MEMO", switch)
    f = _files(tmp_path, ref=REF_EW, ok=DP_EW)
    v = verify(f["ref"], f["ok"], cache=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    # Four elementwise ops over two 4 x 4 shards each.
    assert v.stats["shared_elements"] == (4 * 2 * 16 if switch else 0), v.stats


def test_the_memo_tells_attributes_apart(tmp_path: Path) -> None:
    f = _files(tmp_path, ref=REF_EW, bug=DP_EW_FLIPPED)
    v = verify(f["ref"], f["bug"], cache=False, shrink=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed
    # The multiply and subtract are shared; the compare (other direction) and the select
    # (other predicate elements) are not.
    assert v.stats["shared_elements"] == 2 * 2 * 16, v.stats


CONVERT_REF = """module @ref {
  func.func public @main(%x: tensor<8x4xi32>) -> tensor<8x4xf32> {
    %c = stablehlo.convert %x : (tensor<8x4xi32>) -> tensor<8x4xf32>
    return %c : tensor<8x4xf32>
  }
}"""
# The shard goes through i8 first: the same op name over the same operand elements, with
# another result type (and a wrap-around at i8).
CONVERT_VIA_I8 = """module @dp attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2]>
  func.func public @main(%x: tensor<8x4xi32>) -> tensor<8x4xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"dp"}, {}]>] out_shardings=[<@mesh, [{"dp"}, {}]>] manual_axes={"dp"} (%xl: tensor<4x4xi32>) {
      %c8 = stablehlo.convert %xl : (tensor<4x4xi32>) -> tensor<4x4xi8>
      %c = stablehlo.convert %c8 : (tensor<4x4xi8>) -> tensor<4x4xf32>
      sdy.return %c : tensor<4x4xf32>
    } : (tensor<8x4xi32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}"""


def test_the_memo_tells_result_types_apart(tmp_path: Path) -> None:
    f = _files(tmp_path, ref=CONVERT_REF, bug=CONVERT_VIA_I8)
    v = verify(f["ref"], f["bug"], cache=False, shrink=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


def _swapped(text: str, op: str) -> str:
    """The shard's `op` with its operands in the other order."""
    return text.replace(f"%m = stablehlo.{op} %xl, %yl", f"%m = stablehlo.{op} %yl, %xl")


def test_commuting_operands_share_results(tmp_path: Path) -> None:
    """The shard writes y * x where the reference writes x * y: the unordered pair is the key."""
    ours = _swapped(DP_EW, "multiply")
    assert ours != DP_EW
    f = _files(tmp_path, ref=REF_EW, ok=ours)
    v = verify(f["ref"], f["ok"], cache=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    assert v.stats["shared_elements"] == 4 * 2 * 16, v.stats


def test_operands_of_a_subtract_do_not_commute(tmp_path: Path) -> None:
    """y - x against x - y over the same operand elements: never the same entry."""
    ref = REF_EW.replace("stablehlo.multiply", "stablehlo.subtract")
    ours = _swapped(DP_EW.replace("stablehlo.multiply", "stablehlo.subtract"), "subtract")
    f = _files(tmp_path, ref=ref, bug=ours)
    v = verify(f["ref"], f["bug"], cache=False, shrink=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


def test_the_memo_stops_recording_at_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_ENTRIES nothing more is recorded (the shard then computes its own results,
    the verdict unchanged)."""
    monkeypatch.setattr(element_memo, "MAX_ENTRIES", 40)
    f = _files(tmp_path, ref=REF_EW, ok=DP_EW)
    v = verify(f["ref"], f["ok"], cache=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    # The reference's first op (32 entries) fits; the second would pass 40.
    assert v.stats["shared_elements"] == 2 * 16, v.stats
