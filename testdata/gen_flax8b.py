"""The Llama-3-8B-width forward (testdata/gen_flax.py's LLAMA_8B, `measure_8b`'s pair) as
module text, for plan-level tests that need no export (helper-47): `testdata/flax8b/fwd.ref.
mlir` and `fwd.partitioned.mlir` (~130 KB; the shapes are the model's, nothing is run).
tests/test_flax_8b_plan.py plans them with `measure_8b`'s assumed ranges in ~1 s; the
whole check is tests/test_flax_8b.py.

    .venv/bin/python testdata/gen_flax8b.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_flax  # noqa: E402

import tv_mlir.jax as tj  # noqa: E402

OUT = Path(__file__).resolve().parent / "flax8b"


def main() -> int:
    OUT.mkdir(exist_ok=True)
    v = next(v for v in gen_flax.variants(gen_flax.LLAMA_8B) if v.name == "fwd")
    ref, other = tj._pair(v.fn, v.args, v.in_shardings, v.out_shardings, None, "partitioned")
    (OUT / "fwd.ref.mlir").write_text(ref)
    (OUT / "fwd.partitioned.mlir").write_text(other)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
