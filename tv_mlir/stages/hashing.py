"""A canonical hash of a stage pair: equal for stages that are the same computation up to
the names of values (the 126 layers of a model, each reading its own weights). Op names,
attributes (constants by their bytes), types, shardings, the order of inputs and outputs
and the module attributes that fix the device count go in; SSA names and source
locations do not.

A stage's hash (`stage_hash`, canonical=True) also leaves out what does not change the
computation but differs from layer to layer of an XLA-partitioned program:
- a collective's channel number: the semantics read only whether it is positive (across
  partitions, else across replicas: `execute.spmd._channel`), and XLA numbers every
  collective's channel apart, so each layer's copy of a stage hashed apart;
- where the ops that read no argument (constants, their broadcasts) stand: a stage copies
  them in at their places in the program, which differ between layers' copies of a stage.
  They are written right before their first user (`_consts_late`; what an op's regions read
  counts as its use), one topological order of the same ops, so equal text is still the
  same computation: every value is written before anything names it."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from tv_mlir.ir import Block, Module, Op
from tv_mlir.passes.normalize import attr_key
from tv_mlir.stages.plan import region_uses

_HANDLE = re.compile(r"handle\s*=\s*(-?\d+)")


def _channel_kind(handle: Any) -> str:
    """What the semantics read of a channel handle: whether its number is positive."""
    m = _HANDLE.search(str(handle))
    return "channel>0" if m and int(m.group(1)) > 0 else f"channel {handle}" if not m else "channel<=0"


def _block(block: Block, names: dict[str, str], out: list[str], canonical: bool = False) -> None:
    for a, t in zip(block.args, block.arg_types):
        names[a] = f"v{len(names)}"
        out.append(f"arg {names[a]} {t}")
    for op in (_consts_late(block) if canonical else block.ops):
        operands = " ".join(names.get(o, f"?{o}") for o in op.operands)
        for r in op.results:
            names[r] = f"v{len(names)}"
        attrs = repr(attr_key({k: _channel_kind(v) if canonical and k == "channel_handle" else v
                               for k, v in op.attrs.items() if k != "loc"}))
        out.append(f"{' '.join(names[r] for r in op.results)} = {op.name}({operands}) {attrs} : "
                   f"{' '.join(str(t) for t in op.result_types)}")
        for region in op.regions:
            out.append("{")
            _block(region, dict(names), out, canonical)
            out.append("}")
    out.append("return " + " ".join(names.get(r, f"?{r}") for r in block.returns))


def _consts_late(block: Block) -> list[Op]:
    """The block's ops with each op that reads no block argument, directly or through such
    ops (and has no region), moved right before its first user, an operand's or a region's
    (or to the end, when only the block returns it or nothing reads it): a topological
    order of the same ops."""
    const: dict[str, Op] = {}
    for op in block.ops:
        if not op.regions and op.results and all(o in const for o in op.operands):
            const.update((r, op) for r in op.results)
    placed: set[int] = set()
    ops: list[Op] = []

    def place(op: Op) -> None:
        if id(op) in placed:
            return
        placed.add(id(op))
        # What its regions read too: a constant only a region reads was placed after the
        # op, so the region named it by its SSA name (`?%1`), which says nothing of which
        # constant it is; two stages that swapped two such constants' names hashed alike
        # and shared one proof (red team 11, docs/stages.md).
        for o in region_uses(op):
            if o in const:
                place(const[o])
        ops.append(op)

    for op in block.ops:
        if not (op.results and op.results[0] in const):
            place(op)
    for op in block.ops:  # returned or unread: after every other op, in program order
        place(op)
    return ops


def module_text(m: Module, canonical: bool = False) -> str:
    """The module's text without SSA names or locations; `canonical`: also without what
    the computation does not depend on (see the module docstring)."""
    out = [f"devices {m.num_partitions} {m.num_replicas} per_device={m.per_device}"]
    out += [f"in {repr(attr_key(s))}" for s in m.arg_shardings]
    out += [f"out {repr(attr_key(s))}" for s in m.result_shardings]
    _block(m.main.body, {}, out, canonical)
    # Functions the entry calls (a pipeline without `inline`): an op names its callee, and
    # two callees of one name in two programs are two computations, so their bodies go in.
    for name in _callees(m):
        f = m.funcs[name]
        # repr: a function's name is the user's and may hold a newline or a `}`.
        out.append(f"func {name!r} -> {' '.join(str(t) for t in f.result_types)} {{")
        _block(f.body, {}, out, canonical)
        out.append("}")
    return "\n".join(out)


def _callees(m: Module) -> list[str]:
    """The functions other than the entry that the entry reaches through ops' attributes
    (func.call's callee, a composite's decomposition), in order of first reach."""
    seen: dict[str, None] = {}
    stack = [m.main]
    while stack:
        f = stack.pop()
        for op in f.body.walk():
            for v in op.attrs.values():
                if isinstance(v, str) and v in m.funcs and v != m.entry and v not in seen:
                    seen[v] = None
                    stack.append(m.funcs[v])
    return list(seen)


def stage_hash(ref: Module, other: Module, context: str = "") -> str:
    """sha256 of both programs' canonical text and `context` (what else the proof depends on)."""
    h = hashlib.sha256()
    for part in (module_text(ref, canonical=True), module_text(other, canonical=True), context):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()
