"""The stage hash leaves out what the computation does not depend on (stages/hashing.py):
a collective's channel number beyond its sign, and where the ops that read no argument
stand. It keeps everything else: a channel of 0 (another collective mode), replica groups,
a constant's value."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tv_mlir.algebra import NumericAlgebra
from tv_mlir.api import prepare
from tv_mlir.errors import TvError
from tv_mlir.execute.interp import Interpreter
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.ir import Module, Op
from tv_mlir.options import Options
from tv_mlir.prove.fingerprints import random_inputs
from tv_mlir.stages import hashing
from tv_mlir.stages.flat import flatten
from tv_mlir.stages.hashing import stage_hash

SHARDED = Path(__file__).resolve().parents[1] / "testdata/sharded"


@pytest.fixture(scope="module")
def pair() -> tuple[Module, Module]:
    """XLA's per-device module of a tensor-parallel attention block (one all_reduce with
    channel 1), flattened as the stages cut it, and its reference."""
    r = prepare(str(SHARDED / "attn_tp.ref.mlir"), Options())
    o = prepare(str(SHARDED / "attn_tp.partitioned.mlir"), Options())
    check_signatures(r, o)
    flat = flatten(o)
    assert flat.ok, flat.reason
    return r, flat.module


def _with_ops(m: Module, ops: list[Op]) -> Module:
    return replace(m, funcs={m.entry: replace(m.main, body=replace(m.main.body, ops=ops))})


def _channel(m: Module, handle: int) -> Module:
    ops = [replace(op, attrs={**op.attrs, "channel_handle": f"#stablehlo.channel_handle<handle = {handle}, type = 0>"})
           if "channel_handle" in op.attrs else op for op in m.main.body.ops]
    return _with_ops(m, ops)


def _run(m: Module) -> list[np.ndarray]:
    return [np.asarray(x) for x in Interpreter(m, NumericAlgebra()).run(random_inputs(m.global_arg_types())[1])]


def test_channel_numbers_do_not_split_a_stage(pair: tuple[Module, Module]) -> None:
    """XLA numbers every collective's channel apart: two layers' copies of a stage differ
    only there. The numbers compute the same (the run), and hash alike."""
    ref, other = pair
    assert any("channel_handle" in op.attrs for op in other.main.body.ops)
    renumbered = _channel(other, 41)
    for a, b in zip(_run(other), _run(renumbered)):
        np.testing.assert_array_equal(a, b)
    assert stage_hash(ref, renumbered) == stage_hash(ref, other)


def test_a_channel_of_zero_is_another_collective(pair: tuple[Module, Module], monkeypatch) -> None:
    """Channel 0 makes the all_reduce cross-replica (its groups read as replica ids): another
    program, which the interpreter does not even run here. It hashes apart; a hash that
    dropped the channel altogether (the mutation) would take one's proof for the other."""
    ref, other = pair
    zero = _channel(other, 0)
    with pytest.raises(TvError):
        _run(zero)
    assert stage_hash(ref, zero) != stage_hash(ref, other)
    monkeypatch.setattr(hashing, "_channel_kind", lambda handle: "")
    assert stage_hash(ref, zero) == stage_hash(ref, other)


def test_replica_groups_still_split_a_stage(pair: tuple[Module, Module]) -> None:
    ref, other = pair
    ops = list(other.main.body.ops)
    k = next(i for i, op in enumerate(ops) if op.name == "stablehlo.all_reduce")
    groups = np.asarray(ops[k].attrs["replica_groups"])
    ops[k] = replace(ops[k], attrs={**ops[k].attrs, "replica_groups": groups.reshape(groups.shape[::-1]).copy()})
    assert stage_hash(ref, _with_ops(other, ops)) != stage_hash(ref, other)


def test_constants_hash_alike_wherever_they_stand(pair: tuple[Module, Module]) -> None:
    """A stage copies its constants in at their places in the program: moved to the front,
    they hash alike; with another value, apart."""
    ref, other = pair
    ops = list(ref.main.body.ops)
    k = max(i for i, op in enumerate(ops) if op.name == "stablehlo.constant")
    assert k > 0
    moved = _with_ops(ref, [ops[k], *ops[:k], *ops[k + 1:]])
    for a, b in zip(_run(ref), _run(moved)):
        np.testing.assert_array_equal(a, b)
    assert stage_hash(moved, other) == stage_hash(ref, other)
    changed = list(ops)
    changed[k] = replace(ops[k], attrs={**ops[k].attrs, "value": np.asarray(ops[k].attrs["value"]) + 1})
    assert stage_hash(_with_ops(ref, changed), other) != stage_hash(ref, other)


def test_an_op_that_reads_an_argument_keeps_its_place(pair: tuple[Module, Module]) -> None:
    """Only ops that read no argument move. An op that reads one, written after its users,
    is another text (its users then name a value not yet made): a rule that moved every op
    to its first user would write both alike."""
    ref, other = pair
    ops = list(ref.main.body.ops)
    args = set(ref.main.body.args)
    k = next(i for i, op in enumerate(ops) if any(o in args for o in op.operands))
    late = _with_ops(ref, [*ops[:k], *ops[k + 1:], ops[k]])
    assert stage_hash(late, other) != stage_hash(ref, other)
