"""The third batch of real clients (testdata/gen_clients3.py, issue 14, helper-37): plans
ML-infra users write. The expert-parallel MoE (top-2, capacity, two all_to_alls in
shard_map), Megatron sequence parallelism and a ViT block by with_sharding_constraint go through
`tv_mlir.jax.check` as a user calls it; their partitioned pairs are kept in
testdata/clients/ with seeded partitioner bugs (an all-to-all whose groups list the experts
in reverse, an all-reduce that takes the max where it should add), each not-equivalent with
a counterexample XLA confirms. `gen_clients3.py --measure` and `--mutants` give the whole
table (docs/jax.md)."""
from __future__ import annotations

import pytest

from conftest import TESTDATA, check_client, client_generator
from tv_mlir.testing import assert_equivalent, assert_not_equivalent

CLIENTS = TESTDATA / "clients"


@pytest.fixture(scope="module")
def gen3():
    return client_generator("gen_clients3")  # skips without jax, flax and optax


@pytest.mark.parametrize("name", ["moe_ep_a2a", "megatron_sp_wsc", "vit_wsc"])
def test_client_through_check(gen3, name: str) -> None:
    v = check_client(gen3, name)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("name,mutation", [
    ("moe_ep_a2a", "reversed_groups_all_to_all"),
    ("megatron_sp_wsc", "all_reduce_kind"),
])
def test_seeded_partitioner_bugs_are_caught(gen3, name: str, mutation: str) -> None:
    text = (CLIENTS / f"{name}.partitioned.mlir").read_text()
    bad = gen3.MUTATIONS[mutation](text)
    assert bad != text
    assert_not_equivalent(CLIENTS / f"{name}.ref.mlir", bad, confirmed=True)


def test_kept_pairs_are_equivalent() -> None:
    """The pairs the mutants start from: the seeded bug, not the export, makes them differ."""
    assert_equivalent(CLIENTS / "moe_ep_a2a.ref.mlir", CLIENTS / "moe_ep_a2a.partitioned.mlir")
