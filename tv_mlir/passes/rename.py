"""Value renaming over blocks, shared by the passes that splice or drop ops."""
from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import replace

from tv_mlir.ir import Block, Module


def substitute(block: Block, mapping: Mapping[str, str]) -> Block:
    """A copy of block with every use (operands, nested regions, returns) renamed."""
    if not mapping:
        return block

    def r(name: str) -> str:
        while name in mapping:
            name = mapping[name]
        return name

    ops = [replace(op, operands=tuple(r(o) for o in op.operands),
                   regions=tuple(substitute(b, mapping) for b in op.regions)) for op in block.ops]
    return replace(block, ops=ops, returns=tuple(r(x) for x in block.returns))


def fresh_counter(module: Module, prefix: str) -> itertools.count[int]:
    """A counter for names `{prefix}{n}` (`fresh_copy`) that no value of `module` has: past
    the largest such n there. A pass's counter started at 0 on every run, so a pipeline
    that unrolls, inlines and unrolls again (a loop counted only once its start is inlined)
    defined `%u0` twice in one block, and the program's reads of the first read the second
    (`unroll-loops`, `inline`, `unroll-loops`: a pair differing in an output was
    `equivalent`; tests/test_hostile_names.py)."""
    top = -1
    for f in module.funcs.values():
        for name, _ in f.body.defined():
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                top = max(top, int(name[len(prefix):]))
    return itertools.count(top + 1)


def fresh_copy(block: Block, prefix: str, counter: itertools.count) -> tuple[Block, dict[str, str]]:
    """A copy of block whose defined values (args and results, nested too) have new names."""
    mapping: dict[str, str] = {}

    def define(name: str) -> str:
        mapping[name] = f"{prefix}{next(counter)}"
        return mapping[name]

    def rec(b: Block) -> Block:
        args = tuple(define(a) for a in b.args)
        ops = []
        for op in b.ops:
            regions = tuple(rec(x) for x in op.regions)
            results = tuple(define(x) for x in op.results)
            ops.append(replace(op, results=results, regions=regions, attrs=copy.copy(op.attrs)))
        return Block(args, b.arg_types, ops, b.returns)

    fresh = rec(block)
    return substitute(fresh, mapping), mapping
