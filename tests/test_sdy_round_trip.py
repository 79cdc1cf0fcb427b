"""Shardy's HLO round-trip form (frontend/read.py): XLA's own modules, dumped before its
optimisations and converted to StableHLO (testdata/ops_more/gen_sdy_round_trip.py), read as
the sdy.manual_computation they encode; the round-trip custom calls used any other way, and
the xla.sdy calls without a reading, end `unknown` naming themselves."""
from __future__ import annotations

import pytest

from conftest import TESTDATA
from tv_mlir.api import verify
from tv_mlir.frontend.read import load_module

OPS_MORE = TESTDATA / "ops_more"
NAMES = ["matmul_psum", "partial_manual"]


def _text(name: str, form: str) -> str:
    return (OPS_MORE / f"sdy_rt_{name}.{form}.mlir").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_form_is_equivalent_to_reference_and_to_jax_form(name: str) -> None:
    text = _text(name, "round_trip")
    assert "@xla.sdy.GlobalToLocalShape" in text and "@xla.sdy.LocalToGlobalShape" in text
    assert "@xla.sdy.FuncResultSharding" in text
    v = verify(_text(name, "ref"), text)
    assert v.verdict == "equivalent", v.reason
    v = verify(_text(name, "sdy"), text)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_reads_as_the_manual_computation_jax_wrote(name: str) -> None:
    def manual(text: str):
        module = load_module(text)
        ops = [op for f in module.funcs.values() for op in f.body.walk() if op.name == "sdy.manual_computation"]
        assert len(ops) == 1
        return module, ops[0]

    rt_module, rt = manual(_text(name, "round_trip"))
    _, jx = manual(_text(name, "sdy"))
    assert not any(n.startswith("xla.sdy.") for n in rt_module.funcs)  # the body became the region
    assert rt.attrs["manual_axes"] == jx.attrs["manual_axes"]
    for key in ("in_shardings", "out_shardings"):
        assert [s.describe() for s in rt.attrs[key]] == [s.describe() for s in jx.attrs[key]], key
    assert rt.result_types == jx.result_types


def test_mesh_device_order_bug_is_found_and_confirmed_by_xla() -> None:
    # Devices 0 and 4 exchanged in the round-trip mesh: the body's psum groups, device ids,
    # then sum shards of both dp rows.
    v = verify(_text("matmul_psum", "ref"), _text("matmul_psum", "bug"))
    assert v.verdict == "not-equivalent", v.reason
    replays = {r.backend: r for r in v.counterexample.replay}
    assert replays["xla"].confirmed, replays


def test_result_order_bug_is_found() -> None:
    # The body's two (equally shaped) results handed to LocalToGlobalShape the other way
    # round: the reader pairs each with its own out-sharding and global value. (XLA cannot
    # compile this partial-manual module from text: the numeric replay confirms.)
    v = verify(_text("partial_manual", "ref"), _text("partial_manual", "bug"))
    assert v.verdict != "equivalent", v.reason
    assert v.counterexample is not None
    replays = {r.backend: r for r in v.counterexample.replay}
    assert replays["numeric"].confirmed, replays


_HEAD = ('module @m attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\\22x\\22=2]>}"}, '
         'mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n')
_BODY = '''  func.func private @xla.sdy.manual_computation_body(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.negate %arg0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
'''
_ENTER = ('%0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%a) {has_side_effect = true, mhlo.frontend_attributes = '
          '{xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}]>]>", '
          'xla.sdy.manual_axes = "#sdy<manual_axes{\\22x\\22}>"}} : (tensor<4xf32>) -> tensor<2xf32>')
_LEAVE = ('%2 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%1) {has_side_effect = true, mhlo.frontend_attributes = '
          '{xla.sdy.manual_axes = "#sdy<manual_axes{\\22x\\22}>", '
          'xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}]>]>"}} : (tensor<2xf32>) -> tensor<4xf32>')


def _module(*lines: str, result: str = "%2") -> str:
    body = "\n".join(f"    {ln}" for ln in lines)
    return (_HEAD + _BODY + "  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
            f"{body}\n    return {result} : tensor<4xf32>\n  }}\n}}\n")


_CALL = "%1 = call @xla.sdy.manual_computation_body(%0) : (tensor<2xf32>) -> tensor<2xf32>"
_NEG = ("module @r {\n  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "    %0 = stablehlo.negate %a : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n")


def test_hand_written_round_trip_is_read() -> None:
    v = verify(_NEG, _module(_ENTER, _CALL, _LEAVE))
    assert v.verdict == "equivalent", v.reason


def test_hand_written_round_trip_with_an_unread_tuple_part() -> None:
    # Two globals enter, the body reads one (the other part of the tuple has no reader).
    enter = _ENTER.replace("(%a)", "(%a, %a)").replace("[<@mesh, [{\\22x\\22}]>]", "[<@mesh, [{\\22x\\22}]>, <@mesh, [{}]>]") \
        .replace("(tensor<4xf32>) -> tensor<2xf32>", "(tensor<4xf32>, tensor<4xf32>) -> tuple<tensor<2xf32>, tensor<4xf32>>")
    assert "<@mesh, [{}]>" in enter and "(%a, %a)" in enter and "tuple<" in enter
    part = "%p = stablehlo.get_tuple_element %0[0] : (tuple<tensor<2xf32>, tensor<4xf32>>) -> tensor<2xf32>"
    v = verify(_NEG, _module(enter, part, _CALL.replace("(%0)", "(%p)"), _LEAVE))
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("target", ["xla.sdy.FuncResultSharding", "xla.sdy.Sharding", "xla.sdy.PropagationBarrier",
                                    "InspectSharding"])
def test_annotation_calls_are_identities(target: str) -> None:
    # Shardy's round-trip annotations and jax.debug.inspect_array_sharding's call (which XLA
    # removes, forwarding its operand) do not change values.
    text = ("module @m {\n  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
            f"    %0 = stablehlo.custom_call @{target}(%a) {{has_side_effect = true}} : (tensor<4xf32>) -> tensor<4xf32>\n"
            "    %1 = stablehlo.negate %0 : tensor<4xf32>\n    return %1 : tensor<4xf32>\n  }\n}\n")
    v = verify(_NEG, text)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("lines,result,names", [
    # A local value used outside the body call.
    ((_ENTER, _CALL, _LEAVE, "%3 = stablehlo.negate %0 : tensor<2xf32>"), "%2", "xla.sdy.GlobalToLocalShape"),
    # A body result read without LocalToGlobalShape.
    ((_ENTER, _CALL, _LEAVE, "%3 = stablehlo.negate %1 : tensor<2xf32>"), "%2", "manual_computation_body"),
    # A body called without GlobalToLocalShape.
    (("%0 = stablehlo.slice %a [0:2] : (tensor<4xf32>) -> tensor<2xf32>", _CALL,
      "%2 = stablehlo.concatenate %1, %1, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>"), "%2",
     "GlobalToLocalShape"),
    # An xla.sdy call no reading knows.
    (("%2 = stablehlo.custom_call @xla.sdy.SomethingNew(%a) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>",),
     "%2", "@xla.sdy.SomethingNew"),
], ids=["local_value_escapes", "body_result_escapes", "body_without_entry", "unknown_sdy_call"])
def test_other_uses_are_unknown_naming_the_call(lines, result: str, names: str) -> None:
    text = _module(*lines, result=result)
    v = verify(_NEG, text)
    assert v.verdict == "unknown", v.reason
    assert names in v.reason, v.reason
    assert v.unsupported and v.unsupported[0]["loc"], v.unsupported


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_mlir_is_made_the_manual_computation_it_reads_as(name: str) -> None:
    # The MLIR kept for the passes that edit it (the shrink rewrite) is the sdy form the
    # converter read: no tuple, no body call, the round-trip meshes declared; every SSA
    # name's MLIR value has the type the converter gave it.
    from tv_mlir.frontend.read import load_module_mlir

    loaded = load_module_mlir(_text(name, "round_trip"), name)
    loaded.mlir.operation.verify()
    text = loaded.mlir.operation.get_asm()
    assert "tuple<tensor" not in text and "xla.sdy.manual_computation_body" not in text  # ShardingGroup: tuple<>
    assert "@xla.sdy.GlobalToLocalShape" not in text and "@xla.sdy.LocalToGlobalShape" not in text
    assert "sdy.manual_computation(" in text and "sdy.mesh @mesh = " in text
    # The annotations without a value of their own are gone (XLA's import of the form makes
    # them attributes; its partitioner refuses them), and XLA runs this form too.
    assert "@xla.sdy.FuncResultSharding" not in text and "@xla.sdy.ShardingGroup" not in text
    assert loaded.module.text == loaded.mlir.operation.get_asm(enable_debug_info=True).encode()
    types = {n: t for f in loaded.module.funcs.values() for op in f.body.walk()
             for n, t in zip(op.results, op.result_types)}
    for n, t in types.items():
        if n in loaded.values:
            assert tuple(loaded.values[n].type.shape) == t.shape, n
    mc = next(op for op in loaded.module.funcs[loaded.module.entry].body.walk() if op.name == "sdy.manual_computation")
    assert all(r in loaded.values for r in mc.results if not r.startswith("%rt."))


def _scaled(text: str) -> str:
    return text.replace("tensor<4xf32>", "tensor<4096xf32>").replace("tensor<2xf32>", "tensor<2048xf32>")


def test_round_trip_form_shrinks_whole() -> None:
    # With the result's FuncResultSharding (which XLA writes on every result of the form):
    # before it was dropped at read time it pinned every class it touched; and the full-size
    # check runs on XLA (its partitioner refuses xla.sdy custom calls).
    leave = _LEAVE
    result = ('%3 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%2) {has_side_effect = true, '
              'mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}]>]>"}} '
              ': (tensor<4xf32>) -> tensor<4xf32>')
    v = verify(_scaled(_NEG), _scaled(_module(_ENTER, _CALL, leave, result, result="%3")))
    assert v.verdict == "equivalent", v.reason
    assert v.shrink and v.shrink["applied"] and not v.shrink["kept"], v.shrink
    fsc = v.full_size_check
    assert fsc is not None and fsc.ran and fsc.outcome == "agree", fsc


def test_round_trip_form_shrinks() -> None:
    # Before the MLIR was untupled, the shrink rewrite left the GlobalToLocalShape tuple
    # and the body call at their old types ('func.call' op operand type mismatch): the pair
    # was verified at its own sizes ("shrink: not applied").
    enter = _ENTER.replace("(%a)", "(%a, %a)").replace("[<@mesh, [{\\22x\\22}]>]", "[<@mesh, [{\\22x\\22}]>, <@mesh, [{}]>]") \
        .replace("(tensor<4xf32>) -> tensor<2xf32>", "(tensor<4xf32>, tensor<4xf32>) -> tuple<tensor<2xf32>, tensor<4xf32>>")
    part = "%p = stablehlo.get_tuple_element %0[0] : (tuple<tensor<2xf32>, tensor<4xf32>>) -> tensor<2xf32>"
    v = verify(_scaled(_NEG), _scaled(_module(enter, part, _CALL.replace("(%0)", "(%p)"), _LEAVE)))
    assert v.verdict == "equivalent", v.reason
    assert v.shrink and v.shrink["applied"], v.shrink
    assert (4096, 2) in [(c["original"], c["verified"]) for c in v.shrink["shrunk"]], v.shrink
