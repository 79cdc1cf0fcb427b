"""Normalization passes: call inlining, no-op custom calls, dead code."""
from __future__ import annotations

import itertools
from dataclasses import replace

from tv_mlir.errors import Unsupported
from tv_mlir.ir import Block, Module, Op
from tv_mlir.passes.rename import fresh_copy, substitute
from tv_mlir.semantics.ops import CALLS, NOOP_CUSTOM_CALLS


def inline(module: Module, max_depth: int = 64) -> Module:
    """Replace func.call and stablehlo.composite (by its decomposition) with the callee's
    body. jax emits calls to private functions that MLIR's inliner leaves in place."""
    counter = itertools.count()

    def expand(block: Block, depth: int) -> Block:
        ops: list[Op] = []
        mapping: dict[str, str] = {}
        for op in block.ops:
            if op.name in CALLS:
                callee = op.attrs.get("callee") if op.name == "func.call" else op.attrs.get("decomposition")
                if callee not in module.funcs:
                    raise Unsupported(f"call to unknown function @{callee}", op.loc, op.name)
                if depth >= max_depth:
                    raise Unsupported(f"calls nested deeper than {max_depth} (recursion?) at @{callee}",
                                      op.loc, op.name)
                body, _ = fresh_copy(module.funcs[callee].body, "%i", counter)
                body = substitute(body, dict(zip(body.args, op.operands)))
                body = expand(body, depth + 1)
                ops.extend(body.ops)
                mapping.update(zip(op.results, body.returns))
            else:
                ops.append(replace(op, regions=tuple(expand(r, depth) for r in op.regions)))
        return substitute(replace(block, ops=ops), mapping)

    funcs = dict(module.funcs)
    main = funcs[module.entry]
    funcs[module.entry] = replace(main, body=expand(main.body, 0))
    return replace(module, funcs=funcs)


def drop_noop_custom_calls(module: Module) -> Module:
    """custom_call @Sharding and friends forward their operand unchanged."""

    def rec(block: Block) -> Block:
        ops: list[Op] = []
        mapping: dict[str, str] = {}
        for op in block.ops:
            if (op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in NOOP_CUSTOM_CALLS
                    and len(op.operands) == len(op.results)):
                mapping.update(zip(op.results, op.operands))
                continue
            ops.append(replace(op, regions=tuple(rec(r) for r in op.regions)))
        return substitute(replace(block, ops=ops), mapping)

    return _map_funcs(module, rec)


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
            callee = op.attrs.get("callee") or op.attrs.get("decomposition")
            if callee is not None:
                keep.add(callee)
    return replace(module, funcs={n: f for n, f in module.funcs.items() if n in keep})


__all__ = ["inline", "drop_noop_custom_calls", "dce", "drop_unused_funcs"]
