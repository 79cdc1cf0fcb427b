"""unroll-loops (tv_mlir/passes/unroll.py): a short counted while loop becomes one copy
of its body per trip. The copies must compute what the loop computes (checked on the
interpreter against the loop as written, for each condition form the pass accepts), loops
it cannot count stay loops, and the fori_loop ring attention of gen_clients3 that was
`unknown` while its loop was kept is proved, its reversed ring still caught."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import TESTDATA, client_generator, numeric_values, prepared
from tv_mlir.frontend.read import load_module
from tv_mlir.passes import unroll
from tv_mlir.testing import assert_equivalent, assert_not_equivalent

CLIENTS = TESTDATA / "clients"


def _loop(start: int = 0, bound: int = 3, direction: str = "LT", step: int = 1, ity: str = "i32",
          bound_from: str = "const") -> str:
    """x -> x * x + i for each counter value i the loop visits, and the counter out."""
    bound_def = (f"%b = stablehlo.constant dense<{bound}> : tensor<{ity}>" if bound_from == "const"
                 else "%b = stablehlo.convert %j : (tensor<i32>) -> tensor<" + ity + ">")
    return f"""func.func @main(%x0: tensor<4xf32>, %j: tensor<i32>) -> (tensor<4xf32>, tensor<{ity}>) {{
  %c = stablehlo.constant dense<{start}> : tensor<{ity}>
  %r:2 = stablehlo.while(%i = %c, %x = %x0) : tensor<{ity}>, tensor<4xf32>
    cond {{
      {bound_def}
      %p = stablehlo.compare {direction}, %i, %b, SIGNED : (tensor<{ity}>, tensor<{ity}>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %s = stablehlo.constant dense<{step}> : tensor<{ity}>
      %n = stablehlo.add %i, %s : tensor<{ity}>
      %f = stablehlo.convert %i : (tensor<{ity}>) -> tensor<f32>
      %fb = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %y = stablehlo.multiply %x, %x : tensor<4xf32>
      %z = stablehlo.add %y, %fb : tensor<4xf32>
      stablehlo.return %n, %z : tensor<{ity}>, tensor<4xf32>
    }}
  return %r#1, %r#0 : tensor<4xf32>, tensor<{ity}>
}}"""


def _whiles(module) -> int:
    return sum(op.name == "stablehlo.while" for op in module.main.body.walk())


def _same_as_the_loop(text: str) -> bool:
    """The default pipeline's module (loops unrolled) and the module as written (the
    interpreter runs the loop) give the same outputs on random inputs."""
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, 4).astype(np.float32), np.array(3, np.int32)]
    want = numeric_values(prepared(text, "none"), inputs)
    got = numeric_values(prepared(text), inputs)
    return all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(want, got))


@pytest.mark.parametrize("kw", [
    {}, {"start": 1, "bound": 4}, {"direction": "LE"}, {"direction": "NE", "bound": 4, "step": 2},
    {"step": 2, "bound": 5}, {"ity": "i64"}, {"bound": 0}, {"bound": unroll.MAX_TRIPS},
])
def test_unrolled_loop_computes_what_the_loop_does(kw: dict) -> None:
    text = _loop(**kw)
    assert _whiles(prepared(text)) == 0
    assert _same_as_the_loop(text)


def test_a_loosened_trip_count_is_caught() -> None:
    """The check above can fail: read LE as LT (one trip short) and it does."""
    text = _loop(direction="LE")
    assert _same_as_the_loop(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(unroll._DIRECTIONS, "LE", np.less)
        assert not _same_as_the_loop(text)


@pytest.mark.parametrize("kw", [
    {"bound": unroll.MAX_TRIPS + 1},  # too many trips
    {"bound_from": "input"},  # the bound is data
    {"step": 0, "direction": "NE"},  # no progress: the counter never reaches the bound
    {"step": -1, "bound": -3, "direction": "NE"},  # counting down is left to the interpreter
])
def test_loops_it_cannot_count_stay_loops(kw: dict) -> None:
    assert _whiles(prepared(_loop(**kw))) == 1


def test_nested_loops_are_unrolled_inside_out() -> None:
    inner = _loop(bound=2)
    # The same loop twice, the second inside a loop of 2 trips over (x, and a dummy counter).
    text = inner.replace("return %r#1, %r#0", """%c0 = stablehlo.constant dense<0> : tensor<i32>
  %o:2 = stablehlo.while(%k = %c0, %w = %r#1) : tensor<i32>, tensor<4xf32>
    cond {
      %b2 = stablehlo.constant dense<2> : tensor<i32>
      %q = stablehlo.compare LT, %k, %b2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %q : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %k1 = stablehlo.add %k, %one : tensor<i32>
      %in:2 = stablehlo.while(%i2 = %c0, %v = %w) : tensor<i32>, tensor<4xf32>
        cond {
          %b3 = stablehlo.constant dense<2> : tensor<i32>
          %q2 = stablehlo.compare LT, %i2, %b3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %q2 : tensor<i1>
        } do {
          %one2 = stablehlo.constant dense<1> : tensor<i32>
          %n2 = stablehlo.add %i2, %one2 : tensor<i32>
          %v2 = stablehlo.multiply %v, %v : tensor<4xf32>
          stablehlo.return %n2, %v2 : tensor<i32>, tensor<4xf32>
        }
      stablehlo.return %k1, %in#1 : tensor<i32>, tensor<4xf32>
    }
  return %o#1, %r#0""")
    assert _whiles(prepared(text)) == 0
    assert _same_as_the_loop(text)


def test_fori_loop_ring_attention_is_proved() -> None:
    """gen_clients3's causal ring attention (online softmax in a fori_loop, k/v passed by
    ppermute): unknown (solver timeout) while the loop was kept, 74 s of CPU."""
    assert_equivalent(CLIENTS / "ring_causal_loop.ref.mlir", CLIENTS / "ring_causal_loop.partitioned.mlir")


def test_fori_loop_ring_reversed_is_caught() -> None:
    gen3 = client_generator("gen_clients3")
    text = (CLIENTS / "ring_causal_loop.partitioned.mlir").read_text()
    bad = gen3.MUTATIONS["reversed_permute"](text)
    assert bad != text
    assert_not_equivalent(CLIENTS / "ring_causal_loop.ref.mlir", bad, confirmed=True)


def test_a_scan_stays_a_loop_for_the_staged_induction() -> None:
    """A body that reads its trip's slice (a scan over stacked layers) is left to
    stages/loops.py, which proves the body once by induction."""
    text = _loop(bound=2).replace(
        "%y = stablehlo.multiply %x, %x : tensor<4xf32>",
        "%ds = stablehlo.dynamic_slice %x, %i, sizes = [4] : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>\n"
        "      %y = stablehlo.multiply %ds, %x : tensor<4xf32>")
    assert _whiles(prepared(text)) == 1
    assert _whiles(prepared(_loop(bound=2))) == 0


def test_what_it_does_not_unroll_is_not_copied() -> None:
    """A function without a loop comes back as it is, and beside a kept loop every op
    outside it is the same object: the pass runs on every program, and on the 126-layer
    stack of testdata/depth (~40,000 ops, no loop) copying each op, and the definitions
    once per region, cost ~1-1.5 s per program per prepare."""
    plain = load_module(_loop(bound=2))
    no_loop = load_module("""func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}""")
    assert unroll.unroll_loops(no_loop).main.body is no_loop.main.body
    scan = load_module(_loop(bound=2).replace(
        "%y = stablehlo.multiply %x, %x : tensor<4xf32>",
        "%ds = stablehlo.dynamic_slice %x, %i, sizes = [4] : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>\n"
        "      %y = stablehlo.multiply %ds, %x : tensor<4xf32>"))
    kept = unroll.unroll_loops(scan).main.body
    assert _whiles(scan) == 1
    assert all(a is b for a, b in zip(kept.ops, scan.main.body.ops, strict=True))
    # The loop it does unroll is rewritten (the check above is not vacuous).
    assert unroll.unroll_loops(plain).main.body is not plain.main.body
