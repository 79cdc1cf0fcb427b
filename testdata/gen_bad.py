"""Generate testdata/bad/: inputs the verifier must reject with an input/usage
error (exit 3, one-line message, never a traceback).

    JAX_PLATFORMS=cpu .venv/bin/python testdata/gen_bad.py

Files (deterministic; rerunning gives identical bytes):
  garbage.mlir      seeded random printable text (does not parse)
  empty.mlir        0 bytes. NOTE: MLIR parses this fine as an empty
                    `module {}`; it must be rejected for having no @main.
  truncated.mlir    a valid module cut in the middle of an op (does not parse)
  binary.mlir       seeded random bytes, not MLIR bytecode (no `ML\\xefR` magic)
  mismatch.a.mlir / mismatch.b.mlir
                    valid modules, same result type, different input
                    signatures ((4x4, 4x4) vs (4x4, 4)).
bad/manifest.json lists each case with expect "error".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in testdata/
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlir_run import main_signature, make_context, parse  # noqa: E402

OUT = Path(__file__).resolve().parent / "bad"

VALID = """\
module @truncated {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %0, %arg1 : tensor<4x4xf32>
    %2 = stablehlo.multiply %1, %arg0 : tensor<4x4xf32>
    return %2 : tensor<4x4xf32>
  }
}
"""

MISMATCH_A = """\
// Valid module; its input signature differs from mismatch.b.mlir.
module @mismatch_a {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}
"""

MISMATCH_B = """\
// Valid module; same result type as mismatch.a.mlir but the second input is tensor<4xf32>.
module @mismatch_b {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
"""


def garbage_text(rng: np.random.Generator) -> str:
    words = ["module", "func", "%0", "=", "tensor<", "{", "}", "stablehlo.", "@@", "::", "#loc",
             "lorem", "ipsum", "0x7f", "->", "(", ")", "dense<", ">", ":", "!!", "^bb"]
    lines = []
    for _ in range(12):
        n = int(rng.integers(3, 12))
        lines.append(" ".join(words[int(i)] for i in rng.integers(0, len(words), size=n)))
    # make sure it cannot be a valid module: start with a stray token
    return "%%% not mlir\n" + "\n".join(lines) + "\n"


def binary_bytes(rng: np.random.Generator) -> bytes:
    b = bytearray(rng.integers(0, 256, size=512, dtype=np.uint8).tobytes())
    b[0] = 0x00  # never the bytecode magic b"ML\xefR"
    b[1] = 0xFF
    return bytes(b)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1234)
    cut = VALID.index("stablehlo.add") + len("stablehlo.add %0, ")  # mid-op
    files: dict[str, bytes] = {
        "garbage.mlir": garbage_text(rng).encode(),
        "empty.mlir": b"",
        "truncated.mlir": VALID[:cut].encode(),
        "binary.mlir": binary_bytes(rng),
        "mismatch.a.mlir": MISMATCH_A.encode(),
        "mismatch.b.mlir": MISMATCH_B.encode(),
    }
    for name, data in files.items():
        (OUT / name).write_bytes(data)

    ctx = make_context()
    parse(VALID, ctx)  # the untruncated module is valid
    for name in ("garbage.mlir", "truncated.mlir", "binary.mlir"):
        try:
            parse(files[name], ctx)
        except Exception as e:  # MLIRError
            print(f"{name:18s} rejected by the parser: {str(e).splitlines()[-1].strip()}")
        else:
            raise AssertionError(f"{name} unexpectedly parses")
    m = parse(files["empty.mlir"], ctx)
    try:
        main_signature(m)
    except ValueError:
        print(f"{'empty.mlir':18s} parses as an empty module; no @main")
    else:
        raise AssertionError("empty.mlir has a @main?")
    sa = main_signature(parse(files["mismatch.a.mlir"], ctx))
    sb = main_signature(parse(files["mismatch.b.mlir"], ctx))
    assert sa[0] != sb[0] and sa[1] == sb[1], (sa, sb)
    print(f"{'mismatch.{a,b}':18s} valid; inputs {sa[0]} vs {sb[0]}")

    manifest = {
        "garbage": {"files": ["garbage.mlir"], "expect": "error", "why": "random text, not MLIR"},
        "empty": {"files": ["empty.mlir"], "expect": "error",
                  "why": "0 bytes; MLIR parses it as an empty module, which has no @main"},
        "truncated": {"files": ["truncated.mlir"], "expect": "error", "why": "valid module cut mid-op"},
        "binary": {"files": ["binary.mlir"], "expect": "error", "why": "random bytes, not MLIR bytecode"},
        "mismatch": {"files": ["mismatch.a.mlir", "mismatch.b.mlir"], "expect": "error",
                     "why": "both valid, but input signatures differ (4x4,4x4 vs 4x4,4)"},
    }
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
