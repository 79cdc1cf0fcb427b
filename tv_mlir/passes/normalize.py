"""Normalization passes: call inlining, no-op custom calls, dead code, common subexpressions."""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tv_mlir.errors import Unsupported
from tv_mlir.ir import Block, Module, Op, Sharding, TensorType
from tv_mlir.options import MAX_CALL_DEPTH, MAX_NESTING, MAX_OPS
from tv_mlir.passes.rename import fresh_copy, fresh_counter, substitute
from tv_mlir.semantics.ops import CALLS, called_function, is_noop_custom_call


def inline(module: Module, max_depth: int = MAX_CALL_DEPTH, max_ops: int = MAX_OPS) -> Module:
    """Replace func.call and stablehlo.composite (by its decomposition) with the callee's
    body. jax emits calls to private functions that MLIR's inliner leaves in place.
    Recursion, calls nested deeper than `max_depth` and more than `max_ops` ops after
    inlining (calls that fan out) are `Unsupported` naming the budget, decided from the
    call graph before anything is copied."""
    size = _CallGraph(module, max_depth).inlined_size(module.entry)
    if size > max_ops:
        raise Unsupported(f"inlining calls would make {size} ops, over the op budget of {max_ops} (every call "
                          "copies its callee: calls that fan out grow exponentially)",
                          module.main.loc, "budget.inlining")
    inliner = _Inliner(module, fresh_counter(module, INLINED))
    funcs = dict(module.funcs)
    main = funcs[module.entry]
    funcs[module.entry] = replace(main, body=inliner.expand(main.body))
    return replace(module, funcs=funcs)


@dataclass
class _CallGraph:
    """Sizes and depths of functions once their calls are inlined, one visit per function."""

    module: Module
    max_depth: int
    sizes: dict[str, int] = field(default_factory=dict)
    heights: dict[str, int] = field(default_factory=dict)  # calls nested below a function

    def inlined_size(self, name: str, calls: tuple[str, ...] = ()) -> int:
        """Ops of `name`'s body with every call replaced by its callee's inlined body;
        `calls`: the functions whose bodies enclose this one (recursion is bounded by
        max_depth, and a call into them is recursion)."""
        if name in self.sizes:
            return self.sizes[name]
        calls = (*calls, name)
        size, height = 0, 0
        for op in self.module.funcs[name].body.walk():
            if op.name not in CALLS:
                size += 1
                continue
            callee = self.checked_callee(op, calls)
            size += self.inlined_size(callee, calls)
            height = max(height, self.heights[callee] + 1)
        self.sizes[name], self.heights[name] = size, height
        return size

    def checked_callee(self, op: Op, calls: tuple[str, ...]) -> str:
        callee = called_function(op)
        if not isinstance(callee, str) or callee not in self.module.funcs:
            raise Unsupported(f"call to unknown function @{callee}", op.loc, op.name)
        if callee in calls:
            chain = " -> ".join(f"@{f}" for f in (*calls[calls.index(callee):], callee))
            raise Unsupported(f"recursive call to @{callee} ({chain})", op.loc, "budget.recursion")
        if len(calls) + self.heights.get(callee, 0) > self.max_depth:
            raise Unsupported(f"calls nested deeper than {self.max_depth} (the call budget) at @{callee}",
                              op.loc, "budget.calls")
        return callee


# The prefix of the values an inlined body defines.
INLINED = "%i"


@dataclass
class _Inliner:
    module: Module
    counter: itertools.count[int]  # fresh_counter's: names the module does not hold yet

    def expand(self, block: Block, depth: int = 0) -> Block:
        """`block` with its calls inlined (the call graph is known to be acyclic and within
        the budgets); `depth`: the regions around the block in the result (a call inside a
        region nests its callee's regions deeper)."""
        ops: list[Op] = []
        mapping: dict[str, str] = {}
        for op in block.ops:
            if op.name in CALLS:
                body, _ = fresh_copy(self.module.funcs[str(called_function(op))].body, INLINED, self.counter)
                body = self.expand(substitute(body, dict(zip(body.args, op.operands))), depth)
                ops.extend(body.ops)
                mapping.update(zip(op.results, body.returns))
                continue
            if op.regions and depth + 1 > MAX_NESTING:
                raise Unsupported(f"regions nested deeper than {MAX_NESTING} once calls are inlined "
                                  "(the nesting budget)", op.loc, "budget.nesting")
            ops.append(replace(op, regions=tuple(self.expand(r, depth + 1) for r in op.regions)))
        return substitute(replace(block, ops=ops), mapping)


def drop_noop_custom_calls(module: Module) -> Module:
    """custom_call @Sharding and friends forward their operand unchanged, when each result
    has its operand's type. One that changes a type is left for the semantics to refuse:
    XLA does not convert there, it refuses the program (`Sharding` from i32 to i8: "The
    shape doesn't match when replacing"), and forwarding the operand read the i8 result
    as the i32 value."""

    def rec(block: Block, outer: dict[str, TensorType]) -> Block:
        types = {**outer, **dict(zip(block.args, block.arg_types))}
        ops: list[Op] = []
        mapping: dict[str, str] = {}
        for op in block.ops:
            if is_noop_custom_call(op, tuple(types.get(v) for v in op.operands)):
                mapping.update(zip(op.results, op.operands))
                continue
            ops.append(replace(op, regions=tuple(rec(r, types) for r in op.regions)))
            types.update(zip(op.results, op.result_types))
        return substitute(replace(block, ops=ops), mapping)

    return _map_funcs(module, lambda b: rec(b, {}))


def dce(module: Module) -> Module:
    """Drop ops none of whose results is used (every supported op is pure)."""

    def uses(block: Block) -> set[str]:
        used = set(block.returns)
        for op in block.ops:
            used.update(op.operands)
            for r in op.regions:
                used |= uses(r)
        return used

    def rec(block: Block) -> Block:
        ops = [replace(op, regions=tuple(rec(r) for r in op.regions)) for op in block.ops]
        while True:
            used = uses(replace(block, ops=ops))
            kept = [op for op in ops if any(r in used for r in op.results) or not op.results]
            if len(kept) == len(ops):
                return replace(block, ops=kept)
            ops = kept

    return _map_funcs(module, rec)


def _map_funcs(module: Module, fn) -> Module:
    funcs = {name: replace(f, body=fn(f.body)) for name, f in module.funcs.items()}
    return replace(module, funcs=funcs)


def drop_unused_funcs(module: Module) -> Module:
    """After inlining only the entry (and anything still called) is needed."""
    keep = {module.entry}
    for op in module.main.body.walk():
        if op.name in CALLS:
            name = called_function(op)
            if isinstance(name, str):
                keep.add(name)
    return replace(module, funcs={n: f for n, f in module.funcs.items() if n in keep})


# Ops two of which with the same operands and attributes may still differ: random bits,
# effects, and collectives (their channel is part of what they are), and calls to code the
# semantics table does not know.
_NOT_SHARED = frozenset({
    "stablehlo.rng", "stablehlo.rng_bit_generator", "stablehlo.custom_call", "stablehlo.send",
    "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.after_all",
    "stablehlo.optimization_barrier", "stablehlo.all_reduce", "stablehlo.all_gather",
    "stablehlo.all_to_all", "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.partition_id", "stablehlo.replica_id",
})


def attr_key(value: Any) -> Any:
    """A hashable, comparable stand-in for an attribute value (arrays by their bytes);
    also what a stage's structural hash is made of (stages/hashing.py)."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        # An object array's bytes are its elements' addresses, not their values: equal
        # constants would differ, and a freed one's address can be reused by another.
        return ("nd-obj", value.shape, hashlib.sha256(repr(value.tolist()).encode()).digest())
    if isinstance(value, np.ndarray):
        return ("nd", value.dtype.str, value.shape, hashlib.sha256(np.ascontiguousarray(value).tobytes()).digest())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), attr_key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(attr_key(v) for v in value))
    if isinstance(value, Sharding):
        # The fields, not `describe()`: axis names are the user's and may hold `}, {`, so
        # [{"p}, {q"}, {r}] and [{p}, {"q}, {r"}] on one mesh read alike there, and two
        # stages sharded apart would share one hash, and one proof.
        return ("sharding", value.mesh.axes, value.mesh.device_ids, value.dims, value.unreduced)
    return (type(value).__name__, repr(value))


def cse(module: Module) -> Module:
    """One op for each set of region-free ops with the same name, operands, attributes and
    result types, within a block (jax lowers `w * x` and its gradient each with their own
    broadcast of `w`). A staged proof needs it: a stage that reads a value the other
    program computed once and the reference computed twice could not see that the second
    copy, an input of the stage, is the first."""

    def rec(block: Block) -> Block:
        seen: dict[tuple, Op] = {}
        mapping: dict[str, str] = {}
        ops: list[Op] = []

        def name(v: str) -> str:
            return mapping.get(v, v)

        for op in block.ops:
            if op.regions:
                ops.append(replace(op, regions=tuple(rec(substitute(r, mapping)) for r in op.regions)))
                continue
            if op.name in _NOT_SHARED or not op.results:
                ops.append(op)
                continue
            attrs = {k: v for k, v in op.attrs.items() if k != "loc"}
            key = (op.name, tuple(name(o) for o in op.operands), op.result_types, attr_key(attrs))
            first = seen.get(key)
            if first is not None:
                mapping.update(zip(op.results, first.results))
                continue
            seen[key] = op
            ops.append(op)
        return substitute(replace(block, ops=ops), mapping)

    return _map_funcs(module, rec)


__all__ = ["inline", "drop_noop_custom_calls", "dce", "drop_unused_funcs", "cse"]
