"""The fourth batch of real clients (testdata/gen_clients4.py, issue 14, stop 43): DeepSpeed-
Ulysses (all_to_all between sequence and head shards), DeepSeek MLA, the Muon optimizer's
Newton-Schulz step over FSDP rows, and ZeRO written by hand in shard_map go through
`tv_mlir.jax.check` as a user calls it; a bug a user writes by hand (the loss averaged over
one mesh axis of two) is not-equivalent with an XLA-confirmed counterexample; the kept
partitioned pairs carry seeded partitioner bugs (an all-to-all's groups reversed, a ring's
permute reversed). `gen_clients4.py --measure` and `--mutants` give the whole table
(docs/jax.md)."""
from __future__ import annotations

import pytest

from conftest import TESTDATA, check_client, client_generator
from tv_mlir.testing import assert_equivalent, assert_not_equivalent

CLIENTS = TESTDATA / "clients"


@pytest.fixture(scope="module")
def gen4():
    return client_generator("gen_clients4")  # skips without jax, flax and optax


@pytest.mark.parametrize("name", ["ulysses_a2a", "mla_attention", "muon_ns5", "zero_by_hand"])
def test_client_through_check(gen4, name: str) -> None:
    v = check_client(gen4, name)
    assert v.verdict == "equivalent", v.reason


def test_a_loss_averaged_over_one_axis_of_two_is_caught(gen4) -> None:
    v = check_client(gen4, "zero_by_hand_bug")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None
    assert any(r.confirmed for r in v.counterexample.replay if "xla" in r.backend)


@pytest.mark.parametrize("name,mutation", [
    ("ulysses_a2a", "reversed_groups_all_to_all"),
    ("collective_matmul", "reversed_permute"),
])
def test_seeded_partitioner_bugs_are_caught(gen4, name: str, mutation: str) -> None:
    text = (CLIENTS / f"{name}.partitioned.mlir").read_text()
    bad = gen4.MUTATIONS[mutation](text)
    assert bad != text
    assert_not_equivalent(CLIENTS / f"{name}.ref.mlir", bad, confirmed=True)


@pytest.mark.parametrize("name", ["ulysses_a2a", "collective_matmul"])
def test_kept_pairs_are_equivalent(name: str) -> None:
    """The pairs the mutants start from: the seeded bug, not the export, makes them differ."""
    assert_equivalent(CLIENTS / f"{name}.ref.mlir", CLIENTS / f"{name}.partitioned.mlir")
