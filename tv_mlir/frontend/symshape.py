"""Instantiate shape-polymorphic StableHLO at concrete sizes.

`jax.export` with `jax.export.symbolic_shape(...)` writes modules whose entry function
takes `tensor<?x8xf32>` and whose body computes shapes at run time
(`get_dimension_size`, `dynamic_broadcast_in_dim`, `dynamic_iota`, `dynamic_reshape`,
private functions taking dimension variables as `jax.global_constant` arguments) and
checks the user's shape constraints with `custom_call @shape_assertion`. The rest of
the verifier needs static shapes, so such a module is first instantiated: every `?` of
the entry arguments gets a concrete size and the whole module is refined to static
shapes.

The refinement itself is jax's own, the one jax runs before compiling an exported
module (`jax._src.interpreters.mlir.refine_polymorphic_shapes`, which calls
`jaxlib._jax.mlir.refine_polymorphic_shapes`): it specializes the private functions
for the dimension values, folds the shape computations, evaluates the shape
assertions and checks that nothing dynamic is left. Reusing it means the instantiated
module is what XLA would have compiled for those sizes.

As jax does when it calls an exported module, the static arguments enter through a
`stablehlo.convert` to the old dynamic type, so the body stays well typed until the
refinement rewrites it; the identity conversions left afterwards are removed.

Failing shape assertions are input errors (`UsageError`, the assertion's own message);
anything else the refinement rejects is `Unsupported` (op "dynamic-shape").
"""
from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

from tv_mlir.errors import Unsupported, UsageError
from tv_mlir.frontend.read import Source, asm_text, entry_func, parse_mlir, short_loc

# (entry argument index, dimension index)
Dim = tuple[int, int]

_UNSUPPORTED_OP = "dynamic-shape"
_ASSERTION_TARGET = "shape_assertion"
# Dimension sizes are i32 in jax's shape computations (`get_dimension_size`).
_MAX_SIZE = 2**31 - 1


def dynamic_dims(text: bytes, name: str = "<input>") -> list[Dim]:
    """The (argument index, dim) pairs of the entry function whose size is `?`."""
    ctx, module = parse_mlir(Source(text, name))
    with ctx:
        return _dynamic_dims_of(entry_func(module, name), name)


def instantiate(text: bytes, sizes: Mapping[Dim, int], name: str) -> bytes:
    """The module with every dynamic entry dim set to `sizes[(arg, dim)]` and all shapes
    refined to static ones, as MLIR text with debug locations."""
    from jaxlib.mlir import ir

    ctx, module = parse_mlir(Source(text, name))
    with ctx:
        entry = entry_func(module, name)
        _check_sizes(_dynamic_dims_of(entry, name), sizes, name)
        with ir.Location.unknown():
            _make_entry_static(entry, sizes)
        static = _to_bytecode(module)
        shardy = _uses_shardy(module)
        try:
            refined = _refine(static, shardy, validate=True)
        except _RefinementError as exc:
            raise _classify_failure(str(exc), static, shardy, name) from None
        result = ir.Module.parse(refined)
        _drop_identity_converts(entry_func(result, name))
        return asm_text(result).encode()


# ---------------------------------------------------------------------------
# Entry function and its dynamic dims


def _arg_types(func: Any) -> list[Any]:
    from jaxlib.mlir import ir

    return list(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs)


def _dynamic_dims_of(func: Any, name: str) -> list[Dim]:
    from jaxlib.mlir import ir

    dims: list[Dim] = []
    for i, t in enumerate(_arg_types(func)):
        if isinstance(t, ir.UnrankedTensorType):
            raise Unsupported(f"{name}: entry argument {i} has unranked type {t}",
                              short_loc(func.location, name), _UNSUPPORTED_OP)
        if isinstance(t, ir.RankedTensorType):
            dims.extend((i, d) for d in range(t.rank) if t.is_dynamic_dim(d))
    return dims


def _describe(dim: Dim) -> str:
    return f"argument {dim[0]} dim {dim[1]}"


def _check_sizes(dynamic: list[Dim], sizes: Mapping[Dim, int], name: str) -> None:
    missing = [d for d in dynamic if d not in sizes]
    if missing:
        raise UsageError(f"{name}: no size given for {', '.join(map(_describe, missing))}")
    extra = [d for d in sizes if d not in dynamic]
    if extra:
        raise UsageError(f"{name}: {', '.join(map(_describe, extra))} is not a dynamic dimension "
                         f"of the entry function")
    for d in dynamic:
        n = sizes[d]
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _MAX_SIZE:
            raise UsageError(f"{name}: size {n!r} for {_describe(d)} is not an integer in [0, {_MAX_SIZE}]")


# ---------------------------------------------------------------------------
# Rewriting the entry signature


def _static_type(t: Any, arg: int, sizes: Mapping[Dim, int]) -> Any:
    from jaxlib.mlir import ir

    shape = [sizes[(arg, d)] if t.is_dynamic_dim(d) else t.get_dim_size(d) for d in range(t.rank)]
    # A bounds encoding belongs to dynamic dims only; the static type has none.
    return ir.RankedTensorType.get(shape, t.element_type)


def _make_entry_static(func: Any, sizes: Mapping[Dim, int]) -> None:
    """Give the entry arguments static types; each enters the unchanged body through a
    `stablehlo.convert` back to its dynamic type (refinement then folds it away)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    block = func.regions[0].blocks[0]
    new_inputs = []
    for i, t in enumerate(_arg_types(func)):
        if not (isinstance(t, ir.RankedTensorType) and not t.has_static_shape):
            new_inputs.append(t)
            continue
        static = _static_type(t, i, sizes)
        arg = block.arguments[i]
        with ir.InsertionPoint.at_block_begin(block), arg.location:
            conv = stablehlo.ConvertOp(t, arg)
        arg.replace_all_uses_except(conv.result, conv.operation)
        arg.set_type(static)
        new_inputs.append(static)
    old = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, old.results))


def _drop_identity_converts(func: Any) -> None:
    """Remove `stablehlo.convert` ops of entry arguments whose result type equals the
    argument's type (what is left of the conversions `_make_entry_static` added)."""
    from jaxlib.mlir import ir

    block = func.regions[0].blocks[0]
    for op in list(block.operations):
        o = op.operation
        if o.name != "stablehlo.convert" or len(o.operands) != 1:
            continue
        src = o.operands[0]
        if isinstance(src, ir.BlockArgument) and src.owner == block and src.type == o.results[0].type:
            o.results[0].replace_all_uses_with(src)
            o.erase()


# ---------------------------------------------------------------------------
# Refinement


def _to_bytecode(module: Any) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def _uses_shardy(module: Any) -> bool:
    """Whether the module carries Shardy ops or attributes (jax refines with its
    partitioner setting; a module says which one it was written for)."""
    found = False

    def visit(op: Any) -> Any:
        nonlocal found
        from jaxlib.mlir import ir

        o = op.operation
        if o.name.startswith("sdy.") or any(a.startswith("sdy.") for a in o.attributes):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _assertion_messages(module: Any) -> list[str]:
    """The `error_message` templates of the module's shape assertions."""
    from jaxlib.mlir import ir

    messages: list[str] = []

    def visit(op: Any) -> Any:
        o = op.operation
        if _is_assertion(o) and "error_message" in o.attributes:
            messages.append(ir.StringAttr(o.attributes["error_message"]).value)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return messages


class _RefinementError(Exception):
    """jax's refinement failed; the text holds its MLIR diagnostics."""


def _refine(bytecode: bytes, shardy: bool, validate: bool) -> bytes:
    """jax's shape refinement with shape assertions enabled; `validate`: require that no
    dynamic shape is left."""
    from jaxlib._jax import mlir as xla_mlir

    try:
        return xla_mlir.refine_polymorphic_shapes(
            bytecode, enable_shape_assertions=True, validate_static_shapes=validate,
            enable_shardy=shardy)
    except Exception as exc:  # a C++ status error (JaxRuntimeError) with MLIR diagnostics
        raise _RefinementError(str(exc)) from None


def _classify_failure(text: str, static: bytes, shardy: bool, name: str) -> Exception:
    """A failing shape assertion becomes a UsageError, anything else Unsupported.

    The refinement may trip over an inconsistent shape (a reshape of 7 elements into
    pairs) before it evaluates the assertion that forbids that size, so when the failure
    is not an assertion the assertions are evaluated once more on their own."""
    from jaxlib.mlir import ir

    module = ir.Module.parse(static)
    templates = _assertion_messages(module)
    failed = _failed_assertion(text, templates)
    if failed is None and templates:
        _keep_only_assertions(entry_func(module, name))
        try:
            _refine(_to_bytecode(module), shardy, validate=False)
        except _RefinementError as exc:
            failed = _failed_assertion(str(exc), templates)
    if failed is not None:
        return UsageError(f"{name}: shape assertion failed: {failed}")
    loc, message = _first_error(text, name)
    return Unsupported(f"{name}: shape refinement failed: {message}", loc, _UNSUPPORTED_OP)


def _failed_assertion(text: str, templates: list[str]) -> str | None:
    """The instantiated message of the shape assertion that `text` reports, if any."""
    flat = _one_line(text)
    for template in templates:
        m = _template_regex(template).search(flat)
        if m:
            return m.group(0)
    return None


def _template_regex(template: str) -> re.Pattern[str]:
    """A shape assertion's message with its `{N}` placeholders filled by integers."""
    parts = re.split(r"\{\d+\}", template)
    return re.compile(r"-?\d+".join(re.escape(re.sub(r"\s+", " ", p)) for p in parts))


def _keep_only_assertions(func: Any) -> None:
    """Reduce the entry function to its shape assertions and what they depend on; it
    returns nothing afterwards."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func as func_d

    block = func.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    needed = _assertion_slice(ops)
    terminator = ops[-1]
    with ir.InsertionPoint(terminator), terminator.location:
        func_d.ReturnOp([])
    terminator.erase()
    for o in reversed(ops[:-1]):
        if o not in needed:
            o.erase()
    old = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(old.inputs, []))
    if "res_attrs" in func.attributes:
        del func.attributes["res_attrs"]


def _assertion_slice(ops: list[Any]) -> list[Any]:
    """The ops of one block that the shape assertions among them (transitively) use."""
    from jaxlib.mlir import ir

    position = {op: i for i, op in enumerate(ops)}
    keep = {i for i, o in enumerate(ops) if _is_assertion(o)}
    work = sorted(keep)
    while work:
        o = ops[work.pop()]
        for operand in _operands_within(o):
            if isinstance(operand, ir.OpResult):
                j = position.get(operand.owner)
                if j is not None and j not in keep:
                    keep.add(j)
                    work.append(j)
    return [ops[i] for i in sorted(keep)]


def _operands_within(op: Any) -> list[Any]:
    """Operands of `op` and of every op nested in its regions."""
    values: list[Any] = []

    def visit(o: Any) -> Any:
        from jaxlib.mlir import ir

        values.extend(o.operation.operands)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return values


def _is_assertion(op: Any) -> bool:
    from jaxlib.mlir import ir

    return (op.name == "stablehlo.custom_call"
            and ir.StringAttr(op.attributes["call_target_name"]).value == _ASSERTION_TARGET)


def _first_error(text: str, name: str) -> tuple[str | None, str]:
    """(location, message) of the first `error:` diagnostic in jax's exception text.
    Diagnostics read `FILE:LINE:COL: error: MSG`, or `<unknown>:0: error: loc(...): MSG`
    for named locations; a module parsed from text has FILE `-`."""
    for line in text.splitlines():
        head, sep, rest = line.partition(": error: ")
        if not sep:
            continue
        where = head.rsplit(": ", 1)[-1].strip()
        loc = None if where.startswith("<unknown>") else re.sub(r"^-:", f"{name}:", where)
        rest = rest.strip()
        if rest.startswith("loc("):
            end = _matching_paren(rest, len("loc"))
            if end > 0:
                return rest[:end + 1], _one_line(rest[end + 1:].lstrip(": "))
        return loc, _one_line(rest)
    return None, _one_line(text)[:500]


def _matching_paren(text: str, start: int) -> int:
    """Index of the `)` closing the `(` at `start`, skipping quoted strings; -1 if none."""
    depth, quoted, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if quoted:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                quoted = False
            continue
        if c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _one_line(text: str) -> str:
    return " ".join(text.split())
