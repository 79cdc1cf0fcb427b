"""The fifth batch of real clients (testdata/gen_clients5.py, issue 14, stop 44): losses and
recurrences whose sharded form users write by hand in shard_map, through `tv_mlir.jax.check`
as a user calls it. The correct plans are `equivalent`; the bug a user writes there (each
vocabulary shard shifting by its own max; a sequence block's carry taken from the next
device) is `not-equivalent` with a counterexample XLA shows at the original sizes.
`gen_clients5.py --measure` gives the whole table (docs/jax.md)."""
from __future__ import annotations

import pytest

from conftest import check_client, client_generator


@pytest.fixture(scope="module")
def gen5():
    return client_generator("gen_clients5")  # skips without jax, flax and optax


@pytest.mark.parametrize("name", ["vocab_ce", "linear_scan_sp", "dpo_loss", "clip_eps"])
def test_client_through_check(gen5, name: str) -> None:
    v = check_client(gen5, name)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("name", ["vocab_ce_bug", "linear_scan_sp_bug"])
def test_a_hand_written_bug_is_caught(gen5, name: str) -> None:
    v = check_client(gen5, name)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None
    assert any(r.confirmed for r in v.counterexample.replay if "xla" in r.backend)
