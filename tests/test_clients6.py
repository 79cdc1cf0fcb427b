"""The sixth batch of real clients (testdata/gen_clients6.py, helper-66): parallel algorithms
users write by hand in shard_map (sync BatchNorm by a Welford merge and flax's own, a
sliding-window attention halo, FP8 delayed scaling, a ring all-reduce and a Hillis-Steele
scan by ppermute, a pipeline with lax.cond, split-KV decoding, SigLIP's ring, jax.grad
inside shard_map) and two jit steps XLA partitions (a Mamba block, schedule-free AdamW),
through `tv_mlir.jax.check` as a user calls it. The correct plans are `equivalent`; each
silent bug a user writes there is `not-equivalent` with a counterexample XLA shows at the
original sizes. `gen_clients6.py --measure` gives the whole table (docs/jax.md)."""
from __future__ import annotations

import pytest

from conftest import TESTDATA, assert_confirmed_at_original_sizes, check_client, client_generator
from tv_mlir.api import verify

CLIENTS6 = TESTDATA / "clients6"


@pytest.fixture(scope="module")
def gen6():
    return client_generator("gen_clients6")  # skips without jax, flax and optax


@pytest.mark.parametrize("name", [
    "sync_batchnorm", "flax_syncbn", "swa_halo_rope", "fp8_delayed_scaling", "prefix_sum_ppermute",
    "ring_allreduce", "tp_layernorm", "fsdp_clip_ema", "tp_mlp_grad", "argmax_vocab", "siglip_ppermute",
    "pipeline_switch", "mamba_tp", "schedule_free_fsdp",
])
def test_client_through_check(gen6, name: str) -> None:
    v = check_client(gen6, name)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("name", [
    "sync_batchnorm_bug",  # the mean of local variances
    "flax_syncbn_bug",  # BatchNorm's axis_name left out
    "fp8_delayed_scaling_bug",  # amax not pmax'd: the replicated history diverges
    "topk_vocab_bug",  # local top-k indices not offset by the shard's start
    "topk_vocab_ties",  # candidates gathered last shard first: only tied logits show it
    "prefix_sum_ppermute_bug",  # inclusive scan as the offset
    "ring_allreduce_bug",  # gathered chunk one slot off
    "tp_layernorm_bug",  # variance around the shard's own mean
    "fsdp_clip_ema_bug",  # each shard clipped by its own norm
    "flash_decode_sp_bug",  # length mask on local positions
    "tp_mlp_grad_bug",  # check_vma=False: psum's transpose a psum
    "argmax_vocab_bug",  # ties to the last shard: only tied logits show it
    "pipeline_cond_bug",  # drained one step early
    "pipeline_switch_bug",  # lax.switch picks the next stage's layer
])
def test_a_hand_written_bug_is_caught(gen6, name: str) -> None:
    assert_confirmed_at_original_sizes(check_client(gen6, name))


def test_a_reproducer_of_an_unknown_is_never_a_wrong_witness() -> None:
    """An equal pair the verifier cannot prove yet (docs/jax.md, sixth batch: the softmax of
    top-k values found from two halves' top-k): its candidate counterexample lives only in
    the uninterpreted exp and XLA refuses it, so the verdict must stay `equivalent` or
    `unknown`, never exit 1."""
    v = verify(CLIENTS6 / "topk_softmax.ref.mlir", CLIENTS6 / "topk_softmax.split.mlir", cache=False, timeout_s=20)
    assert v.verdict in ("equivalent", "unknown"), v.reason


@pytest.mark.parametrize("name", ["prefix_sum_ppermute", "argmax_vocab"])
def test_plans_equal_over_the_reals_differ_over_ieee_values(gen6, name: str) -> None:
    """Under inputs='ieee' two correct plans are not the reference: the exclusive offset
    `inclusive - own total` is inf - inf = NaN where the reference's cumsum has no inf yet,
    and a NaN logit is jnp.argmax's answer but fails the plan's `value == pmax` test (the
    index returned is the sentinel 16). XLA shows both."""
    p = gen6.PROGRAMS[name]()
    v = client_generator("gen_clients").tj.check(
        p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings, reference=p.reference,
        cache=False, inputs="ieee", **p.options)
    assert_confirmed_at_original_sizes(v)
