"""Rule (a)'s size values that meet, read through a deep chain of calls (helper-54, issue 14:
docs/jax.md "At Llama-3-8B widths"). `meets._all_sources` with `data_only` reads a call's
results from its callee's returns of the pass before, so sources settle one pass per call the
data flowed through; with 12 passes the 8B backward (15 needed) fell back to the literals'
sources and kept its vocabulary at 16000. These pairs are rule a's `pair_clamp`
(gen_pair_meets.py) with the looked-up rows passed through CHAIN nested jitted calls (each a
`func.call` to a function of its own) before the mean over the tokens: the correct twin's
vocabulary may shrink below the tokens only once the sources settle; the bug twin (the ids
clamped at the tokens' last position n - 1 instead of V - 1, the clamp reached through the
same chain) must keep the vocabulary above the tokens whatever the pass count. Run on XLA at
their original sizes, written to `deep_clamp.<variant>.{ref,ok,bug}.mlir`, listed in
`manifest_deep_meets.json`.

    .venv/bin/python testdata/shrink_rules/gen_deep_meets.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, Arg, Pair, write_manifest  # noqa: E402

CHAIN = 16  # more calls than the 12 passes the sources had before


def _chain(x):
    """Float rows through 2 CHAIN nested calls, each its own function (a new lambda each
    time): a product with 1.0, which leaves them as they are."""
    for _ in range(2 * CHAIN):
        x = jax.jit(lambda y: y * 1.0)(x)
    return x


def _int_chain(ids):
    """Token ids through CHAIN calls, each its own function (a new lambda each time): a sum
    with 0, which leaves them as they are. No literal of rule a's range (ids computed from
    floats would pin the vocabulary; small literals would order it), and nothing the solver
    must reason about bit by bit (an `and` with -1 timed out the correct twin)."""
    for _ in range(CHAIN):
        ids = jax.jit(lambda y: y + 0)(ids)
    return ids


def deep_clamp(v: int, h: int, n: int, variant: str) -> Pair:
    def look(emb, ids, last):
        rows = jnp.take(emb, jnp.minimum(_int_chain(ids), last), axis=0, mode="clip")
        rows = jnp.where((ids >= 0)[:, None], rows, 0.0)
        rows = _chain(rows)
        return jnp.mean(rows * rows, axis=0)

    def ref(emb, ids):
        return look(emb, ids, v - 1)

    def ok(emb, ids):
        rows = jnp.take(emb, jnp.where(ids < v - 1, ids, v - 1), axis=0, mode="clip")
        rows = jnp.where((ids >= 0)[:, None], rows, 0.0)
        return jnp.sum(rows * rows, axis=0) / n

    def bug(emb, ids):
        return look(emb, ids, n - 1)

    return Pair("deep_clamp", "a", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((v, h)), Arg((n,), I32, v)], ref, ok, bug,
                "the ids clamped at the tokens' last position instead of the vocabulary's last row, "
                f"the rows and the ids through {CHAIN} nested calls each way")


def pairs() -> list[Pair]:
    return [deep_clamp(64, 4, 16, "small"), deep_clamp(32000, 8, 2048, "big")]


def main() -> int:
    return write_manifest(pairs(), "manifest_deep_meets.json")


if __name__ == "__main__":
    raise SystemExit(main())
