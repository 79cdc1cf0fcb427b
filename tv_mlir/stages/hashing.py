"""A canonical hash of a stage pair: equal for stages that are the same computation up to
the names of values (the 126 layers of a model, each reading its own weights). Op names,
attributes (constants by their bytes), types, shardings, the order of inputs and outputs
and the module attributes that fix the device count go in; SSA names and source
locations do not."""
from __future__ import annotations

import hashlib

from tv_mlir.ir import Block, Module
from tv_mlir.passes.normalize import attr_key


def _block(block: Block, names: dict[str, str], out: list[str]) -> None:
    for a, t in zip(block.args, block.arg_types):
        names[a] = f"v{len(names)}"
        out.append(f"arg {names[a]} {t}")
    for op in block.ops:
        operands = " ".join(names.get(o, f"?{o}") for o in op.operands)
        for r in op.results:
            names[r] = f"v{len(names)}"
        attrs = repr(attr_key({k: v for k, v in op.attrs.items() if k != "loc"}))
        out.append(f"{' '.join(names[r] for r in op.results)} = {op.name}({operands}) {attrs} : "
                   f"{' '.join(str(t) for t in op.result_types)}")
        for region in op.regions:
            out.append("{")
            _block(region, dict(names), out)
            out.append("}")
    out.append("return " + " ".join(names.get(r, f"?{r}") for r in block.returns))


def module_text(m: Module) -> str:
    out = [f"devices {m.num_partitions} {m.num_replicas} per_device={m.per_device}"]
    out += [f"in {repr(attr_key(s))}" for s in m.arg_shardings]
    out += [f"out {repr(attr_key(s))}" for s in m.result_shardings]
    _block(m.main.body, {}, out)
    # Functions the entry calls (a pipeline without `inline`): an op names its callee, and
    # two callees of one name in two programs are two computations, so their bodies go in.
    for name in _callees(m):
        f = m.funcs[name]
        out.append(f"func {name} -> {' '.join(str(t) for t in f.result_types)} {{")
        _block(f.body, {}, out)
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
    for part in (module_text(ref), module_text(other), context):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()
