"""Pairs for the witness phase's tests (tests/test_overflow_guard.py): a real bug whose
difference shows in float64 only at points where float64 itself does not overflow.

- `muon_ns5.{ref,bad}.mlir`: gen_clients4.py's `muon_ns5` (Muon's momentum, Frobenius
  normalisation and five Newton-Schulz iterations over FSDP rows, 8 devices) and its
  partitioned module with gen_clients3's `dropped_all_reduce` mutation (the norm's sum of
  squares left per device). At every dense input the mutant's iterations diverge: XLA
  gives NaN against a finite reference, and float64 overflows too.

    .venv/bin/python testdata/gen_witness.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_clients4 as g4  # noqa: E402  (sets the 8 host devices before jax loads)


def main() -> None:
    out = HERE / "witness"
    out.mkdir(exist_ok=True)
    p = g4.PROGRAMS["muon_ns5"]()
    ref, text = g4.g.tj._pair(p.fn, p.args, p.in_shardings, p.out_shardings, p.reference, "partitioned")
    bad = g4.MUTATIONS["dropped_all_reduce"](text)
    assert bad != text, "the mutation found no all-reduce"
    # Locations relative to the repository, as the other generators' files have them.
    ref, bad = (t.replace(f"{HERE.parent}/", "") for t in (ref, bad))
    (out / "muon_ns5.ref.mlir").write_text(ref)
    (out / "muon_ns5.bad.mlir").write_text(bad)


if __name__ == "__main__":
    main()
