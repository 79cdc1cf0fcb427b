"""Peeled output pads (stages/peel.py, docs/stages.md "Peeled output pads"): stages that
differ only in where a pad puts a value share one proof, and each condition of the rule
keeps a stage whose pad matters from being reduced to a problem that proves.

The stages are written by hand as extract.build makes them: the reference a global
program, the other a per-device program of a 2-device mesh whose inputs and outputs have
layouts."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tv_mlir.api import prepare
from tv_mlir.ir import Mesh, Sharding
from tv_mlir.options import Options
from tv_mlir.stages import peel
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.extract import StagePair
from tv_mlir.stages.hashing import stage_hash

OPTIONS = Options(cache=False)
MESH = Mesh((("tp", 2),))
COLS = Sharding(MESH, ((), ("tp",)))  # a [4, 4] value split by columns
ROWS_PARTS = Sharding(MESH, (("tp",), ()))  # a partial slot's input: one group's part per device
PARTIAL = Sharding(MESH, ((),), ("tp",))  # a [n] value held as partial sums over tp


def _func(args: str, body: str, ret: str) -> str:
    return f"func.func @main({args}) -> {ret} {{\n{body}\n    return %p : {ret}\n}}"


def _pad(src: str, value: str, low: list[int], high: list[int], t_in: str, t_out: str) -> str:
    zeros = [0] * len(low)
    return (f"    %z = stablehlo.constant dense<{value}> : tensor<f32>\n"
            f"    %p = stablehlo.pad {src}, %z, low = {low}, high = {high}, interior = {zeros} : "
            f"({t_in}, tensor<f32>) -> {t_out}")


def _stage(ref: str, other: str, arg: Sharding | tuple[Sharding, ...], out: Sharding) -> StagePair:
    r, o = prepare(ref, OPTIONS), prepare(other, OPTIONS)
    args = arg if isinstance(arg, tuple) else (arg,)
    o = replace(o, per_device=True, attrs={**o.attrs, "mhlo.num_partitions": 2}, arg_shardings=args,
                result_shardings=(out,))
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (),
                     tuple(f"%in{k}" for k in range(len(args))))


def _squares(ref_pad: tuple[str, list[int], list[int]], other_pad: tuple[str, list[int], list[int]],
             out_rows: int = 6) -> StagePair:
    """a * a padded: [4, 4] global, split by columns on the other side."""
    (rv, rl, rh), (ov, ol, oh) = ref_pad, other_pad
    rows = out_rows
    ref = _func("%a: tensor<4x4xf32>", "    %m = stablehlo.multiply %a, %a : tensor<4x4xf32>\n"
                + _pad("%m", rv, rl, rh, "tensor<4x4xf32>", f"tensor<{rows}x4xf32>"), f"tensor<{rows}x4xf32>")
    other = _func("%a: tensor<4x2xf32>", "    %m = stablehlo.multiply %a, %a : tensor<4x2xf32>\n"
                  + _pad("%m", ov, ol, oh, "tensor<4x2xf32>", f"tensor<{rows}x2xf32>"), f"tensor<{rows}x2xf32>")
    return _stage(ref, other, COLS, COLS)


def _at_row(k: int) -> StagePair:
    """The layer-k pattern: a [4, 4] gradient padded into a [4 + 2, 4] stack at row k."""
    amounts = ("0.0", [k, 0], [2 - k, 0])
    return _squares(amounts, amounts)


def _shifted_columns() -> StagePair:
    """Every row shifted right by one column (low 1, high -1 keeps the type) on the split
    dim: each device shifts its own block, which is not the global shift."""
    ref = _func("%a: tensor<4x4xf32>", _pad("%a", "0.0", [0, 1], [0, -1], "tensor<4x4xf32>", "tensor<4x4xf32>"),
                "tensor<4x4xf32>")
    other = _func("%a: tensor<4x2xf32>", _pad("%a", "0.0", [0, 1], [0, -1], "tensor<4x2xf32>", "tensor<4x2xf32>"),
                  "tensor<4x2xf32>")
    return _stage(ref, other, COLS, COLS)


def _partial_sum(value: str) -> StagePair:
    """A partial slot (extract._partial_slot) padded by one row of `value`: the reference
    pads the sum of the parts, each device its own part, and the output is partial sums."""
    reduce = ("    %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
              "    %s = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0] : "
              "(tensor<2x4xf32>, tensor<f32>) -> tensor<4xf32>\n")
    ref = _func("%a: tensor<2x4xf32>", reduce + _pad("%s", value, [1], [0], "tensor<4xf32>", "tensor<5xf32>"),
                "tensor<5xf32>")
    other = _func("%a: tensor<1x4xf32>", "    %s = stablehlo.reshape %a : (tensor<1x4xf32>) -> tensor<4xf32>\n"
                  + _pad("%s", value, [1], [0], "tensor<4xf32>", "tensor<5xf32>"), "tensor<5xf32>")
    return _stage(ref, other, ROWS_PARTS, PARTIAL)


def _verdict(stage: StagePair) -> str:
    return str(stages_run.prove_stage(stage.ref, stage.other, stages_run.stage_options(OPTIONS))["verdict"])


def _prove(stages: list[StagePair]) -> list[stages_run.StageRecord]:
    records, _ = stages_run._prove_stages(stages, OPTIONS, finite={f"%in{k}" for k in range(3)})
    return records


def _hash(stage: StagePair) -> str:
    return stage_hash(stage.ref, stage.other)


def test_stages_that_differ_only_in_a_pad_offset_share_one_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    stages = [_at_row(k) for k in range(3)]
    assert len({_hash(s) for s in stages}) == 3
    peeled = [peel.peel_output_pads(s) for s in stages]
    assert all(p is not s for p, s in zip(peeled, stages))
    assert len({_hash(p) for p in peeled}) == 1
    records = _prove(stages)
    assert [r.verdict for r in records] == ["equivalent"] * 3
    assert [r.how for r in records] == ["proved", "reused", "reused"]
    monkeypatch.setattr(peel, "PEEL_PADS", False)  # the switch: one proof per offset, same verdicts
    records = _prove(stages)
    assert [(r.verdict, r.how) for r in records] == [("equivalent", "proved")] * 3


def test_a_partial_sum_padded_with_zero_is_peeled() -> None:
    stage = _partial_sum("0.0")
    assert peel.peel_output_pads(stage) is not stage
    assert [r.verdict for r in _prove([stage])] == ["equivalent"]


# Stages whose pad matters, each kept whole by one condition: (the condition, the stage).
ADVERSARIAL = {
    # the two programs pad at different offsets
    "same_amounts": lambda: _squares(("0.0", [1, 0], [1, 0]), ("0.0", [2, 0], [0, 0])),
    # the two programs fill the padding with different values
    "same_value": lambda: _squares(("0.0", [1, 0], [1, 0]), ("1.0", [1, 0], [1, 0])),
    # the pad moves values across the blocks of a split dim
    "whole_padded_dims": _shifted_columns,
    # a partial sum padded with 1: the two parts' padding adds up to 2
    "zero_if_partial": lambda: _partial_sum("1.0"),
}


@pytest.mark.parametrize("condition", sorted(ADVERSARIAL))
def test_a_pad_that_matters_is_not_peeled(condition: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stage is not equivalent, and stays so: its pad is not peeled, so its hash is not
    that of the peeled problem. Without the condition the pad is peeled and the peeled
    problem proves: the wrong `equivalent` the condition prevents."""
    stage = ADVERSARIAL[condition]()
    assert peel.peel_output_pads(stage) is stage
    assert [r.verdict for r in _prove([stage])] == ["not-equivalent"]
    check = getattr(peel, condition)
    monkeypatch.setattr(peel, "CONDITIONS", tuple(c for c in peel.CONDITIONS if c is not check))
    peeled = peel.peel_output_pads(stage)
    assert peeled is not stage
    assert _verdict(peeled) == "equivalent"


def test_a_pad_read_inside_the_stage_is_not_an_output_to_peel() -> None:
    """acc + pad(g, k), the accumulation itself: the output is the add, so the offset stays
    in the stage (and in its hash)."""
    def accumulate(k: int) -> StagePair:
        body = (_pad("%a", "0.0", [k, 0], [2 - k, 0], "tensor<4x4xf32>", "tensor<6x4xf32>").replace("%p =", "%q =")
                + "\n    %p = stablehlo.add %q, %q : tensor<6x4xf32>")
        ref = _func("%a: tensor<4x4xf32>", body, "tensor<6x4xf32>")
        other = _func("%a: tensor<4x2xf32>", body.replace("4x4", "4x2").replace("6x4", "6x2"), "tensor<6x2xf32>")
        return _stage(ref, other, COLS, COLS)

    stages = [accumulate(k) for k in (0, 1)]
    assert all(peel.peel_output_pads(s) is s for s in stages)
    assert _hash(stages[0]) != _hash(stages[1])


# acc + pad(g, k) at an output: acc is an input (the accumulator of the other layers'
# gradients), the same slot on both sides, laid out as the output.
SWAPPED = Sharding(Mesh((("tp", 2),), (1, 0)), ((), ("tp",)))  # COLS with the two devices' blocks swapped


def _accumulate(k: int, other_acc: int = 0, acc_layout: Sharding = COLS) -> StagePair:
    """Inputs acc0, acc1 [6, 4] and g [4, 4]; the output acc0 + pad(g * g) at row k, the
    other program adding its input `other_acc` instead."""
    def text(cols: int, acc: int) -> str:
        t, g = f"tensor<6x{cols}xf32>", f"tensor<4x{cols}xf32>"
        return _func(f"%acc0: {t}, %acc1: {t}, %g: {g}", f"    %m = stablehlo.multiply %g, %g : {g}\n"
                     + _pad("%m", "0.0", [k, 0], [2 - k, 0], g, t).replace("%p =", "%q =")
                     + f"\n    %p = stablehlo.add %acc{acc}, %q : {t}", t)

    return _stage(text(4, 0), text(2, other_acc), (acc_layout, acc_layout, COLS), COLS)


def _accumulate_parts(k: int) -> StagePair:
    """The stack's form: acc and g partial slots (each device holds its group's part), the
    output partial sums."""
    def reduce(name: str, n: int) -> str:
        return (f"    %{name} = stablehlo.reduce(%{name}_parts init: %zero) applies stablehlo.add across "
                f"dimensions = [0] : (tensor<2x{n}xf32>, tensor<f32>) -> tensor<{n}xf32>\n")
    pad = _pad("%g", "0.0", [k], [1 - k], "tensor<4xf32>", "tensor<5xf32>").replace("%p =", "%q =")
    add = "\n    %p = stablehlo.add %acc, %q : tensor<5xf32>"
    ref = _func("%acc_parts: tensor<2x5xf32>, %g_parts: tensor<2x4xf32>",
                "    %zero = stablehlo.constant dense<0.0> : tensor<f32>\n" + reduce("acc", 5) + reduce("g", 4)
                + pad + add, "tensor<5xf32>")
    other = _func("%acc_part: tensor<1x5xf32>, %g_part: tensor<1x4xf32>",
                  "    %acc = stablehlo.reshape %acc_part : (tensor<1x5xf32>) -> tensor<5xf32>\n"
                  "    %g = stablehlo.reshape %g_part : (tensor<1x4xf32>) -> tensor<4xf32>\n" + pad + add,
                  "tensor<5xf32>")
    return _stage(ref, other, (ROWS_PARTS, ROWS_PARTS), PARTIAL)


@pytest.mark.parametrize("make", [_accumulate, _accumulate_parts])
def test_accumulations_at_different_offsets_share_one_proof(make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    stages = [make(k) for k in (0, 1)]
    peeled = [peel.peel_output_pads(s) for s in stages]
    assert all(p is not s for p, s in zip(peeled, stages)) and _hash(peeled[0]) == _hash(peeled[1])
    assert [(r.verdict, r.how) for r in _prove(stages)] == [("equivalent", "proved"), ("equivalent", "reused")]
    monkeypatch.setattr(peel, "ACCUMULATE", False)  # the switch: one proof per offset, same verdicts
    assert all(peel.peel_output_pads(s) is s for s in stages)
    assert [(r.verdict, r.how) for r in _prove(stages)] == [("equivalent", "proved")] * 2


def test_an_accumulation_into_another_slot_is_not_peeled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other program adds acc1 where the reference adds acc0: not-equivalent. A rule
    that only asked for an input on each side peels it to a stage that proves."""
    stage = _accumulate(1, other_acc=1)
    assert peel.peel_output_pads(stage) is stage
    assert [r.verdict for r in _prove([stage])] == ["not-equivalent"]
    monkeypatch.setattr(peel, "same_slot", lambda r, o: o is not None and r[0] == o[0])
    peeled = peel.peel_output_pads(stage)
    assert peeled is not stage and _verdict(peeled) == "equivalent"


def test_an_accumulator_laid_out_otherwise_is_not_peeled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other program's accumulator input holds its blocks on the devices in the other
    order than its output: device d adds the other device's block. Not-equivalent; a
    rule that did not compare the input's layout with the output's peels it."""
    stage = _accumulate(1, acc_layout=SWAPPED)
    assert peel.peel_output_pads(stage) is stage
    assert [r.verdict for r in _prove([stage])] == ["not-equivalent"]
    real = peel._other_slot
    monkeypatch.setattr(peel, "_other_slot", lambda v, m, prod, layout: real(v, m, prod, m.arg_shardings[0]))
    peeled = peel.peel_output_pads(stage)
    assert peeled is not stage and _verdict(peeled) == "equivalent"
