"""chlo ops expanded the way XLA expands them.

XLA's partitioned module (what the devices run) has no chlo: erfc arrives as XLA's rational
approximation in plain StableHLO arithmetic, while the single-device lowering still holds
`chlo.erfc`, an uninterpreted function here. Those cannot be proved equal, and should not
be: the question is whether the devices compute what XLA computes for the reference, and
XLA computes the reference's erfc with the same expansion. So, for a pair, a chlo op that
one program holds and the other lacks, and that XLA rewrites away, is replaced in the
first by XLA's own expansion (`frontend.xla_legalize`); both programs then hold the same
ops. This is sound: it is what XLA runs for that op (a counterexample is still replayed on
XLA, which expands the op in the same way).

`legalize-chlo` is also a pass a pipeline file can name: it expands every chlo op XLA
rewrites away, whatever the other program holds."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from tv_mlir.errors import TvError
from tv_mlir.frontend.xla_legalize import legalized
from tv_mlir.ir import Block, Func, Module, Op, TensorType
from tv_mlir.passes.rename import fresh_copy, fresh_counter, substitute

PREFIX = "chlo."
_Key = tuple[str, tuple[TensorType, ...], TensorType]


def legalize_chlo(module: Module) -> Module:
    """Every chlo op XLA rewrites away replaced by XLA's expansion of it."""
    return _Legalizer(None).module(module)


def align_pair(ref: Module, other: Module) -> None:
    """Expand, in each program, the chlo ops the other one does not hold (XLA rewrote them,
    or the program never had them), so both hold the same ops. Edits the modules' function
    tables in place: the pair's modules are the verifier's own copies (the passes copy)."""
    for a, b in ((ref, other), (other, ref)):
        names = frozenset(n for n in op_names(a) if n.startswith(PREFIX)) - op_names(b)
        if names:
            a.funcs = _Legalizer(names).module(a).funcs


def op_names(module: Module) -> frozenset[str]:
    return frozenset(op.name for f in module.funcs.values() for op in f.body.walk())


# The prefix of the values an expansion defines.
EXPANDED = "%xla_chlo"


@dataclass
class _Legalizer:
    names: frozenset[str] | None  # the chlo ops to expand; None: all of them
    cache: dict[_Key, Func | None] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=itertools.count)

    def module(self, module: Module) -> Module:
        if not any(self.wanted(op) for f in module.funcs.values() for op in f.body.walk()):
            return module
        # Names this module does not hold: `verify` expands a pair's one-sided chlo ops
        # first, and a pipeline's legalize-chlo the rest later (rename.fresh_counter).
        self.counter = fresh_counter(module, EXPANDED)
        funcs = {name: replace(f, body=self.block(f.body, {})) for name, f in module.funcs.items()}
        return replace(module, funcs=funcs)

    def wanted(self, op: Op) -> bool:
        return op.name.startswith(PREFIX) and (self.names is None or op.name in self.names)

    def block(self, block: Block, types: dict[str, TensorType]) -> Block:
        """`block` with its wanted chlo ops expanded; `types`: the values defined around it."""
        types = {**types, **dict(zip(block.args, block.arg_types))}
        ops: list[Op] = []
        mapping: dict[str, str] = {}
        for op in block.ops:
            body = self.expansion(op, types) if self.wanted(op) else None
            if body is None:
                ops.append(replace(op, regions=tuple(self.block(r, types) for r in op.regions)))
            else:
                fresh, _ = fresh_copy(body, EXPANDED, self.counter)
                fresh = substitute(fresh, dict(zip(fresh.args, op.operands)))
                # The expansion's ops point at the chlo op they replace.
                ops.extend(replace(o, loc=op.loc) for o in fresh.ops)
                mapping.update(zip(op.results, fresh.returns))
            types.update(zip(op.results, op.result_types))
        return substitute(replace(block, ops=ops), mapping)

    def expansion(self, op: Op, types: dict[str, TensorType]) -> Block | None:
        """XLA's expansion of `op` as a block over its operands, or None when it is kept: an
        op with attributes or regions (not one this pass rebuilds), or one XLA keeps or
        refuses."""
        if op.attrs or op.regions or len(op.results) != 1 or any(o not in types for o in op.operands):
            return None
        key = (op.name, tuple(types[o] for o in op.operands), op.result_types[0])
        if key not in self.cache:
            self.cache[key] = _xla_expansion(*key)
        func = self.cache[key]
        return None if func is None else func.body


def _xla_expansion(name: str, operand_types: tuple[TensorType, ...], result_type: TensorType) -> Func | None:
    from tv_mlir.passes.normalize import inline

    try:
        module = inline(legalized(name, operand_types, result_type))
    except TvError:
        return None
    main = module.main
    if name in op_names(module) or any(op.name in ("func.call", "stablehlo.composite") for op in main.body.walk()):
        return None
    return main
