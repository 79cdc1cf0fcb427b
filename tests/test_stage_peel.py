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


def _stage(ref: str, other: str, arg: Sharding, out: Sharding) -> StagePair:
    r, o = prepare(ref, OPTIONS), prepare(other, OPTIONS)
    o = replace(o, per_device=True, attrs={**o.attrs, "mhlo.num_partitions": 2}, arg_shardings=(arg,),
                result_shardings=(out,))
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (), ("%a",))


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
    records, _ = stages_run._prove_stages(stages, OPTIONS, finite={"%a"})
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
