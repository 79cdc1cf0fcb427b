"""The second batch of real clients (testdata/gen_clients2.py, issue 14): kinds the first
batch did not cover. Fast ones go through `tv_mlir.jax.check` as a user calls it (export
included); shard_map plans with hand-written collectives (a GPipe pipeline, ring
attention, ZeRO-3, Megatron sequence parallelism) are kept as partitioned pairs in
testdata/clients/ with seeded partitioner bugs (a permute that goes the other way round
the ring, all-gather / reduce-scatter groups transposed, a dropped all-reduce), each
not-equivalent with a counterexample XLA confirms. `gen_clients2.py --measure` and
`--mutants` give the whole table (docs/jax.md)."""
from __future__ import annotations

import pytest

from conftest import TESTDATA, check_client, client_generator
from tv_mlir.testing import assert_equivalent, assert_not_equivalent

CLIENTS = TESTDATA / "clients"


@pytest.fixture(scope="module")
def gen2():
    return client_generator("gen_clients2")  # skips without jax, flax and optax


SLOW = pytest.mark.slow


@pytest.mark.parametrize("name", [
    "einsum5", "mesh3d_subaxes", "segment_sum", "custom_vjp", "remat_policy", "fp16_loss_scale", "assoc_scan",
    "unreduced", "adamw_unassumed", "vit_adamw", "clip_adamw", "optax_adafactor", "optax_adafactor.shardy",
    pytest.param("mixtral_capacity", marks=SLOW), pytest.param("t5_encdec", marks=SLOW),
    pytest.param("bert_mlm", marks=SLOW), pytest.param("unet_groupnorm", marks=SLOW),
    pytest.param("grad_accum_fori", marks=SLOW), pytest.param("optax_lamb", marks=SLOW),
    pytest.param("optax_lion", marks=SLOW),
])
def test_client_through_check(gen2, name: str) -> None:
    name, _, form = name.partition(".")
    v = check_client(gen2, name, form or "partitioned")
    assert v.verdict == "equivalent", v.reason


# ring_flash (the online softmax) was unknown until exp(x) * exp(y) = exp(x + y) entered
# the term normal form (602ad95); kept as a guard.
PAIRS = ["pipeline_ppermute", "ring_attention", "zero_fsdp", "megatron_sp", "ring_flash"]


@pytest.mark.parametrize("name", PAIRS)
def test_shard_map_plans_are_equivalent(name: str) -> None:
    assert_equivalent(CLIENTS / f"{name}.ref.mlir", CLIENTS / f"{name}.partitioned.mlir")


def test_online_softmax_is_softmax() -> None:
    """Two key blocks, flash style (the running max from -inf, sums rescaled by
    exp(m_old - m_new)), against softmax @ v on one device."""
    assert_equivalent(CLIENTS / "online_softmax.ref.mlir", CLIENTS / "online_softmax.other.mlir")


@pytest.mark.parametrize("name,mutation", [
    ("ring_attention", "reversed_permute"),
    ("ring_attention", "dropped_permute"),
    ("megatron_sp", "wrong_groups_all_gather"),
    ("megatron_sp", "wrong_groups_reduce_scatter"),
    ("pipeline_ppermute", "dropped_all_reduce"),
    ("pipeline_ppermute", "reversed_permute"),
    ("zero_fsdp", "dropped_all_reduce"),
])
def test_seeded_partitioner_bugs_are_caught(gen2, name: str, mutation: str) -> None:
    text = (CLIENTS / f"{name}.partitioned.mlir").read_text()
    bad = gen2.MUTATIONS[mutation](text)
    assert bad != text
    assert_not_equivalent(CLIENTS / f"{name}.ref.mlir", bad, confirmed=True)


def test_adam_with_nothing_assumed_still_catches_a_dropped_all_reduce(gen2, tmp_path) -> None:
    """adamw_unassumed (every update's IEEE class depends on the step count) with the
    gradients' all-reduce dropped: the class rule that lets the correct module merge must
    not hide this."""
    p = gen2.PROGRAMS["adamw_unassumed"]()
    ref, part = gen2.g.tj.export_pair(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                                      directory=tmp_path, name="adamw")
    text = part.read_text()
    bad = gen2.MUTATIONS["dropped_all_reduce"](text)
    assert bad != text
    assert_not_equivalent(ref, bad, confirmed=True)
