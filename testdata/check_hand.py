"""Check the hand-written pairs in testdata/hand/ (they are edited by hand,
not generated).

    JAX_PLATFORMS=cpu .venv/bin/python testdata/check_hand.py

For every entry of hand/manifest.json: both files parse and verify with
jaxlib's MLIR bindings, @main has the same input signature on both sides, and
the expectation holds numerically on XLA:CPU with random inputs (fixed seed):
"equivalent" -> agree on all inputs; "not-equivalent" -> differ on some input;
"unknown" -> agree (the hand "unknown" pairs are equal functions that the
verifier cannot prove, e.g. unsupported ops). Exits non-zero on failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlir_run import main_signature, make_context, parse, parse_tensor_type, run_xla  # noqa: E402

HERE = Path(__file__).resolve().parent / "hand"
N_RANDOM = 8
SEED = 7


def draw(t: str, rng: np.random.Generator, name: str) -> np.ndarray:
    shape, dtype = parse_tensor_type(t)
    if dtype == np.float32:
        x = rng.standard_normal(shape).astype(np.float32)
        if name.startswith("cholesky_twice"):  # symmetric positive definite
            x = (x @ x.T + len(x) * np.eye(len(x))).astype(np.float32)
        return x
    if dtype == np.int32:
        return rng.integers(-20, 20, size=shape).astype(np.int32)  # includes 0 and negatives
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    raise TypeError(t)


def agree(u: list[np.ndarray], v: list[np.ndarray]) -> bool:
    return len(u) == len(v) and all(
        x.shape == y.shape and (np.array_equal(x, y) if x.dtype.kind in "iub"
                                else np.allclose(x, y, rtol=1e-5, atol=1e-5))
        for x, y in zip(u, v))


def main() -> int:
    manifest = json.loads((HERE / "manifest.json").read_text())
    ctx = make_context()
    rng = np.random.default_rng(SEED)
    failures = []
    for name, entry in sorted(manifest.items()):
        ta = (HERE / f"{name}.a.mlir").read_text()
        tb = (HERE / f"{name}.b.mlir").read_text()
        ins_a, outs_a = main_signature(parse(ta, ctx))
        ins_b, outs_b = main_signature(parse(tb, ctx))
        if ins_a != ins_b or outs_a != outs_b:
            failures.append(f"{name}: signatures differ {ins_a}->{outs_a} vs {ins_b}->{outs_b}")
            continue
        results = []
        for _ in range(N_RANDOM):
            xs = [draw(t, rng, name) for t in ins_a]
            results.append(agree(run_xla(ta, xs), run_xla(tb, xs)))
        expect = entry["expect"]
        ok = all(results) if expect in ("equivalent", "unknown") else not all(results)
        print(f"{name:24s} {expect:15s} agree on {sum(results)}/{len(results)} random inputs"
              f" {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(name)
    if failures:
        print("FAILED:", failures, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
