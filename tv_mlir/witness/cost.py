"""What running a module on XLA at its own sizes costs, estimated from its ops: the
bytes of every op result (an upper bound on what XLA keeps alive: its buffer assignment
reuses memory) and the FLOPs of its contractions. The full-size check
(`witness/fullsize.py`) and the replay of a counterexample at the original sizes run a
module only when both fit a budget."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tv_mlir.ir import Block, DotDims, Module, TensorType

_WIDTH = re.compile(r"^(?:ui|i|f)(\d+)")


@dataclass(frozen=True)
class Cost:
    bytes: int  # op results, all devices together
    flops: int  # 2 x multiply-adds of dot_general/dot (convolution has no semantics here)

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.bytes + other.bytes, self.flops + other.flops)


def element_bytes(t: TensorType) -> int:
    m = _WIDTH.match(t.dtype)
    bits = int(m.group(1)) if m else 32
    return max(1, (bits + 7) // 8)


def module_cost(m: Module) -> Cost:
    """Every op of every function once (a loop body counts once per loop, not per
    iteration: its buffers are reused; its FLOPs are an underestimate for loops, which
    the bundled plans use for pipelines of a few stages). Ops inside a manual region, and
    every op of a per-device program, run on every device."""
    devices = max(1, m.num_devices, *(mesh.size for mesh in m.meshes.values()))
    total = Cost(0, 0)
    for f in m.funcs.values():
        total += _block_cost(f.body, devices if m.per_device else 1, devices)
    return total


def _block_cost(block: Block, mult: int, devices: int) -> Cost:
    types: dict[str, TensorType] = dict(zip(block.args, block.arg_types))
    nbytes = flops = 0
    for op in block.ops:
        for name, t in zip(op.results, op.result_types):
            types[name] = t
            nbytes += t.size * element_bytes(t) * mult
        if op.name in ("stablehlo.dot_general", "stablehlo.dot") and op.result_types and op.operands:
            lhs = types.get(op.operands[0])
            if lhs is not None:
                dims = op.attrs.get("dot_dimension_numbers")
                contracting = dims.lhs_contracting if isinstance(dims, DotDims) else (len(lhs.shape) - 1,)
                k = math.prod(lhs.shape[i] for i in contracting if i < len(lhs.shape))
                flops += 2 * op.result_types[0].size * k * mult
        inner = devices if op.name == "sdy.manual_computation" else mult
        for region in op.regions:
            types.update(zip(region.args, region.arg_types))
            c = _block_cost(region, inner, devices)
            nbytes, flops = nbytes + c.bytes, flops + c.flops
    return Cost(nbytes, flops)


def mem_available() -> int | None:
    """MemAvailable from /proc/meminfo in bytes; None where there is none (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


__all__ = ["Cost", "element_bytes", "mem_available", "module_cost"]
