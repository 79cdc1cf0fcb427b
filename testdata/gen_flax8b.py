"""The Llama-3-8B-width pairs (testdata/gen_flax.py's LLAMA_8B, `measure_8b`'s pairs) as
module text, for plan-level tests that need no export (helper-47; the backward and the step
added by helper-54): `testdata/flax8b/VARIANT.ref.mlir` and `VARIANT.FORM.mlir` for the
forward in the partitioned form (the original pair) and the forward+backward and the train
step in both forms (the shapes are the model's, nothing is run). tests/test_flax_8b_plan.py
plans them with `measure_8b`'s assumed ranges in ~1 s each; the whole check is
tests/test_flax_8b.py.

    .venv/bin/python testdata/gen_flax8b.py [VARIANT FORM ...]
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
PAIRS = (("fwd", "partitioned"), ("fwdbwd", "partitioned"), ("fwdbwd", "shardy"),
         ("step", "partitioned"), ("step", "shardy"))


def write(variant: str, form: str) -> None:
    v = next(v for v in gen_flax.variants(gen_flax.LLAMA_8B) if v.name == variant)
    ref, other = tj._pair(v.fn, v.args, v.in_shardings, v.out_shardings, None, form)
    (OUT / f"{variant}.ref.mlir").write_text(ref)  # the reference is the same for both forms
    (OUT / f"{variant}.{form}.mlir").write_text(other)


def main(argv: list[str]) -> int:
    OUT.mkdir(exist_ok=True)
    wanted = list(zip(argv[::2], argv[1::2])) or list(PAIRS)
    for variant, form in wanted:
        write(variant, form)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
