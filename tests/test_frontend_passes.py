"""Frontend conversion and the normalization passes."""
from __future__ import annotations

import pytest

from conftest import TESTDATA
from tv_mlir.errors import ParseError, UsageError
from tv_mlir.frontend.read import load_module
from tv_mlir.passes import load_pipeline, run_pipeline
from tv_mlir.passes.pipeline import parse_pipeline


def test_jax_export_with_debug_info_converts() -> None:
    m = load_module(TESTDATA / "pairs/relu_forms.a.mlir")
    assert m.entry == "main"
    assert m.main.arg_names[0] == "x"
    ops = [op.name for op in m.main.body.walk()]
    assert "func.call" in ops  # jax's private @relu
    # Locations point at the Python source through the loc(...) chain.
    assert any("gen_pairs.py" in op.loc for op in m.main.body.walk())


def test_inline_resolves_private_calls_and_keeps_semantics() -> None:
    m = load_module(TESTDATA / "pairs/relu_forms.a.mlir")
    inlined = run_pipeline(load_pipeline("default"), m)
    names = [op.name for op in inlined.main.body.walk()]
    assert "func.call" not in names and "stablehlo.maximum" in names
    defined = set(inlined.main.body.args)
    for op in inlined.main.body.ops:
        assert all(o in defined for o in op.operands), op
        defined.update(op.results)
    assert set(inlined.main.body.returns) <= defined


def test_nested_calls_inside_regions_are_inlined() -> None:
    m = load_module(TESTDATA / "pairs/fori_pow.a.mlir")
    inlined = run_pipeline(load_pipeline("default"), m)
    assert all(op.name != "func.call" for op in inlined.main.body.walk())


def test_dce_and_noop_custom_calls() -> None:
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<4xf32>
  %2 = stablehlo.add %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}"""
    m = run_pipeline(load_pipeline("default"), load_module(text))
    assert [op.name for op in m.main.body.ops] == ["stablehlo.multiply"]
    assert m.main.body.ops[0].operands == (m.main.body.args[0],) * 2


def test_pipeline_text_format() -> None:
    p = parse_pipeline("# comment\ninline max_depth=8\n\ndce\n", "t")
    assert p.steps == (("inline", (("max_depth", 8),)), ("dce", ()))
    with pytest.raises(UsageError):
        parse_pipeline("inline depth\n", "t")
    with pytest.raises(UsageError):
        run_pipeline(parse_pipeline("dce bogus=1\n", "t"), load_module(TESTDATA / "hand/add_commute.a.mlir"))


def test_parse_errors_carry_file_and_position() -> None:
    with pytest.raises(ParseError) as err:
        load_module(TESTDATA / "bad/truncated.mlir")
    assert "truncated.mlir:" in err.value.one_line()
    with pytest.raises(ParseError):
        load_module(TESTDATA / "bad/empty.mlir")
    with pytest.raises(ParseError):
        load_module(b"module {}\n")  # no function at all


def test_bf16_and_hex_constants() -> None:
    text = """func.func @main() -> (tensor<2xbf16>, tensor<2xbf16>) {
  %0 = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %1 = stablehlo.constant dense<[0x7F80, 0x3F80]> : tensor<2xbf16>
  return %0, %1 : tensor<2xbf16>, tensor<2xbf16>
}"""
    m = load_module(text)
    c0, c1 = (op.attrs["value"] for op in m.main.body.ops)
    assert [float(v) for v in c0] == [1.5, -2.0]
    assert [float(v) for v in c1] == [float("inf"), 1.0]
