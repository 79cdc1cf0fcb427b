"""Red team 11 (docs/stages.md, "Red team 11"): adversarial pairs against the proof
mechanisms of the last two sessions. Each bug twin must never be `equivalent`; where it runs
whole it is `not-equivalent` with a counterexample XLA confirms (testdata/gen_redteam11.py
confirms the single-device twins on XLA at their own sizes as well). Where a check closed a
hole, a test shows the loosened check gives the wrong answer, so a test fails if the check
is dropped.

Found and fixed here:
- a wrong `equivalent`: execute/interp.SharedValues.key left out the operands' types, and
  the algebra's float convert returns its operand's very array, so with the sweep off (an
  API option; the sweep's cuts make fresh arrays) the bits of an f16 and the bits of its
  bf16 convert were one key on one array: `bits_types` was proved `equivalent`, and is
  `not-equivalent`, confirmed on XLA;
- execute/interp.SharedValues.key shared a reference's `partition_id` (one device, one
  part) with a program on two devices: an IndexError traceback instead of a verdict;
- stages/hashing's canonical text named a constant that only a region reads by its SSA
  name, so two stages that swap two such constants' names hashed alike and the second
  took the first's proof (`equivalent` for a stage that is not);
- stages/same took two `dense_resource` constants (text naming data the text leaves out)
  for one constant."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import z3

import tv_mlir
from tv_mlir.api import prepare
from tv_mlir.execute import interp
from tv_mlir.execute.interp import SharedValues
from tv_mlir.ir import Module
from tv_mlir.options import Options
from tv_mlir.passes.normalize import attr_key
from tv_mlir.prove import solve
from tv_mlir.semantics import TABLE
from tv_mlir.stages import hashing, lanes, same
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.extract import StagePair
from tv_mlir.stages.hashing import module_text, stage_hash

DATA = Path(__file__).resolve().parent.parent / "testdata" / "redteam11"
OPTIONS = Options(cache=False)


def _verify(name: str, twin: str) -> tv_mlir.Verdict:
    return tv_mlir.verify(str(DATA / f"{name}.ref.mlir"), str(DATA / f"{name}.{twin}.mlir"), cache=False,
                          shrink=False)


def _confirmed_on_xla(v: tv_mlir.Verdict) -> bool:
    c = v.counterexample
    return c is not None and c.confirmed and any(r.backend == "xla" and r.confirmed for r in c.replay)


# --- SharedValues: one array at two types ----------------------------------------------

@pytest.mark.parametrize("sweep", [False, True])
def test_bits_at_two_types_are_refuted_on_xla(sweep: bool) -> None:
    # The bits of x (f16) against the bits of its bf16 convert, where x - w == 37.25.
    v = tv_mlir.verify(str(DATA / "bits_types.ref.mlir"), str(DATA / "bits_types.bug.mlir"), cache=False,
                       shrink=False, sweep=sweep)
    assert v.verdict == "not-equivalent", v.reason
    assert _confirmed_on_xla(v)


def test_bits_at_two_types_share_a_wrong_value_without_the_types(monkeypatch: pytest.MonkeyPatch) -> None:
    key = SharedValues.key
    monkeypatch.setattr(SharedValues, "key", staticmethod(lambda op, args, types: key(op, args, ())))
    v = tv_mlir.verify(str(DATA / "bits_types.ref.mlir"), str(DATA / "bits_types.bug.mlir"), cache=False,
                       shrink=False, sweep=False)
    assert v.verdict == "equivalent"


# --- reduce_precision: a rounding one program makes is a precision finding (driver) -------

def test_reduce_precision_is_a_precision_finding() -> None:
    v = tv_mlir.verify(str(DATA / "reduce_precision.ref.mlir"), str(DATA / "reduce_precision.bug.mlir"),
                       cache=False, shrink=False, strict_dtypes=True)
    assert v.precision and v.verdict == "not-equivalent", v.reason
    assert "e5m2" in v.precision[0]
    same = tv_mlir.verify(str(DATA / "reduce_precision.bug.mlir"), str(DATA / "reduce_precision.bug.mlir"),
                          cache=False, shrink=False, strict_dtypes=True)
    assert same.verdict == "equivalent" and not same.precision, same.reason


# --- SharedValues: a device id under two device counts ----------------------------------

def test_device_id_bug_is_refuted_on_xla() -> None:
    # The other program adds its partition id (1 on device 1) where x == 37.25: not what
    # the one-device reference computes (a condition random draws rarely meet).
    v = _verify("device_id", "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert _confirmed_on_xla(v)


def test_device_id_correct_twin_is_equivalent() -> None:
    assert _verify("device_id", "ok").verdict == "equivalent"


def test_device_id_shared_across_device_counts_breaks_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # The key without the SPMD check: the reference's one-part partition_id is taken by the
    # two-device program, whose next op reads the missing part.
    monkeypatch.setattr(interp, "SPMD_OPS", frozenset())
    try:
        v = _verify("device_id", "bug")
    except IndexError:
        return
    assert v.verdict != "not-equivalent"


# --- stages/hashing: constants a region reads -------------------------------------------

REGION_READS = """module attributes {mhlo.num_partitions = 1 : i32} {
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %p = stablehlo.constant dense<1.0> : tensor<f32>
  %q = stablehlo.constant dense<2.0> : tensor<f32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %out = stablehlo.reduce(%x init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    reducer(%a: tensor<f32>, %b: tensor<f32>) {
      %m = stablehlo.multiply %b, %p : tensor<f32>
      %s = stablehlo.subtract %m, %q : tensor<f32>
      %t = stablehlo.add %a, %s : tensor<f32>
      stablehlo.return %t : tensor<f32>
    }
  return %out : tensor<f32>
}
}"""


def _swapped_names(m: Module) -> Module:
    """The module with its first two constants' result names swapped: the reduce body now
    multiplies by 2 and subtracts 1 (its ops read the names), where `m` multiplies by 1 and
    subtracts 2. Value names are the frontend's, in order of definition, for text read
    from MLIR; a module built otherwise need not keep that order."""
    ops = list(m.main.body.ops)
    (a,), (b,) = ops[0].results, ops[1].results
    ops[0], ops[1] = replace(ops[0], results=(b,)), replace(ops[1], results=(a,))
    return replace(m, funcs={m.entry: replace(m.main, body=replace(m.main.body, ops=ops))})


def _region_stages() -> tuple[StagePair, StagePair]:
    a = prepare(REGION_READS, OPTIONS)
    b = _swapped_names(a)
    n = len(a.main.body.ops)
    return StagePair("same", a, a, n, n, (), ("%x",)), StagePair("swapped", a, b, n, n, (), ("%x",))


def test_region_read_constants_are_placed_in_the_stage_hash() -> None:
    one, two = _region_stages()
    assert "?%" not in module_text(two.other, canonical=True)  # every operand named by its op
    assert stage_hash(one.ref, one.other) != stage_hash(two.ref, two.other)
    records, _ = stages_run._prove_stages([one, two], OPTIONS, finite={"%x"})
    assert [r.verdict for r in records] == ["equivalent", "not-equivalent"]


def test_region_read_constants_by_name_share_a_wrong_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    # The hash as it was (a region's reads not counted as uses): both stages hash alike,
    # and the second is `reused`: `equivalent`.
    monkeypatch.setattr(hashing, "region_uses", lambda op: list(op.operands))
    one, two = _region_stages()
    assert stage_hash(one.ref, one.other) == stage_hash(two.ref, two.other)
    records, _ = stages_run._prove_stages([one, two], OPTIONS, finite={"%x"})
    assert records[1].how == "reused" and records[1].verdict == "equivalent"


# --- stages/same: what the text comparison must keep ------------------------------------

def _resource(blob: str) -> str:
    return ("module attributes {mhlo.num_partitions = 1 : i32} {\n"
            "func.func @main(%x: tensor<1xf32>) -> tensor<1xf32> {\n"
            "  %c = stablehlo.constant dense_resource<blob1> : tensor<1xf32>\n"
            "  %out = stablehlo.add %x, %c : tensor<1xf32>\n"
            "  return %out : tensor<1xf32>\n}\n}\n"
            '{-#\n  dialect_resources: {\n    builtin: {\n      blob1: "0x04000000' + blob + '"\n    }\n  }\n#-}\n')


def test_resource_constants_are_not_the_same_program() -> None:
    # 1.0 and 2.0 as resources: the texts are equal (the resource's name), the values not.
    a, b = prepare(_resource("0000803F"), OPTIONS), prepare(_resource("00000040"), OPTIONS)
    assert module_text(a) == module_text(b)
    assert not same.same_program(a, b)
    # The rule without its constant check takes them for one program.
    assert _plain_without_constants(a) and _plain_without_constants(b)


def _plain_without_constants(m: Module) -> bool:
    return not m.per_device and all(op.name not in same._REFUSED and op.name in TABLE for op in m.main.body.walk())


def _one_op(op_text: str, args: str, result: str) -> str:
    return ("module attributes {mhlo.num_partitions = 1 : i32} {\n"
            f"func.func @main({args}) -> {result} {{\n  {op_text}\n  return %out : {result}\n}}\n}}\n")


F4, F44 = "tensor<4xf32>", "tensor<4x4xf32>"
GATHER = ('%out = "stablehlo.gather"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], '
          "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
          "slice_sizes = array<i64: 1, 4>, indices_are_sorted = SORTED} : (tensor<4x4xf32>, tensor<2x1xi32>) -> "
          "tensor<2x4xf32>")
# One op, two spellings that differ in one attribute the semantics or XLA read.
VARIANTS: dict[str, tuple[str, str, str, str]] = {
    "comparison_type": ("%out = stablehlo.compare LT, %x, %y, FLOAT : ({0}, {0}) -> tensor<4xi1>",
                        "%out = stablehlo.compare LT, %x, %y, TOTALORDER : ({0}, {0}) -> tensor<4xi1>",
                        f"%x: {F4}, %y: {F4}", "tensor<4xi1>"),
    "reduce_precision": ("%out = stablehlo.reduce_precision %x, format = e8m23 : {0}",
                         "%out = stablehlo.reduce_precision %x, format = e5m2 : {0}", f"%x: {F4}", F4),
    "precision_config": ("%out = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0], "
                         "precision = [DEFAULT, DEFAULT] : ({1}, {1}) -> {1}",
                         "%out = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0], "
                         "precision = [HIGHEST, HIGHEST] : ({1}, {1}) -> {1}", f"%x: {F44}, %y: {F44}", F44),
    "indices_are_sorted": (GATHER.replace("SORTED", "false"), GATHER.replace("SORTED", "true"), "%t: tensor<4x4xf32>, %i: tensor<2x1xi32>",
                           "tensor<2x4xf32>"),
    "constant_type": ("%c = stablehlo.constant dense<0.1> : tensor<4xf32>\n  %out = stablehlo.add %x, %c : {0}",
                      "%c = stablehlo.constant dense<0.1> : tensor<4xbf16>\n"
                      "  %d = stablehlo.convert %c : (tensor<4xbf16>) -> tensor<4xf32>\n"
                      "  %out = stablehlo.add %x, %d : {0}", f"%x: {F4}", F4),
}


def _types(op_text: str) -> str:
    return op_text.replace("{0}", F4).replace("{1}", F44)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_one_attribute_apart_is_neither_the_same_program_nor_one_key(name: str) -> None:
    a_op, b_op, args, result = VARIANTS[name]
    a = prepare(_one_op(_types(a_op), args, result), OPTIONS)
    b = prepare(_one_op(_types(b_op), args, result), OPTIONS)
    assert not same.same_program(a, b)
    assert stage_hash(a, a) != stage_hash(a, b)
    # The sharing key of the first op that differs, on the very same argument arrays.
    x, y = next((x, y) for x, y in zip(a.main.body.ops, b.main.body.ops)
                if attr_key((x.attrs, x.result_types)) != attr_key((y.attrs, y.result_types)))
    arrays = [np.zeros(1) for _ in x.operands]
    types = tuple(_type_of(a, v) for v in x.operands)
    assert SharedValues.key(x, arrays, types) != SharedValues.key(y, arrays, types)


def _type_of(m: Module, value: str) -> Any:
    body = m.main.body
    return dict(zip(body.args, body.arg_types))[value]


# --- region bodies with their arguments swapped (never shared; refuted) -----------------

@pytest.mark.parametrize("name", ["scatter_order", "reduce_order"])
def test_swapped_body_arguments_are_refuted_on_xla(name: str) -> None:
    v = _verify(name, "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert _confirmed_on_xla(v)
    r, o = (prepare((DATA / f"{name}.{k}.mlir").read_text(), OPTIONS) for k in ("ref", "bug"))
    assert not same.same_program(r, o)


# --- lanes: a gather whose index vector dim comes first ---------------------------------

def _gather_stage(twin: str) -> StagePair:
    r, o = (prepare((DATA / f"gather_ivd0.{k}.mlir").read_text(), OPTIONS) for k in ("ref", twin))
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (), ("%t", "%ids"))


def test_gather_with_index_vector_dim_first_folds_at_the_tokens() -> None:
    # ids [1, B]: the batch dim b is the indices' dim 1. The tokens fold (64 -> 1), the
    # row (the window) does not.
    folded, sizes = lanes.fold_lanes(_gather_stage("ref"))
    assert sizes == [64]
    assert folded.ref.main.body.arg_types[1].shape == (1, 1)
    assert folded.ref.main.body.arg_types[0].shape == (8, 64)


def test_gather_next_row_bug_is_refuted_folded_and_whole() -> None:
    stage = _gather_stage("bug")
    assert lanes.fold_lanes(stage)[1] == [64]
    records, _ = stages_run._prove_stages([stage], OPTIONS, finite={"%t", "%ids"})
    assert records[0].verdict == "not-equivalent" and records[0].lanes == [64]
    v = _verify("gather_ivd0", "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert _confirmed_on_xla(v)


# --- the solver's restarts: a limit never reads as a proof ------------------------------

class _Stuck(z3.Solver):
    """A solver whose every check ends on a limit with `reason` (z3's own words)."""

    reason = "canceled"
    checks: list[int] = []

    def check(self, *args: Any) -> Any:
        _Stuck.checks.append(1)
        return z3.unknown

    def reason_unknown(self) -> str:
        return _Stuck.reason


@pytest.mark.parametrize("reason", ["canceled", "max. resource limit exceeded", "timeout"])
def test_a_limit_on_every_restart_is_unknown_not_unsat(monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    monkeypatch.setattr(solve, "_solver", lambda timeout_s: _Stuck())  # however a solver is limited
    monkeypatch.setattr(_Stuck, "reason", reason)
    _Stuck.checks = []
    x = z3.Real("x")
    out = solve.solve_local(solve.Query(0, x > 0), 1.0)
    assert out.status == "unknown" and out.reason == "timeout"
    assert len(_Stuck.checks) == len(solve.RESTART_SLICES) + 1  # every restart tried, none a proof


# --- compare_type that does not fit the operands (semantics) -----------------------------

_CMP = """func.func @main(%x: tensor<4x{t}>, %y: tensor<4x{t}>) -> tensor<4xi1> {{
  %0 = stablehlo.compare LT, %x, %y, {k} : (tensor<4x{t}>, tensor<4x{t}>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}}"""


@pytest.mark.parametrize("t,k", [("i32", "UNSIGNED"), ("ui32", "SIGNED"), ("i32", "FLOAT"), ("f32", "SIGNED"),
                                 ("i1", "SIGNED")])
def test_a_compare_type_the_operands_cannot_have_is_refused(t: str, k: str) -> None:
    """The StableHLO spec's compare C3 (XLA: "Expected comparison type SIGNED"): read as the
    operands' own order, `compare LT, UNSIGNED` of i32 was proved equal to the SIGNED one.
    Now a one-line error naming the op's location (exit 3 on the CLI)."""
    from tv_mlir.errors import ShapeError
    good = _CMP.format(t=t, k={"i32": "SIGNED", "ui32": "UNSIGNED", "f32": "FLOAT", "i1": "UNSIGNED"}[t])
    with pytest.raises(ShapeError, match=f"compare_type {k} does not apply to {t}") as exc:
        tv_mlir.verify(good, _CMP.format(t=t, k=k), cache=False)
    assert exc.value.loc


@pytest.mark.parametrize("t,k", [("f32", "TOTALORDER"), ("i1", "UNSIGNED"), ("ui8", "UNSIGNED")])
def test_a_compare_type_that_fits_is_read(t: str, k: str) -> None:
    assert tv_mlir.verify(_CMP.format(t=t, k=k), _CMP.format(t=t, k=k), cache=False).verdict == "equivalent"
