"""Dimension classes (the analysis stage of shape shrinking, docs/shrinking.md): the same
plan exported three ways gives the same classes and shard relations, tied to the
reference through the global signature; position-dependent ops and reshape
factorizations pin their classes with a reason."""
from __future__ import annotations

import pytest

from conftest import TESTDATA
from tv_mlir.api import prepare
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.shrink.dims import analyse

SHARDED = TESTDATA / "sharded"


def _analysis(plan: str, form: str, where=SHARDED):
    ref = prepare(where / f"{plan.split('_bug')[0]}.ref.mlir", Options())
    other = prepare(where / f"{plan}.{form}.mlir", Options())
    check_signatures(ref, other)
    return ref, analyse(ref, other)


def _class(a, ref, arg: int, axis: int) -> int:
    return a.class_of[("ref", ref.main.body.args[arg], axis)]


@pytest.mark.parametrize("form", ["shardy", "gspmd", "partitioned"])
def test_megatron_mlp_classes_and_shards(form: str) -> None:
    ref, a = _analysis("mlp_tp", form)
    batch, hidden = _class(a, ref, 0, 0), _class(a, ref, 0, 1)  # x [batch, hidden]
    ffn = _class(a, ref, 1, 1)  # w1 [hidden, ffn]
    assert _class(a, ref, 1, 0) == hidden and _class(a, ref, 3, 0) == ffn  # w2 [ffn, hidden]
    assert a.classes[batch].size == 4 and a.classes[ffn].size == 16
    # dp=2 splits the batch, tp=4 the ffn (column- then row-parallel).
    scales = {(g, k) for g, _, k in a.scales}
    assert (batch, 2) in scales and (ffn, 4) in scales
    # Contracted dims are marked (their size bound is the summand degree), nothing pinned.
    assert "stablehlo.dot_general" in a.classes[hidden].reduced_by
    assert not a.classes[batch].pins and not a.classes[ffn].pins
    # The other program's local ffn class is its own, related by the scale.
    local_ffn = {loc for g, loc, k in a.scales if g == ffn}
    assert len(local_ffn) == 1 and a.classes[local_ffn.pop()].size == 4


def test_causal_attention_marks_positions_and_factors_head_reshapes() -> None:
    ref, a = _analysis("attn_tp", "shardy", TESTDATA / "sharded_big")
    seq = _class(a, ref, 0, 1)  # x [batch, seq, hidden]
    q_out = _class(a, ref, 1, 1)  # wq [hidden, heads * head_dim], reshaped into heads
    assert a.classes[seq].iota and not a.classes[seq].pins
    (parts,) = [fs for whole, fs in a.products if whole == q_out]
    heads, head_dim = (a.classes[f].size for f in parts)
    assert heads * head_dim == a.classes[q_out].size and heads % 4 == 0
    # The sharded side's local q (1024 = 8 x 128) splits its major factor: heads 32 = 4 x 8,
    # and head_dim is the same class on both sides.
    local = {loc for g, loc, k in a.scales if g == q_out and k == 4}
    (local_parts,) = [fs for whole, fs in a.products if whole in local]
    assert local_parts[1] == parts[1] and (parts[0], local_parts[0], 4) in a.scales
    assert "stablehlo.dot_general" in a.classes[_class(a, ref, 0, 2)].reduced_by


def test_regrouping_reshape_is_cut_into_atoms() -> None:
    # [2, 2048] -> [8, 512] (the expert twin's missing all_to_all): atoms 2 x 4 x 512.
    ref, a = _analysis("expert_parallel_bug_no_combine", "shardy", TESTDATA / "sharded_big")
    sizes = sorted(tuple(a.classes[f].size for f in fs) for _, fs in a.products)
    x = ref.main.arg_types[0].shape  # [experts, tokens, hidden]
    assert (2, 4) in sizes and (4, x[1] // 8) in sizes, sizes
