"""Shrinking-rule pairs for rule (k)'s constant tables read at data indices (docs/shrinking.md,
rule k "tables"). Same form and XLA ground truth as testdata/gen_shrink_rules.py: a
reference, a correct twin and a bug twin, run on XLA at their original sizes, written to
`<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_tables.json`.

    .venv/bin/python testdata/shrink_rules/gen_tables.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, Arg, Pair, write_manifest  # noqa: E402


# (k, tables) A constant table with ones at two vocabulary rows read at the token ids: the
# sum is the count k of tokens with one of those ids, and the reference returns C(k, 3).
# The correct twin expands it, (k^3 - 3k^2 + 2k) / 6; the bug returns 0, which agrees
# wherever k <= 2: at two tokens, where Newton's degree puts the class when the table's
# values are taken for free summands.
def table_count(v: int, n: int, variant: str) -> Pair:
    table = np.zeros(v, np.float32)
    table[3] = table[v // 2] = 1.0

    def count(ids):
        return jnp.sum(jnp.asarray(table)[ids])

    def ref(ids, x):
        k = count(ids)
        return k * (k - 1) * (k - 2) / 6 + jnp.sum(x)

    def ok(ids, x):
        k = count(ids)
        return (k * k * k - 3 * k * k + 2 * k) / 6 + jnp.sum(x)

    def bug(ids, x):
        return 0.0 * count(ids) + jnp.sum(x)

    return Pair("table_count", "k", variant, {"vocab": v, "tokens": n}, [Arg((n,), I32, v), Arg((n,))],
                ref, ok, bug, "C(k, 3) of a table-lookup count replaced by 0 (equal while k <= 2)")


def pairs() -> list[Pair]:
    return [table_count(16, 64, "small")]


def main() -> int:
    return write_manifest(pairs(), "manifest_tables.json", ok_tol=1e-3)

if __name__ == "__main__":
    raise SystemExit(main())
