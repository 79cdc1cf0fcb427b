"""What running a module on XLA at its own sizes costs, estimated from its ops: the
bytes of every op result (an upper bound on what XLA keeps alive: its buffer assignment
reuses memory) and the FLOPs of its contractions. The full-size check
(`witness/fullsize.py`) and the replay of a counterexample at the original sizes run a
module only when both fit a budget."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from tv_mlir.ir import Block, DotDims, Module, Op, TensorType

_WIDTH = re.compile(r"^(?:ui|i|f)(\d+)")
# Calls nested deeper than this are not followed for FLOPs (a recursive call graph, which
# StableHLO does not allow, would otherwise not end).
_MAX_CALL_DEPTH = 64


# Copies of the program's inputs one run holds beside its op results: the input set in
# this process, the copy sent to the XLA child, XLA's own argument buffers; and where a run
# spreads them over devices, up to two more per device (an input replicated over the devices
# is one part per device, sent and buffered each). An embedding of 2.1 GB replicated over 4
# devices passed a budget that counted op results only and was OOM-killed at 14.8 GB
# (red-team batch 3's first `special_ids.big`).
ARG_COPIES = 3
ARG_COPIES_PER_DEVICE = 2


@dataclass(frozen=True)
class Cost:
    bytes: int  # op results, all devices together
    flops: int  # 2 x multiply-adds of dot_general/dot (convolution has no semantics here)
    args: int = 0  # the program's inputs at their global sizes
    devices: int = 1  # the devices a run spreads its inputs over

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.bytes + other.bytes, self.flops + other.flops, self.args + other.args,
                    max(self.devices, other.devices))

    @property
    def memory(self) -> int:
        """What one run may hold at once: op results and the inputs' copies (an outer bound)."""
        per_device = ARG_COPIES_PER_DEVICE * self.devices if self.devices > 1 else 0
        return self.bytes + (ARG_COPIES + per_device) * self.args


def element_bytes(t: TensorType) -> int:
    m = _WIDTH.match(t.dtype)
    bits = int(m.group(1)) if m else 32
    return max(1, (bits + 7) // 8)


def module_cost(m: Module) -> Cost:
    """Bytes: every op of every function once (a loop body counts once per loop, not per
    iteration: its buffers are reused). FLOPs: what one run executes, from the entry: a
    called function's contractions once per call site, a loop body's once per trip where
    the trip count is a constant bound on a counter stepped by one (jax's fori_loop and
    scan; other loops count once, an underestimate). Ops inside a manual region, and every
    op of a per-device program, run on every device."""
    devices = max(1, m.num_devices, *(mesh.size for mesh in m.meshes.values()))
    mult = devices if m.per_device else 1
    nbytes = sum(_block_bytes(f.body, mult, devices) for f in m.funcs.values())
    main = m.funcs.get("main")
    flops = _Flops(m, devices).block(main.body, mult, 0) if main is not None else 0
    args = sum(t.size * element_bytes(t) for t in m.global_arg_types()) if main is not None else 0
    return Cost(nbytes, flops, args, devices)


def _block_bytes(block: Block, mult: int, devices: int) -> int:
    nbytes = 0
    for op in block.ops:
        nbytes += sum(t.size * element_bytes(t) for t in op.result_types) * mult
        inner = devices if op.name == "sdy.manual_computation" else mult
        nbytes += sum(_block_bytes(r, inner, devices) for r in op.regions)
    return nbytes


@dataclass
class _Flops:
    module: Module
    devices: int
    memo: dict[str, int] = field(default_factory=dict)  # callee -> FLOPs of one call at mult 1

    def block(self, block: Block, mult: int, depth: int) -> int:
        types: dict[str, TensorType] = dict(zip(block.args, block.arg_types))
        consts: dict[str, int] = {}
        flops = 0
        for op in block.ops:
            types.update(zip(op.results, op.result_types))
            if op.name == "stablehlo.constant" and op.result_types and op.result_types[0].shape == ():
                v = _scalar_int(op.attrs.get("value"))
                if v is not None:
                    consts[op.results[0]] = v
            if op.name in ("stablehlo.dot_general", "stablehlo.dot") and op.result_types and op.operands:
                flops += _dot_flops(op, types) * mult
            elif op.name == "func.call" and depth < _MAX_CALL_DEPTH:
                flops += self.call(str(op.attrs.get("callee", "")), depth) * mult
            inner = self.devices if op.name == "sdy.manual_computation" else mult
            if op.name == "stablehlo.while" and len(op.regions) == 2:
                trips = trip_count(op, consts)
                flops += self.block(op.regions[1], inner * max(trips, 1), depth)
            else:
                for region in op.regions:
                    flops += self.block(region, inner, depth)
        return flops

    def call(self, callee: str, depth: int) -> int:
        if callee not in self.memo:
            f = self.module.funcs.get(callee)
            self.memo[callee] = self.block(f.body, 1, depth + 1) if f is not None else 0
        return self.memo[callee]


def _dot_flops(op: Op, types: dict[str, TensorType]) -> int:
    lhs = types.get(op.operands[0])
    if lhs is None:
        return 0
    dims = op.attrs.get("dot_dimension_numbers")
    contracting = dims.lhs_contracting if isinstance(dims, DotDims) else (len(lhs.shape) - 1,)
    k = math.prod(lhs.shape[i] for i in contracting if i < len(lhs.shape))
    return 2 * op.result_types[0].size * k


def _scalar_int(value: object) -> int | None:
    a = np.asarray(value) if value is not None else None
    if a is None or a.size != 1 or a.dtype.kind not in "iu":
        return None
    return int(a.reshape(()))


def trip_count(op: Op, consts: dict[str, int]) -> int:
    """The trips of a `stablehlo.while` whose condition is `counter < N` (N a constant in
    the condition), whose counter starts at a constant of the enclosing block and whose
    body adds 1 to it: N - start. 1 for any other loop (the estimate's old rule: a loop
    body counted once)."""
    cond, body = op.regions
    if len(cond.returns) != 1:
        return 1
    cond_consts = {**consts}
    compare: Op | None = None
    for o in cond.ops:
        if o.name == "stablehlo.constant" and o.result_types and o.result_types[0].shape == ():
            v = _scalar_int(o.attrs.get("value"))
            if v is not None:
                cond_consts[o.results[0]] = v
        if o.results and o.results[0] == cond.returns[0]:
            compare = o
    if compare is None or compare.name != "stablehlo.compare" or \
            compare.attrs.get("comparison_direction") != "LT" or len(compare.operands) != 2:
        return 1
    counter, bound = compare.operands
    if counter not in cond.args or bound not in cond_consts:
        return 1
    k = cond.args.index(counter)
    start = consts.get(op.operands[k]) if k < len(op.operands) else None
    if start is None or k >= len(body.returns) or not _steps_by_one(body, k):
        return 1
    return max(0, cond_consts[bound] - start)


def _steps_by_one(body: Block, k: int) -> bool:
    """The body returns its k-th argument plus the constant 1."""
    ones = {o.results[0] for o in body.ops if o.name == "stablehlo.constant" and o.results
            and o.result_types[0].shape == () and _scalar_int(o.attrs.get("value")) == 1}
    step = next((o for o in body.ops if o.results and o.results[0] == body.returns[k]), None)
    return step is not None and step.name == "stablehlo.add" and len(step.operands) == 2 and \
        body.args[k] in step.operands and any(x in ones for x in step.operands if x != body.args[k])


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


__all__ = ["Cost", "element_bytes", "mem_available", "module_cost", "trip_count"]
