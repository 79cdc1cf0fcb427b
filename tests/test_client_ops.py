"""Forms the new real clients (testdata/gen_clients.py) brought that the reader did not take,
each checked against XLA's numeric result on the numeric and both symbolic algebras (the
harness of tests/test_ops_xla.py), with a mutation showing the check would catch a wrong
reading:

- `mhlo.topk`: XLA's TopK as the HLO -> StableHLO conversion writes it back (the partitioned
  module of `jax.lax.top_k`, an MoE router), read as `chlo.top_k`;
- ui64 counting below 2**63: jax's Threefry counters (`iota_2x32_shape`, dropout's random
  bits) count in ui64 and split the count into two ui32 words; the partitioned module adds
  the device's offset, an i32 converted to ui64."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import check_against_xla
from tv_mlir.errors import Unsupported
from tv_mlir.frontend import ui64_ranges
from tv_mlir.frontend.read import load_module


def _module(sig: str, body: str) -> str:
    return ("module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
            f"  func.func public @main{sig} {{\n{body}\n  }}\n}}\n")


TOPK = _module("(%a: tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<4x3xi32>)", """
    %v, %i = mhlo.topk(%a, k = 3) : tensor<4x6xf32> -> (tensor<4x3xf32>, tensor<4x3xi32>)
    return %v, %i : tensor<4x3xf32>, tensor<4x3xi32>""")
# Ties (three 5s: the lower index first), negatives, a constant row.
TOPK_IN = [np.array([[1, 5, 5, 2, 5, 0], [3, -1, 2, 2, 7, 7], [0, 0, 0, 0, 0, 0], [-3, -2, -8, 4, 0.5, 1]],
                    np.float32)]


def test_mhlo_topk_is_xla_top_k(xla) -> None:
    check_against_xla(xla, TOPK, TOPK_IN)
    r = np.random.default_rng(0)
    check_against_xla(xla, TOPK, [r.normal(size=(4, 6)).astype(np.float32)])


def test_mhlo_topk_mutation_is_caught(xla, monkeypatch: pytest.MonkeyPatch) -> None:
    """The k largest in ascending order (a plausible misreading of XLA's TopK): the XLA
    check fails."""
    from tv_mlir.semantics import TABLE

    real = TABLE["chlo.top_k"]

    def ascending(ctx, op, args):
        return [r[..., ::-1].copy() for r in real(ctx, op, args)]

    monkeypatch.setitem(TABLE, "chlo.top_k", ascending)
    with pytest.raises(AssertionError):
        check_against_xla(xla, TOPK, TOPK_IN)


def test_mhlo_topk_bottom_k_is_refused_with_its_location() -> None:
    with pytest.raises(Unsupported) as e:
        load_module(TOPK.replace("k = 3)", "k = 3, largest = false)"))
    assert "largest = false" in str(e.value) and e.value.loc


# jax's iota_2x32_shape for a 4x4 block at offset (4 * p, 4 * q), p and q looked up by the
# device (here passed in as the table index), the high and low ui32 words of 16 * row + col.
COUNTERS = _module("(%p: tensor<i32>, %q: tensor<i32>) -> (tensor<4x4xui32>, tensor<4x4xui32>)", """
    %tab = stablehlo.constant dense<[0, 0, 0, 0, 1, 1, 1, 1]> : tensor<8xi32>
    %ps = stablehlo.dynamic_slice %tab, %p, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %p1 = stablehlo.reshape %ps : (tensor<1xi32>) -> tensor<i32>
    %qs = stablehlo.dynamic_slice %tab, %q, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %q1 = stablehlo.reshape %qs : (tensor<1xi32>) -> tensor<i32>
    %c4 = stablehlo.constant dense<4> : tensor<i32>
    %p4 = stablehlo.multiply %p1, %c4 : tensor<i32>
    %q4 = stablehlo.multiply %q1, %c4 : tensor<i32>
    %pu = stablehlo.convert %p4 : (tensor<i32>) -> tensor<ui64>
    %qu = stablehlo.convert %q4 : (tensor<i32>) -> tensor<ui64>
    %pb = stablehlo.broadcast_in_dim %pu, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %qb = stablehlo.broadcast_in_dim %qu, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %i0 = stablehlo.iota dim = 0 : tensor<4xui64>
    %r = stablehlo.add %i0, %pb : tensor<4xui64>
    %i1 = stablehlo.iota dim = 0 : tensor<4xui64>
    %c = stablehlo.add %i1, %qb : tensor<4xui64>
    %rr = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<4xui64>) -> tensor<4x4xui64>
    %cc = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<4xui64>) -> tensor<4x4xui64>
    %k16 = stablehlo.constant dense<16> : tensor<4x4xui64>
    %rows = stablehlo.multiply %rr, %k16 : tensor<4x4xui64>
    %n = stablehlo.add %rows, %cc : tensor<4x4xui64>
    %k32 = stablehlo.constant dense<32> : tensor<4x4xui64>
    %hi64 = stablehlo.shift_right_logical %n, %k32 : tensor<4x4xui64>
    %hi = stablehlo.convert %hi64 : (tensor<4x4xui64>) -> tensor<4x4xui32>
    %lo = stablehlo.convert %n : (tensor<4x4xui64>) -> tensor<4x4xui32>
    return %hi, %lo : tensor<4x4xui32>, tensor<4x4xui32>""")

# A count whose high word is not 0 (2**40 + i) and that is compared and shifted: still below 2**63.
BIG_COUNT = _module("(%a: tensor<6xui32>) -> (tensor<6xui32>, tensor<6xui32>, tensor<6xi1>)", """
    %i = stablehlo.iota dim = 0 : tensor<6xui64>
    %a64 = stablehlo.convert %a : (tensor<6xui32>) -> tensor<6xui64>
    %big = stablehlo.constant dense<1099511627776> : tensor<6xui64>
    %m = stablehlo.multiply %a64, %i : tensor<6xui64>
    %n = stablehlo.add %m, %big : tensor<6xui64>
    %k32 = stablehlo.constant dense<32> : tensor<6xui64>
    %hi64 = stablehlo.shift_right_logical %n, %k32 : tensor<6xui64>
    %hi = stablehlo.convert %hi64 : (tensor<6xui64>) -> tensor<6xui32>
    %lo = stablehlo.convert %n : (tensor<6xui64>) -> tensor<6xui32>
    %lt = stablehlo.compare LT, %n, %big, UNSIGNED : (tensor<6xui64>, tensor<6xui64>) -> tensor<6xi1>
    return %hi, %lo, %lt : tensor<6xui32>, tensor<6xui32>, tensor<6xi1>""")

# A shift of a count that may pass 2**63: an i32 that may be negative, converted. (By 40,
# not 32: shifted by 32 and cut to ui32, the int64 bits' arithmetic shift gives the same word.)
WRAPPING = _module("(%a: tensor<4xi32>) -> tensor<4xui32>", """
    %u = stablehlo.convert %a : (tensor<4xi32>) -> tensor<4xui64>
    %k32 = stablehlo.constant dense<40> : tensor<4xui64>
    %hi64 = stablehlo.shift_right_logical %u, %k32 : tensor<4xui64>
    %hi = stablehlo.convert %hi64 : (tensor<4xui64>) -> tensor<4xui32>
    return %hi : tensor<4xui32>""")
WRAPPING_IN = [np.array([-1, 5, -7, 2**31 - 1], np.int32)]


@pytest.mark.parametrize("p,q", [(0, 0), (5, 2), (7, 7)])
def test_threefry_counters_are_xla(xla, p: int, q: int) -> None:
    check_against_xla(xla, COUNTERS, [np.array(p, np.int32), np.array(q, np.int32)])


def test_counts_past_32_bits_are_xla(xla) -> None:
    check_against_xla(xla, BIG_COUNT, [np.array([0, 1, 7, 2**31, 2**32 - 1, 3], np.uint32)])


def test_a_ui64_that_may_pass_2_63_is_still_refused() -> None:
    with pytest.raises(Unsupported) as e:
        load_module(WRAPPING)
    assert "stablehlo.convert on ui64" in str(e.value) and e.value.loc is not None


def test_the_bound_is_what_keeps_the_wrapping_count_out(xla, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the 2**63 gate opened (every ui64 read as small), the module above is read and
    the numeric algebra's int64 bits shift the sign in: XLA disagrees. This is the bug the
    gate keeps out."""
    monkeypatch.setattr(ui64_ranges, "below_limit", lambda iv: True)
    with pytest.raises(AssertionError):
        check_against_xla(xla, WRAPPING, WRAPPING_IN, symbolic=False)


def test_intervals_of_the_counters() -> None:
    """What the gate proved for the partitioned counters: the device offsets from the
    table, the counts up to 16 * 7 + 7."""
    main = load_module(COUNTERS).main
    iv = ui64_ranges.intervals(main)
    ops = list(main.body.walk())
    offsets = [iv[o.results[0]] for o in ops if o.name == "stablehlo.convert" and o.result_types[0].dtype == "ui64"]
    count = next(o for o in ops if o.name == "stablehlo.shift_right_logical")
    assert offsets == [(0, 4), (0, 4)]
    assert iv[count.operands[0]] == (0, 16 * 7 + 7) and iv[count.results[0]] == (0, 0)


def test_a_permuted_count_may_be_zero() -> None:
    """collective_permute leaves zeros on a device nothing is sent to: the interval of a
    permuted count in [5, 9] includes 0."""
    text = _module("(%a: tensor<4xui32>) -> tensor<4xui64>", """
    %i = stablehlo.iota dim = 0 : tensor<4xui64>
    %c5 = stablehlo.constant dense<5> : tensor<4xui64>
    %n = stablehlo.add %i, %c5 : tensor<4xui64>
    %p = "stablehlo.collective_permute"(%n) <{source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}> : (tensor<4xui64>) -> tensor<4xui64>
    return %p : tensor<4xui64>""")
    main = load_module(text).main
    iv = ui64_ranges.intervals(main)
    permute = next(o for o in main.body.walk() if o.name == "stablehlo.collective_permute")
    assert iv[permute.operands[0]] == (5, 8) and iv[permute.results[0]] == (0, 8)
