"""The environment as a careless user leaves it: few file descriptors, a GPU platform
asked for on a machine without one, and a program that calls back into a Python process
that no longer exists (jax.pure_callback: XLA would jump to a dead pointer)."""
from __future__ import annotations

import json
import resource
from pathlib import Path

from hostile import GOOD_A, GOOD_B, cli

TIMES_ZERO = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %r = stablehlo.multiply %x, %z : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
ZERO = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  return %z : tensor<4xf32>
}
"""
# What jax.jit(lambda x: jax.pure_callback(np.sin, ..., x) * 2).lower(x) emits: the
# callback's index refers to a table in the exporting process.
CALLBACK = """func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {backend_config = "", mhlo.backend_config = {index = 0 : ui64}, operand_layouts = [dense<0> : tensor<1xindex>], result_layouts = [dense<0> : tensor<1xindex>]} : (tensor<4xf32>) -> tensor<4xf32>
  %c = stablehlo.constant dense<2.0> : tensor<4xf32>
  %1 = stablehlo.multiply %0, %c : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (12, 12))


def test_few_file_descriptors() -> None:
    # `ulimit -n 12` was an internal error.
    p = cli("verify", "--json", str(GOOD_A), str(GOOD_B), preexec_fn=_limit_files)
    assert b"Traceback" not in p.stderr
    if p.returncode == 0:
        assert json.loads(p.stdout)["verdict"] == "equivalent"
    else:  # refused in one line, as an error of the environment
        assert p.returncode in (2, 3) and len(p.stderr.decode().strip().splitlines()) == 1, p.stderr


def test_gpu_platform_without_a_gpu(tmp_path: Path) -> None:
    # JAX_PLATFORMS=gpu was an AssertionError. The proof needs no device; the replay says
    # in its line why it could not run, and the verdict stands on the exact check.
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(TIMES_ZERO)
    b.write_text(ZERO)
    p = cli("verify", "--json", "--inputs", "ieee", str(a), str(b), extra_env={"JAX_PLATFORMS": "gpu"})
    assert b"Traceback" not in p.stderr and p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    assert d["verdict"] == "not-equivalent"
    xla = [r for r in d["counterexample"]["replay"] if r["backend"] == "xla"]
    assert xla and xla[0]["error"] and not xla[0]["confirmed"]


def test_python_callback_is_unknown_not_replayed(tmp_path: Path) -> None:
    a = tmp_path / "cb.mlir"
    a.write_text(CALLBACK)
    p = cli("verify", "--json", str(a), str(a))
    assert p.returncode == 2 and not p.stderr.strip(), p.stderr
    d = json.loads(p.stdout)
    assert d["verdict"] == "unknown" and "xla_ffi_python_cpu_callback" in d["reason"]
    assert d["counterexample"] is None
