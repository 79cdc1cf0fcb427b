"""The seventh batch of real clients (testdata/gen_clients7.py, helper-73): plans users write
by hand in shard_map (ALiBi with heads over tp and after Ulysses' all_to_all, context parallelism with RoPE, a learned
relative-position bias over a sharded sequence, ZeRO-2, LAMB's trust ratio, 2D tensor
parallelism, int8 weight-only scales, a ring-buffer KV cache, masked pooling, z-loss, a
circular pipeline, dynamic loss scaling) and three jit steps XLA partitions, through
`tv_mlir.jax.check` as a user calls it. Correct plans are `equivalent`; each silent bug a
user writes there is `not-equivalent` with a counterexample XLA shows at the original
sizes; seeded partitioner bugs in the kept partitioned modules are caught the same way.
docs/jax.md, "Seventh batch", has the whole table."""
from __future__ import annotations

import pytest

from conftest import TESTDATA, assert_confirmed_at_original_sizes, check_client, client_generator
from tv_mlir.api import verify

CLIENTS7 = TESTDATA / "clients7"


@pytest.fixture(scope="module")
def gen7():
    return client_generator("gen_clients7")  # skips without jax, flax and optax


@pytest.mark.parametrize("name", [
    "alibi_tp", "ulysses_alibi", "rope_cp", "relpos_bias_sp", "zero2_momentum", "lamb_tp", "tp2d_mlp", "int8_wo_tp",
    "masked_pool_sp", "vocab_zloss", "circular_pipeline", "tp2d_jit", "int8_wo_jit", "lion_zero1_jit",
])
def test_client_through_check(gen7, name: str) -> None:
    v = check_client(gen7, name)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("name", [
    "alibi_tp_bug",  # slopes sliced at head 0 on every device
    "ulysses_alibi_bug",  # the same after Ulysses' all_to_all made heads the sharded dim
    "rope_cp_bug",  # RoPE at local positions
    "rope_cp_mask",  # causal mask from local query positions
    "relpos_bias_sp_bug",  # relative positions from local query positions
    "zero2_momentum_bug",  # reduce-scatter's sum not divided by the devices
    "zero2_momentum_offset",  # parameter shard sliced at row 0
    "lamb_tp_bug",  # trust ratio from the shard's own norms
    "tp2d_mlp_bug",  # the first partial sum reduced over the wrong axis
    "int8_wo_tp_bug",  # per-channel scales sliced at 0
    "ring_kv_decode_bug",  # every cache shard writes the new entry
    "masked_pool_sp_bug",  # mean of the shards' masked means
    "vocab_zloss_bug",  # z-loss from each shard's own log-sum-exp
    "circular_pipeline_bug",  # repeat index not offset by the stage
    "loss_scale_fsdp_bug",  # finite check per shard (inputs="ieee": only an inf shows it)
])
def test_a_hand_written_bug_is_caught(gen7, name: str) -> None:
    assert_confirmed_at_original_sizes(check_client(gen7, name))


@pytest.mark.slow  # ~10 s: 65 elements by the solver under inputs="ieee"
def test_loss_scaling_with_the_agreed_finite_check_is_equivalent_over_ieee_values(gen7) -> None:
    v = check_client(gen7, "loss_scale_fsdp")
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("program, mutation", [
    ("tp2d_jit", "offset_wrong_axis"),  # a shard's row offset read along y instead of x
    ("tp2d_jit", "wrong_axes"),  # an all-reduce over the other mesh axis
    ("int8_wo_jit", "wrong_groups"),  # the row-parallel all-reduce's groups transposed
])
def test_a_seeded_partitioner_bug_is_caught(gen7, program: str, mutation: str) -> None:
    """The kept partitioned module (testdata/clients7/, `--export`) with one seeded bug: XLA
    shows each changes the outputs (docs/jax.md), and the verdict says so."""
    ref = (CLIENTS7 / f"{program}.ref.mlir").read_text()
    text = (CLIENTS7 / f"{program}.partitioned.mlir").read_text()
    mutated = gen7.MUTATIONS[mutation](text)
    assert mutated != text
    assert_confirmed_at_original_sizes(verify(ref, mutated, cache=False))


def test_the_kept_partitioned_pairs_are_equivalent() -> None:
    for program in ("tp2d_jit", "int8_wo_jit"):
        v = verify(CLIENTS7 / f"{program}.ref.mlir", CLIENTS7 / f"{program}.partitioned.mlir", cache=False)
        assert v.verdict == "equivalent", (program, v.reason)


def test_the_ring_buffer_reproducer_is_never_a_wrong_witness() -> None:
    """ring_kv_decode's correct plan is `unknown` (docs/jax.md, seventh batch): a ring-buffer
    slot rewritten by its owner shard, then a softmax. The single-device reproducer is an
    equal pair: whatever the solver manages, the verdict must not be `not-equivalent`."""
    v = verify(CLIENTS7 / "ring_update_softmax.ref.mlir", CLIENTS7 / "ring_update_softmax.split.mlir",
               cache=False, timeout_s=5, assume={"arg3": (0, 1000)})
    assert v.verdict in ("equivalent", "unknown"), v.reason
