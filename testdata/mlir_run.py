"""Helpers for the testdata scripts: parse StableHLO text with jaxlib's MLIR
bindings and run a single-device module on XLA:CPU.

Not part of tv_mlir; used only by check_hand.py, gen_bad.py and gen_big.py.

Why XLA and not ``stablehlo.eval_module``: the StableHLO reference interpreter
in jaxlib 0.10.2 kills the process with SIGFPE on an i32 ``divide`` by zero
(hand/int_ops does that, on purpose, under a select guard).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def make_context():
    """An MLIR context with func/stablehlo/chlo/sdy registered (no jax import)."""
    from tv_mlir.frontend.read import mlir_context

    return mlir_context()


def parse(text: str | bytes, ctx=None):
    """Parse and verify; raises jaxlib.mlir.ir.MLIRError on bad input."""
    from jaxlib.mlir import ir

    ctx = ctx or make_context()
    with ctx:
        module = ir.Module.parse(text)
        if not module.operation.verify():
            raise ValueError("module does not verify")
    return module


def main_signature(module) -> tuple[list[str], list[str]]:
    """(input types, result types) of @main as MLIR type strings."""
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            return [str(t) for t in ft.inputs], [str(t) for t in ft.results]
    raise ValueError("no @main")


_TYPE_RE = re.compile(r"tensor<((?:\d+x)*)(\w+)>")
_DTYPES = {"f32": np.float32, "i32": np.int32, "i1": np.bool_, "f64": np.float64, "i64": np.int64}


def parse_tensor_type(t: str) -> tuple[tuple[int, ...], Any]:
    m = _TYPE_RE.fullmatch(t)
    if not m:
        raise ValueError(f"unsupported type {t}")
    dims = tuple(int(d) for d in m.group(1).split("x") if d)
    return dims, _DTYPES[m.group(2)]


@functools.lru_cache(maxsize=64)
def _compile(text: str):
    from jax._src import compiler
    from jax._src import xla_bridge as xb
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc

    backend = xb.get_backend("cpu")
    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(text)
        opts = compiler.get_compile_options(num_replicas=1, num_partitions=1)
        devices = xc.DeviceList(tuple(backend.devices()[:1]))
        return backend, backend.compile_and_load(module, executable_devices=devices, compile_options=opts)


def run_xla(text: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Compile ``text`` (a single-device StableHLO module) with XLA:CPU and run it."""
    import jax

    backend, exe = _compile(text)
    args = [jax.device_put(np.asarray(x), backend.devices()[0]) for x in inputs]
    out = exe.execute_sharded(args).disassemble_into_single_device_arrays()
    return [np.asarray(per_device[0]) for per_device in out]
