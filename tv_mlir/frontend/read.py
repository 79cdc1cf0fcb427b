"""Reads StableHLO (text or bytecode) with jaxlib's MLIR bindings and converts it at once
into the plain-data IR of `tv_mlir.ir`. The verifier works on that IR only; MLIR objects
are touched elsewhere just where MLIR itself is the point: shape instantiation
(`frontend.symshape`), the shrink rewrite (`shrink.rewrite`), XLA runs (`execute.xla`) and
`check-pass`."""
from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

import numpy as np

from tv_mlir import ir as tir
from tv_mlir.dtypes import Lazy, ml_dtype
from tv_mlir.errors import ParseError, Unsupported, UsageError
from tv_mlir.frontend import ui64_ranges
from tv_mlir.options import DEFAULT_MAX_INPUT_BYTES, MAX_BRACKET_DEPTH, MAX_NESTING, MAX_OPS

BYTECODE_MAGIC = b"ML\xefR"
MODULE_SUFFIXES = (".mlir", ".mlirbc")

# What `read_source` reads a module from (see there); anything else is a UsageError.
SourceSpec = str | bytes | bytearray | memoryview | os.PathLike[str] | IO[str] | IO[bytes]


@dataclass
class Source:
    """Module bytes plus the name used in messages."""

    data: bytes
    name: str


def read_source(spec: object, name: str | None = None, limit: int = DEFAULT_MAX_INPUT_BYTES) -> Source:
    """The module's bytes. `spec`: a path (`pathlib.Path` or any `os.PathLike`: always a
    file), '-' for stdin, bytes/bytearray/memoryview (module text or bytecode), a text or
    binary stream (read to its end), or a str: a file when it names an existing one, MLIR
    text when it holds a newline or a '{' (every module has a body), and otherwise a file
    that is missing. Files, streams and stdin over `limit` bytes are refused unread (a
    regular file by its size; a stream, pipe or device after `limit` + 1 bytes).
    Raises UsageError for anything else."""
    if isinstance(spec, bytes | bytearray | memoryview):
        return Source(bytes(spec), name or "<bytes>")
    if isinstance(spec, os.PathLike):
        path = os.fsdecode(spec)
        return Source(_read_file(path, limit), name or path)
    if isinstance(spec, str):
        if spec == "-":
            return Source(_read_stdin(limit), name or "<stdin>")
        if os.path.exists(spec):  # False, not an error, for a NUL or text longer than a path
            return Source(_read_file(spec, limit), name or spec)
        if _is_mlir_text(spec):
            return Source(spec.encode("utf-8", "surrogateescape"), name or "<text>")
        raise UsageError(f"no such file: {spec}")
    if callable(getattr(spec, "read", None)):
        stream_name = getattr(spec, "name", None)
        what = name or (stream_name if isinstance(stream_name, str) else "<stream>")
        return Source(_read_stream(spec, limit, what), what)
    raise UsageError(f"cannot read a module from {type(spec).__name__}: give a path, MLIR text, bytes or a stream")


def _is_mlir_text(spec: str) -> bool:
    """A str that is not an existing file is taken as MLIR text only when it cannot be a
    path: it has a newline or a '{' and does not end in a module file's suffix. So a
    mistyped `modul_a.mlir` says 'no such file' instead of a parse error about a dialect."""
    if "\n" not in spec and spec.rstrip().endswith(MODULE_SUFFIXES):
        return False
    return "\n" in spec or "{" in spec


def _too_large(what: str, limit: int) -> UsageError:
    return UsageError(f"{what}: larger than the input limit of {_size(limit)} "
                      f"(raise it with --max-input-mb or TV_MLIR_MAX_INPUT_MB)")


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n} bytes"


def _read_file(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise _too_large(path, limit)
            data = f.read(limit + 1)  # a device (/dev/zero) or a pipe has no size to check
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise _too_large(path, limit)
    return data


def _read_stdin(limit: int) -> bytes:
    if sys.stdin is None:  # started with stdin closed (<&-)
        raise UsageError("cannot read <stdin>: it is closed")
    return _read_stream(sys.stdin.buffer, limit, "<stdin>")


def _read_stream(stream: Any, limit: int, what: str = "<stream>") -> bytes:
    """At most `limit` + 1 characters or bytes, so that an endless stream is refused."""
    try:
        data = stream.read(limit + 1)
    except UnicodeDecodeError:
        raise UsageError(f"{what}: not UTF-8 text") from None
    except (OSError, ValueError) as exc:  # ValueError: a closed file
        raise UsageError(f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}") from None
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise UsageError(f"{what}: read() gave {type(data).__name__}, not str or bytes")
    if len(data) > limit:
        raise _too_large(what, limit)
    return bytes(data)


def mlir_context():
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    ctx = ir.Context()
    ctx.append_dialect_registry(registry)
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)
    # XLA's partitioner output, converted to StableHLO, still holds mhlo.copy ops.
    mhlo.register_mhlo_dialect(ctx)
    # No load_all_available_dialects: the parser loads a registered dialect when it meets
    # it, and loading every one costs 2.8 of the 3.7 ms a context takes (four per verify).
    return ctx


def parse_mlir(source: Source, ctx: Any = None):
    """Parse into an MLIR module; returns (context, module). Errors become ParseError.
    `ctx`: a context from `mlir_context()` to parse into (a fresh one costs ~13 ms, which a
    caller reading a thousand files, the census, pays once per batch instead)."""
    from jaxlib.mlir import ir

    data = source.data
    if not data.strip():
        raise ParseError(f"{source.name}: empty input, expected a StableHLO module")
    payload: str | bytes
    if data.startswith(BYTECODE_MAGIC):
        payload = data
    else:
        try:
            payload = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError(f"{source.name}: neither MLIR text (not UTF-8) nor MLIR bytecode") from None
        if "\x00" in payload:
            raise ParseError(f"{source.name}: binary data, neither MLIR text nor MLIR bytecode")
    if isinstance(payload, str):
        check_brackets(payload, source.name)
    ctx = ctx if ctx is not None else mlir_context()
    with ctx:
        try:
            module = ir.Module.parse(payload)
        except ir.MLIRError as exc:
            raise ParseError(_first_diagnostic(str(exc), source.name)) from None
        except Exception as exc:  # the bindings raise plain errors for some bytecode faults
            raise ParseError(f"{source.name}: {' '.join(str(exc).split())[:300]}") from None
        if isinstance(payload, bytes):
            # The bytecode reader does not recurse, but MLIR's printer and our walks do.
            _check_region_nesting(module, source.name)
    return ctx, module


# MLIR string literals and line comments: brackets inside them do not nest anything.
_STRINGS_AND_COMMENTS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*')
_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[[ord(c) for c in "{([<"]] = 1
_BRACKET_STEP[[ord(c) for c in "})]>"]] = -1
_BRACKET_CHUNK = 1 << 22


def check_brackets(text: str, name: str, limit: int = MAX_BRACKET_DEPTH) -> None:
    """Refuse text whose brackets ({ ( [ <, outside strings and comments) nest deeper than
    `limit` before jaxlib's parser sees it: the parser recurses once per level and a few
    thousand levels overflow the C stack (a segfault, not an error). Vectorised: a 64 MiB
    module takes about 1.5 s, a fifth of its parse."""
    data = _STRINGS_AND_COMMENTS.sub(" ", text).encode("utf-8", "surrogateescape")
    codes = np.frombuffer(data, dtype=np.uint8)
    steps = _BRACKET_STEP[codes]
    arrows = np.flatnonzero((codes[1:] == ord(">")) & (codes[:-1] == ord("-"))) + 1
    steps[arrows] = 0  # `->` is an arrow, not a closing bracket
    depth = 0
    for start in range(0, len(steps), _BRACKET_CHUNK):  # int64 sums, a chunk at a time
        levels = depth + np.cumsum(steps[start:start + _BRACKET_CHUNK], dtype=np.int64)
        deep = np.flatnonzero(levels > limit)
        if deep.size:
            line = data.count(b"\n", 0, start + int(deep[0])) + 1
            raise Unsupported(f"brackets nested deeper than {limit} (the nesting budget: jaxlib's "
                              "MLIR parser recurses per level and would overflow its stack)",
                              f"{name}:{line}", "budget.nesting")
        if levels.size:
            depth = int(levels[-1])


def _check_region_nesting(module: Any, name: str) -> None:
    """Refuse a parsed module whose regions nest deeper than MAX_NESTING (walked with an
    explicit stack: bytecode may nest far deeper than any recursion can follow)."""
    stack = [(module.body, -1)]  # function bodies at 0, as the converter counts
    while stack:
        block, depth = stack.pop()
        for op in block.operations:
            for region in op.operation.regions:
                if depth + 1 > MAX_NESTING:
                    raise _too_deep(short_loc(op.operation.location, name))
                stack.extend((b, depth + 1) for b in region.blocks)


def _too_deep(loc: str) -> Unsupported:
    return Unsupported(f"regions nested deeper than {MAX_NESTING} (the nesting budget)", loc, "budget.nesting")


def _first_diagnostic(text: str, name: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("error:"):
            msg = ln[len("error:"):].strip()
            return f"{name}:{msg[4:]}" if msg.startswith('"-":') else f"{name}: {msg}"
    return f"{name}: {lines[-1] if lines else 'unparseable module'}"


def load_module(spec: SourceSpec, name: str | None = None) -> tir.Module:
    return load_module_mlir(spec, name).module


@dataclass
class Loaded:
    """A module converted to `tv_mlir.ir` that keeps its MLIR objects alive, with the
    MLIR value behind every SSA name, for passes that edit the MLIR itself (shrinking)."""

    module: tir.Module
    context: Any
    mlir: Any
    values: dict[str, Any]


def load_module_mlir(spec: SourceSpec, name: str | None = None) -> Loaded:
    source = read_source(spec, name)
    ctx, module = parse_mlir(source)
    with ctx:
        dropped = drop_round_trip_annotations(module)
        conv = _Converter(source.name)
        converted = conv.module(module)
        values = {n: v for v, n in conv.names.items()}
        if conv.round_trips:
            untuple_round_trips(module, conv, values)
        if dropped or conv.round_trips:
            # What XLA runs too (the full-size check, replays at the original sizes): XLA's
            # partitioner refuses the xla.sdy calls it would meet reading the text as given.
            converted.text = module.operation.get_asm(enable_debug_info=True).encode()
            return Loaded(converted, ctx, module, values)
    converted.text = source.data
    return Loaded(converted, ctx, module, values)


@dataclass
class _RoundTrip:
    """One manual computation read from Shardy's HLO round-trip form: the body call, its
    GlobalToLocalShape and LocalToGlobalShape (None when the body has no results), the
    GlobalToLocalShape part each call operand is, the LocalToGlobalShape operand each call
    result is, the names the converter gave the manual computation's results, and the
    body function."""

    call: Any
    enter: Any
    leave: Any
    in_parts: list[int]
    out_parts: list[int]
    results: list[str]
    body_fn: Any


# Shardy's round-trip annotations that carry no value of their own: a value identity each
# (the result sharding of @main, a sharding constraint, a propagation barrier) or, for
# ShardingGroup, no result at all. XLA's import of the round-trip form turns them into
# attributes and sdy ops; its partitioner refuses them as custom calls.
ROUND_TRIP_IDENTITIES = ("xla.sdy.FuncResultSharding", "xla.sdy.Sharding", "xla.sdy.PropagationBarrier")


def drop_round_trip_annotations(module: Any) -> int:
    """In a module in Shardy's round-trip form (it has `xla.sdy.meshes`), remove the
    annotation calls that do not change values: each identity's uses read its operand, and a
    ShardingGroup without results is erased. Returns how many were removed."""
    from jaxlib.mlir import ir

    attrs = module.operation.attributes
    front = attrs["mhlo.frontend_attributes"] if "mhlo.frontend_attributes" in attrs else None
    if front is None or "xla.sdy.meshes" not in ir.DictAttr(front):
        return 0
    found: list[Any] = []

    def visit(block: Any) -> None:
        for op in block.operations:
            o = op.operation
            for region in o.regions:
                for b in region.blocks:
                    visit(b)
            target = _call_target(o)
            if target in ROUND_TRIP_IDENTITIES and len(o.operands) == 1 and len(o.results) == 1 \
                    and o.operands[0].type == o.results[0].type:
                found.append(o)
            elif target == "xla.sdy.ShardingGroup" and all(
                    isinstance(r.type, ir.TupleType) and r.type.num_types == 0 and not list(r.uses) for r in o.results):
                found.append(o)

    visit(module.body)
    for o in found:
        if len(o.results) == 1 and len(o.operands) == 1 and not isinstance(o.results[0].type, ir.TupleType):
            o.results[0].replace_all_uses_with(o.operands[0])
        o.erase()
    return len(found)


def _erase_with_parts(o: Any) -> None:
    """Erase an op whose only users are get_tuple_elements of its tuple result, with them."""
    from jaxlib.mlir import ir

    if isinstance(o.results[0].type, ir.TupleType):
        for u in list(o.results[0].uses):
            _owner_of_use(u).erase()
    o.erase()


def untuple_round_trips(module: Any, conv: _Converter, values: dict[str, Any]) -> None:
    """Make the MLIR what the converter read it as: each round-trip manual computation
    (GlobalToLocalShape, get_tuple_element, the body call, LocalToGlobalShape) becomes the
    `sdy.manual_computation` it encodes, the body function's block its region, and the
    round-trip meshes `sdy.mesh` ops. Passes that edit the MLIR by the converter's value
    names (the shrink rewrite) then see no tuples and no call whose types they would have
    to follow; `values` is updated to the new op's results."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import sdy

    declared = {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in module.body.operations
                if op.operation.name == "sdy.mesh"}
    first = module.body.operations[0] if len(module.body.operations) else None
    for name, attr in conv.round_trip_mesh_attrs.items():
        if name not in declared:
            if first is None:
                sdy.MeshOp(name, attr, loc=ir.Location.unknown(), ip=ir.InsertionPoint(module.body))
            else:
                sdy.MeshOp(name, attr, loc=ir.Location.unknown(), ip=ir.InsertionPoint(first))

    def per_value(o: Any, attr: str, parts: list[int]) -> Any:
        text = conv._frontend_attr(o, attr)
        shardings = list(sdy.TensorShardingPerValueAttr(ir.Attribute.parse(text)).shardings)
        return sdy.TensorShardingPerValueAttr.get([shardings[i] for i in parts])

    for rt in conv.round_trips:
        call, enter, leave = rt.call, rt.enter, rt.leave
        manual = ir.Attribute.parse(conv._frontend_attr(enter, "xla.sdy.manual_axes"))
        operands = [enter.operands[i] for i in rt.in_parts]
        rtypes = [_part_type(leave, k) for k in rt.out_parts]
        out_shardings = per_value(leave, "xla.sdy.out_shardings", rt.out_parts) if leave is not None \
            else sdy.TensorShardingPerValueAttr.get([])
        mc = sdy.ManualComputationOp(rtypes, operands, per_value(enter, "xla.sdy.in_shardings", rt.in_parts),
                                     out_shardings, manual, loc=call.location, ip=ir.InsertionPoint(call))
        block = rt.body_fn.regions[0].blocks[0]
        block.append_to(mc.regions[0])
        ret = list(block.operations)[-1]
        sdy.ReturnOp(list(ret.operands), loc=ret.location, ip=ir.InsertionPoint(ret))
        ret.operation.erase()
        results = mc.operation.results
        if leave is not None:
            parts = _tuple_parts(leave)
            for j, k in enumerate(rt.out_parts):
                if parts[k] is not None:
                    parts[k].replace_all_uses_with(results[j])
                values[rt.results[j]] = results[j]
            _erase_with_parts(leave)
        call.erase()
        _erase_with_parts(enter)
        rt.body_fn.erase()


def func_name(op: Any) -> str:
    from jaxlib.mlir import ir

    return ir.StringAttr(op.attributes["sym_name"]).value


def is_public(op: Any) -> bool:
    from jaxlib.mlir import ir

    return "sym_visibility" not in op.attributes or ir.StringAttr(op.attributes["sym_visibility"]).value == "public"


def entry_func(module: Any, name: str) -> Any:
    """The one entry-function rule (the verifier, shape instantiation and XLA replay all use
    it): the public @main, else the single public function. A private function is never the
    entry, not even a private @main: nothing outside the module can call it, and XLA drops
    it before it looks for @main."""
    funcs = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    if not funcs:
        raise ParseError(f"{name}: no func.func in the module")
    public = [f for f in funcs if is_public(f)]
    for f in public:
        if func_name(f) == "main":
            return f
    if len(public) != 1:
        raise ParseError(f"{name}: no public @main and {len(public)} public functions; cannot pick an entry")
    return public[0]


# ---------------------------------------------------------------------------
# Conversion

_LOC_NAME = re.compile(r'loc\("([^"]*)"')
_LOC_FILE = re.compile(r'"([^"]+)":(\d+):(\d+)')


def short_loc(loc: Any, source_name: str) -> str:
    """`jit(f)/dot_general @ model.py:3:17`, or `file.mlir:2:8` for hand-written text."""
    text = str(loc)
    name_match = _LOC_NAME.match(text)
    files = _LOC_FILE.findall(text)
    name = name_match.group(1) if name_match and not _LOC_FILE.match(text[4:]) else ""
    where = ""
    if files:
        f, line, col = files[0]
        where = f"{source_name if f == '-' else f}:{line}:{col}"
    if name and where:
        return f"{name} @ {where}"
    return name or where or source_name


@dataclass
class _Converter:
    source_name: str
    names: dict[Any, str] = field(default_factory=dict)
    meshes: dict[str, tir.Mesh] = field(default_factory=dict)
    ops_read: int = 0  # against the op budget: a 64 MiB module has a million ops
    # Shardy's HLO round-trip form (`_round_trip_kind`): the module's functions by name, and
    # the manual-computation bodies read as a region (not kept as functions).
    mlir_funcs: dict[str, Any] = field(default_factory=dict)
    inlined: set[str] = field(default_factory=set)
    # Each round-trip manual computation read, for `untuple_round_trips` (the MLIR made the
    # sdy.manual_computation it was read as).
    round_trips: list[_RoundTrip] = field(default_factory=list)
    round_trip_mesh_attrs: dict[str, Any] = field(default_factory=dict)

    def name_of(self, value: Any) -> str:
        key = value
        if key not in self.names:
            self.names[key] = f"%{len(self.names)}"
        return self.names[key]

    def module(self, module: Any) -> tir.Module:
        funcs: dict[str, tir.Func] = {}
        for op in module.body.operations:
            o = op.operation
            if o.name == "sdy.mesh":
                # The symbol's value, as a sharding's reference reads it, not its printed
                # text: that escapes a quote as \22, so the mesh `m"x` was stored as `m\22x`
                # and found by a reference to the mesh named `m\22x` (`func` likewise).
                name = func_name(o)
                self.meshes[name] = self.mesh(o.attributes["mesh"], short_loc(o.location, self.source_name))
        if not self.meshes:
            self.round_trip_meshes(module)
        entry = func_name(entry_func(module, self.source_name))
        self.mlir_funcs = {func_name(op.operation): op.operation for op in module.body.operations
                           if op.operation.name == "func.func"}
        # Manual-computation bodies last: those the round-trip form calls become regions.
        ordered = sorted(self.mlir_funcs.items(), key=lambda kv: kv[0].startswith(ROUND_TRIP_BODY))
        for name, o in ordered:
            if name not in self.inlined:
                f = self.func(o)
                funcs[f.name] = f
        check_ui64(funcs)
        attrs = {k: convert_attr(v) for k, v in module.operation.attributes.items()}
        return tir.Module(funcs=funcs, entry=entry, attrs=attrs, source=self.source_name, meshes=dict(self.meshes))

    # -- shardings ------------------------------------------------------------
    def mesh(self, a: Any, loc: str) -> tir.Mesh:
        return sdy_mesh(a)

    def mesh_axes_groups(self, g: MeshAxesGroups) -> np.ndarray:
        """Replica groups named by mesh axes, as the integer groups (one row per group)
        that every other form converts to."""
        if isinstance(g.mesh, str):
            if g.mesh not in self.meshes:
                raise ParseError(f"{self.source_name}: replica groups name an unknown mesh @{g.mesh}")
            mesh = self.meshes[g.mesh]
        else:
            mesh = g.mesh
        return resolve_mesh_axes(mesh, g.axes, g.text)

    def sdy_sharding(self, a: Any, loc: str) -> tir.Sharding:
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import sdy

        t = sdy.TensorShardingAttr(a)
        ref = t.mesh_or_ref
        if isinstance(ref, ir.FlatSymbolRefAttr):
            if ref.value not in self.meshes:
                raise ParseError(f"{self.source_name}: sharding names an unknown mesh @{ref.value}", loc)
            mesh = self.meshes[ref.value]
        else:
            mesh = self.mesh(ref, loc)

        def axes(refs: Any) -> tuple[str, ...]:
            out = []
            for x in refs:
                r = sdy.AxisRefAttr(x)
                if r.sub_axis_info is not None:
                    raise Unsupported(f"sharding {a} uses a sub-axis of {r.name}", loc, "sdy.sub_axis")
                out.append(r.name)
            return tuple(out)

        dims = tuple(axes(sdy.DimensionShardingAttr(d).axes) for d in t.dimension_shardings)
        return tir.Sharding(mesh, dims, axes(t.unreduced_axes))

    def sdy_attr(self, name: str, a: Any, loc: str) -> Any:
        from jaxlib.mlir.dialects import sdy

        if name in ("in_shardings", "out_shardings"):
            return tuple(self.sdy_sharding(x, loc) for x in sdy.TensorShardingPerValueAttr(a).shardings)
        if name == "manual_axes":
            return manual_axes(a)
        if name == "sdy.sharding":
            per_value = str(a).startswith("#sdy.sharding_per_value")
            if per_value:
                return tuple(self.sdy_sharding(x, loc) for x in sdy.TensorShardingPerValueAttr(a).shardings)
            return self.sdy_sharding(a, loc)
        return convert_attr(a)

    def func(self, o: Any) -> tir.Func:
        attrs = dict(o.attributes.items())
        # The symbol's value, as a call's callee reads it: with the printed text the
        # function `a"b` was stored as `a\22b`, and a call to the function named `a\22b`
        # ran `a"b` (tests/test_hostile_names.py).
        name = func_name(o)
        public = is_public(o)
        ftype = attrs["function_type"].value
        loc = short_loc(o.location, self.source_name)
        result_types = tuple(self.tensor_type(t, loc) for t in ftype.results)
        arg_attrs = tuple(self.dict_attr(a, loc) for a in attrs["arg_attrs"]) if "arg_attrs" in attrs else ()
        res_attrs = tuple(self.dict_attr(a, loc) for a in attrs["res_attrs"]) if "res_attrs" in attrs else ()
        if not o.regions or not o.regions[0].blocks:
            raise ParseError(f"{self.source_name}: function @{name} has no body", loc)
        block = o.regions[0].blocks[0]
        body = self.block(block, loc)
        arg_names = [_arg_name(a.location, i) for i, a in enumerate(block.arguments)]
        if len(set(arg_names)) != len(arg_names):
            arg_names = [f"arg{i}" for i in range(len(arg_names))]
        return tir.Func(name, body, result_types, public, arg_attrs, res_attrs, loc, tuple(arg_names))

    def dict_attr(self, a: Any, loc: str) -> dict[str, Any]:
        if isinstance(a, str):
            return {}
        return {n.name: self.sdy_attr(n.name, n.attr, loc) if n.name.startswith("sdy.") else convert_attr(n.attr)
                for n in a}

    def block(self, block: Any, loc: str, depth: int = 0) -> tir.Block:
        """`depth`: how many regions enclose the block inside its function (the recursion
        through nested regions stops at MAX_NESTING)."""
        args = tuple(self.name_of(a) for a in block.arguments)
        arg_types = tuple(self.tensor_type(a.type, loc) for a in block.arguments)
        ops: list[tir.Op] = []
        returns: tuple[str, ...] = ()
        for op in block.operations:
            o = op.operation
            if o.name in ("func.return", "stablehlo.return", "sdy.return", "mhlo.return"):
                returns = tuple(self.name_of(v) for v in o.operands)
                continue
            kind = self._round_trip_kind(o)
            if kind == "body":
                ops.append(self.round_trip_manual_computation(o, depth))
            elif kind is None:
                ops.append(self.op(o, depth))
        return tir.Block(args, arg_types, ops, returns)

    # -- Shardy's HLO round-trip form ---------------------------------------------
    # XLA hands a Shardy module through HLO by writing `sdy.manual_computation` as
    #   %l = custom_call @xla.sdy.GlobalToLocalShape(%globals...)   (a tuple for several)
    #   %r = call @xla.sdy.manual_computation_body(get_tuple_element %l ...)
    #   %g = custom_call @xla.sdy.LocalToGlobalShape(%r...)          (a tuple for several)
    # with the in/out shardings and manual axes as strings in mhlo.frontend_attributes, and
    # the meshes in the module's `xla.sdy.meshes`; XLA's own import rebuilds the
    # manual_computation from exactly this pattern, and so does the reader. Anything else
    # using these calls is refused. `xla.sdy.ShardingGroup` (no values: a propagation hint)
    # is dropped; FuncResultSharding and PropagationBarrier are value identities
    # (semantics.ops.NOOP_CUSTOM_CALLS).

    def round_trip_meshes(self, module: Any) -> None:
        from jaxlib.mlir import ir

        attrs = module.operation.attributes
        if "mhlo.frontend_attributes" not in attrs:
            return
        fa = ir.DictAttr(attrs["mhlo.frontend_attributes"])
        if "xla.sdy.meshes" not in fa:
            return
        text = ir.StringAttr(fa["xla.sdy.meshes"]).value
        try:
            meshes = ir.DictAttr(ir.Attribute.parse(text))
        except Exception as exc:
            raise ParseError(f"{self.source_name}: xla.sdy.meshes = {text[:200]!r} is not a mesh dictionary "
                             f"({' '.join(str(exc).split())[:200]})") from None
        for named in named_attrs(meshes):
            self.meshes[named.name] = sdy_mesh(named.attr)
            self.round_trip_mesh_attrs[named.name] = named.attr

    def _round_trip_kind(self, o: Any) -> str | None:
        """'body' for the call of a manual-computation body, 'skip' for the ops that call
        reads with it (and a ShardingGroup), None for any other op."""
        from jaxlib.mlir import ir

        if o.name == "func.call":
            callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
            # Only a manual-computation body is read with the shape calls around it; any
            # other function under the prefix (XLA's partitioned modules keep per-device code
            # in @xla.sdy.inlinable_manual_computation_body.N_spmd) is an ordinary call.
            return "body" if callee.startswith(ROUND_TRIP_BODY) else None
        if o.name == "stablehlo.get_tuple_element":
            owner = _owner(o.operands[0])
            return "skip" if _call_target(owner) in (GLOBAL_TO_LOCAL, LOCAL_TO_GLOBAL) else None
        target = _call_target(o)
        if target == "xla.sdy.ShardingGroup" and all(isinstance(r.type, ir.TupleType) and r.type.num_types == 0
                                                   for r in o.results):
            return "skip"
        if target == GLOBAL_TO_LOCAL:
            # Every local value goes to a body call (which reads this op), nowhere else.
            for local in _tuple_parts(o):
                if local is not None and any(not self._is_body_call(_owner_of_use(u)) for u in local.uses):
                    raise self._not_round_trip(o, "a local value used outside a manual-computation body call")
            return "skip"
        if target == LOCAL_TO_GLOBAL:
            if any(not self._is_body_call(_owner(v)) for v in o.operands):
                raise self._not_round_trip(o, "an operand that no manual-computation body call made")
            return "skip"
        return None

    def _is_body_call(self, o: Any) -> bool:
        from jaxlib.mlir import ir

        return (o is not None and o.name == "func.call"
                and ir.FlatSymbolRefAttr(o.attributes["callee"]).value.startswith(ROUND_TRIP_BODY))

    def _not_round_trip(self, o: Any, why: str) -> Unsupported:
        return Unsupported(f"custom_call @{_call_target(o)} with {why} (not the round-trip form XLA writes for "
                           "sdy.manual_computation)", short_loc(o.location, self.source_name), "stablehlo.custom_call")

    def _frontend_attr(self, o: Any, name: str) -> str:
        from jaxlib.mlir import ir

        fa = ir.DictAttr(o.attributes["mhlo.frontend_attributes"]) if "mhlo.frontend_attributes" in o.attributes \
            else None
        if fa is None or name not in fa:
            raise self._not_round_trip(o, f"no {name}")
        return str(ir.StringAttr(fa[name]).value)

    def _round_trip_shardings(self, o: Any, name: str, loc: str) -> tuple[tir.Sharding, ...]:
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import sdy

        text = self._frontend_attr(o, name)
        try:
            per_value = sdy.TensorShardingPerValueAttr(ir.Attribute.parse(text))
        except Exception:
            raise self._not_round_trip(o, f"{name} = {text[:200]!r}, not a sharding per value") from None
        return tuple(self.sdy_sharding(x, loc) for x in per_value.shardings)

    def _round_trip_manual_axes(self, o: Any) -> tuple[str, ...]:
        from jaxlib.mlir import ir

        text = self._frontend_attr(o, "xla.sdy.manual_axes")
        try:
            return manual_axes(ir.Attribute.parse(text))
        except Exception:
            raise self._not_round_trip(o, f"xla.sdy.manual_axes = {text[:200]!r}, not manual axes") from None

    def round_trip_manual_computation(self, call: Any, depth: int) -> tir.Op:
        """The body call with its GlobalToLocalShape and LocalToGlobalShape as one
        `sdy.manual_computation` op: the globals in, the body function's block as its region,
        the globals out."""
        from jaxlib.mlir import ir

        loc = short_loc(call.location, self.source_name)
        callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
        where = f"call @{callee}"
        # In: each operand is part `index` of one GlobalToLocalShape.
        g2l = [_tuple_source(v) for v in call.operands]
        if not call.operands or any(op is None or _call_target(op) != GLOBAL_TO_LOCAL for op, _ in g2l) \
                or len({_op_key(op) for op, _ in g2l}) != 1:
            raise Unsupported(f"{where}: its operands do not all come from one xla.sdy.GlobalToLocalShape", loc,
                              "func.call")
        enter = g2l[0][0]
        in_all = self._round_trip_shardings(enter, "xla.sdy.in_shardings", loc)
        manual = self._round_trip_manual_axes(enter)
        if len(in_all) != len(list(enter.operands)):
            raise self._not_round_trip(enter, "in_shardings that do not match its operands")
        operands = tuple(self.name_of(enter.operands[i]) for _, i in g2l)
        in_shardings = tuple(in_all[i] for _, i in g2l)
        # Out: each result is operand `k` of one LocalToGlobalShape, read there (or a
        # get_tuple_element of it) as the global value.
        exits = []
        for r in call.results:
            uses = [(_owner_of_use(u), u.operand_number) for u in r.uses]
            if len(uses) != 1 or _call_target(uses[0][0]) != LOCAL_TO_GLOBAL:
                raise Unsupported(f"{where}: result {r.result_number} is not used once, by an "
                                  "xla.sdy.LocalToGlobalShape", loc, "func.call")
            exits.append(uses[0])
        if len({_op_key(op) for op, _ in exits}) > 1:
            raise Unsupported(f"{where}: its results go to more than one xla.sdy.LocalToGlobalShape", loc, "func.call")
        results: list[str] = []
        rtypes: list[tir.TensorType] = []
        out_shardings: tuple[tir.Sharding, ...] = ()
        if exits:
            leave = exits[0][0]
            out_all = self._round_trip_shardings(leave, "xla.sdy.out_shardings", loc)
            if self._round_trip_manual_axes(leave) != manual:
                raise self._not_round_trip(leave, "manual axes other than its GlobalToLocalShape's")
            if len(out_all) != len(list(leave.operands)) or len(list(leave.operands)) != len(exits):
                raise self._not_round_trip(leave, "out_shardings or operands that do not match the body's results")
            out_shardings = tuple(out_all[k] for _, k in exits)
            parts = _tuple_parts(leave)
            for _, k in exits:
                value = parts[k]
                results.append(self.name_of(value) if value is not None else f"%rt.{self.name_of(call.results[0])}.{k}")
                rtypes.append(self.tensor_type(_part_type(leave, k), loc, "stablehlo.custom_call"))
        if callee in self.inlined:
            raise Unsupported(f"{where}: the body is called twice (each call would need its own copy)", loc,
                              "func.call")
        body_fn = self.mlir_funcs.get(callee)
        if body_fn is None or not body_fn.regions or not body_fn.regions[0].blocks:
            raise ParseError(f"{self.source_name}: {where} names no function with a body", loc)
        if depth + 1 > MAX_NESTING:
            raise _too_deep(loc)
        self.inlined.add(callee)
        self.ops_read += 1
        self.round_trips.append(_RoundTrip(call, enter, exits[0][0] if exits else None, [i for _, i in g2l],
                                           [k for _, k in exits], list(results), body_fn))
        body = self.block(body_fn.regions[0].blocks[0], loc, depth + 1)
        attrs = {"in_shardings": in_shardings, "out_shardings": out_shardings, "manual_axes": manual}
        return tir.Op("sdy.manual_computation", operands, tuple(results), tuple(rtypes), attrs, (body,), loc)

    def op(self, o: Any, depth: int = 0) -> tir.Op:
        loc = short_loc(o.location, self.source_name)
        self.ops_read += 1
        if self.ops_read > MAX_OPS:
            raise Unsupported(f"{self.source_name} has over {MAX_OPS} ops (the op budget)", loc, "budget.ops")
        operands = tuple(self.name_of(v) for v in o.operands)
        results = tuple(self.name_of(r) for r in o.results)
        rtypes = tuple(self.tensor_type(r.type, loc, o.name) for r in o.results)
        try:
            if o.name == "stablehlo.constant" and rtypes and rtypes[0].dtype.startswith("complex"):
                # The bindings cannot hand a complex DenseElementsAttr to Python (touching
                # it aborts the process): the literal is read from the op's printed form.
                attrs = {"value": complex_constant(o, rtypes[0])}
            else:
                # `tv.` attributes are the reader's own notes (`tv.full_sharding` below), so
                # the module's are dropped: XLA ignores them, and the semantics would have
                # read a `tv.full_sharding` the user wrote as the operand's sharding.
                attrs = {k: self.sdy_attr(k, v, loc) if k.startswith("sdy.") or o.name.startswith("sdy.")
                         else convert_attr(v) for k, v in o.attributes.items() if not k.startswith(OWN_ATTRS)}
            for k, v in attrs.items():
                if isinstance(v, MeshAxesGroups):
                    attrs[k] = self.mesh_axes_groups(v)
        except Unsupported as exc:
            exc.loc = exc.loc or loc  # an attribute does not know where it sits
            raise
        except ParseError as exc:
            exc.loc = exc.loc or loc
            raise
        name = o.name
        if name in ALIASES:
            name, attrs = ALIASES[name](attrs, loc)
        if o.name == "stablehlo.custom_call" and attrs.get("call_target_name") == "SPMDFullToShardShape":
            # The global sharding being cut into shards sits on the @Sharding op that feeds this one.
            producer = o.operands[0].owner if o.operands else None
            producer = getattr(producer, "operation", producer)
            if producer is not None and getattr(producer, "name", "") == "stablehlo.custom_call" and \
                    "mhlo.sharding" in producer.attributes:
                attrs["tv.full_sharding"] = convert_attr(producer.attributes["mhlo.sharding"])
        regions = []
        for region in o.regions:
            if len(region.blocks) != 1:
                raise Unsupported(f"{o.name} with a {len(region.blocks)}-block region", loc, o.name)
            if depth + 1 > MAX_NESTING:
                raise _too_deep(loc)
            regions.append(self.block(region.blocks[0], loc, depth + 1))
        return tir.Op(name, operands, results, rtypes, attrs, tuple(regions), loc)

    def tensor_type(self, t: Any, loc: str, op: str | None = None) -> tir.TensorType:
        from jaxlib.mlir import ir

        if isinstance(t, ir.RankedTensorType):
            shape = tuple(t.shape)
            if any(d < 0 for d in shape):
                raise Unsupported(f"dynamic shape {t}", loc, op or "dynamic-shape")
            dtype = str(t.element_type)
            if dtype not in NP_DTYPES or dtype in NOT_MODELLED:
                why = NOT_MODELLED.get(dtype, "not modelled")
                raise Unsupported(f"element type {dtype} in {t}: {why}", loc, f"type {dtype}")
            return tir.TensorType(shape, dtype)
        raise Unsupported(f"type {t} (only ranked tensors are supported)", loc, op or str(t))


def _mhlo_topk(attrs: dict[str, Any], loc: str) -> tuple[str, dict[str, Any]]:
    """XLA's TopK converted back from HLO (the partitioned module of a `jax.lax.top_k`) is
    `mhlo.topk`, where the lowering had `chlo.top_k`: with `largest` true (its default) it
    is the same op (the k largest along the last dimension, ties by the lower index first;
    tests/test_client_ops.py checks it against XLA). The bottom k is not modelled."""
    if attrs.get("largest", True) is not True:
        raise Unsupported("mhlo.topk with largest = false (the bottom k) is not modelled", loc, "mhlo.topk")
    return "chlo.top_k", {"k": attrs["k"]}


# Ops XLA's HLO -> StableHLO conversion writes in mhlo where jax's lowering wrote another
# dialect's op of the same semantics: read as that op (name, attributes).
ALIASES: dict[str, Callable[[dict[str, Any], str], tuple[str, dict[str, Any]]]] = {
    "mhlo.topk": _mhlo_topk,
}


# The prefix of the attributes the reader adds to ops (never read from a module).
OWN_ATTRS = "tv."
ROUND_TRIP_BODY = "xla.sdy.manual_computation_body"
GLOBAL_TO_LOCAL, LOCAL_TO_GLOBAL = "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"


def _owner(value: Any) -> Any:
    """The op that defines an MLIR value (None for a block argument)."""
    from jaxlib.mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return getattr(owner, "operation", owner)


def _owner_of_use(use: Any) -> Any:
    owner = use.owner
    return getattr(owner, "operation", owner)


def _op_key(o: Any) -> Any:
    """An MLIR op's identity (its first result, or itself): Python wrappers of one op differ."""
    return o.results[0] if len(o.results) else o


def _call_target(o: Any) -> str | None:
    from jaxlib.mlir import ir

    if o is None or o.name != "stablehlo.custom_call":
        return None
    return ir.StringAttr(o.attributes["call_target_name"]).value


def _tuple_parts(o: Any) -> list[Any]:
    """The values an op's one result holds: the result itself, or for a tuple the
    get_tuple_element of each part (None where no get_tuple_element reads the part)."""
    from jaxlib.mlir import ir

    r = o.results[0]
    if not isinstance(r.type, ir.TupleType):
        return [r]
    parts: list[Any] = [None] * r.type.num_types
    for u in r.uses:
        user = _owner_of_use(u)
        if user.name != "stablehlo.get_tuple_element":
            raise Unsupported(f"a tuple read by {user.name} (only get_tuple_element reads tuples)", None, user.name)
        index = ir.IntegerAttr(user.attributes["index"]).value
        if parts[index] is not None:
            raise Unsupported("a tuple part read twice", None, user.name)
        parts[index] = user.results[0]
    return parts


def _part_type(o: Any, k: int) -> Any:
    from jaxlib.mlir import ir

    t = o.results[0].type
    return ir.TupleType(t).get_type(k) if isinstance(t, ir.TupleType) else t


def _tuple_source(value: Any) -> tuple[Any, int]:
    """(the op, the part index) a value comes from, looking through a get_tuple_element."""
    from jaxlib.mlir import ir

    o = _owner(value)
    if o is not None and o.name == "stablehlo.get_tuple_element":
        return _owner(o.operands[0]), ir.IntegerAttr(o.attributes["index"]).value
    return o, 0


def _arg_name(loc: Any, index: int) -> str:
    m = re.fullmatch(r'loc\("([^"]+)"\)', str(loc))
    return m.group(1) if m else f"arg{index}"




def named_attrs(d: Any) -> list[Any]:
    """The NamedAttributes of a DictAttr (iterable at run time, not in jaxlib's stubs)."""
    return [d[i] for i in range(len(d))]


def asm_text(module: Any) -> str:
    """A module's text with its locations, as the verifier and XLA read it back."""
    text = module.operation.get_asm(enable_debug_info=True)
    assert isinstance(text, str)
    return text


def convert_attr(a: Any, depth: int = 0) -> Any:
    """Builtin attributes to Python values; StableHLO structs to `tv_mlir.ir` dataclasses;
    anything else to its text. `depth`: arrays and dictionaries around this one (nesting
    past MAX_NESTING is refused rather than followed into a RecursionError)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as shlo

    if depth > MAX_NESTING:
        raise Unsupported(f"an attribute nested deeper than {MAX_NESTING} (the nesting budget)", None,
                          "budget.nesting")

    if isinstance(a, ir.BoolAttr):
        return bool(a.value)
    if isinstance(a, ir.IntegerAttr):
        return int(a.value)
    if isinstance(a, ir.FloatAttr):
        return float(a.value)
    if isinstance(a, ir.StringAttr):
        return a.value
    if isinstance(a, ir.FlatSymbolRefAttr):
        return a.value
    for cls in (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr, ir.DenseBoolArrayAttr):
        if isinstance(a, cls):
            return tuple(a)
    if isinstance(a, ir.DenseElementsAttr):
        return dense_to_numpy(a)
    if isinstance(a, ir.ArrayAttr):
        return tuple(convert_attr(x, depth + 1) for x in a)
    if isinstance(a, ir.DictAttr):
        return {n.name: convert_attr(n.attr, depth + 1) for n in named_attrs(a)}
    text = str(a)
    if text.startswith("#stablehlo.replica_group_mesh_axes<"):
        return _mesh_axes_groups(a, text)
    if text.startswith("#stablehlo.dot<"):
        d = shlo.DotDimensionNumbers(a)
        return tir.DotDims(tuple(d.lhs_batching_dimensions), tuple(d.rhs_batching_dimensions),
                           tuple(d.lhs_contracting_dimensions), tuple(d.rhs_contracting_dimensions))
    if text.startswith("#stablehlo.conv<"):
        c = shlo.ConvDimensionNumbers(a)
        return tir.ConvDims(int(c.input_batch_dimension), int(c.input_feature_dimension),
                            tuple(c.input_spatial_dimensions), int(c.kernel_input_feature_dimension),
                            int(c.kernel_output_feature_dimension), tuple(c.kernel_spatial_dimensions),
                            int(c.output_batch_dimension), int(c.output_feature_dimension),
                            tuple(c.output_spatial_dimensions))
    if text.startswith("#stablehlo.gather<"):
        g = shlo.GatherDimensionNumbers(a)
        return tir.GatherDims(tuple(g.offset_dims), tuple(g.collapsed_slice_dims), tuple(g.operand_batching_dims),
                              tuple(g.start_indices_batching_dims), tuple(g.start_index_map), int(g.index_vector_dim))
    if text.startswith("#stablehlo.scatter<"):
        s = shlo.ScatterDimensionNumbers(a)
        return tir.ScatterDims(tuple(s.update_window_dims), tuple(s.inserted_window_dims), tuple(s.input_batching_dims),
                               tuple(s.scatter_indices_batching_dims), tuple(s.scattered_dims_to_operand_dims),
                               int(s.index_vector_dim))
    m = re.match(r"#stablehlo<\w+ (\w+)>$", text)
    if m:  # enum attributes: comparison_direction, comparison_type, precision, ...
        return m.group(1)
    return text


def sdy_mesh(a: Any) -> tir.Mesh:
    """An `#sdy.mesh` attribute as `ir.Mesh`."""
    from jaxlib.mlir.dialects import sdy

    m = sdy.MeshAttr(a)
    axes = tuple((sdy.MeshAxisAttr(x).name, int(sdy.MeshAxisAttr(x).size)) for x in m.axes)
    return tir.Mesh(axes, tuple(int(i) for i in m.device_ids))


def manual_axes(a: Any) -> tuple[str, ...]:
    """A `#sdy<manual_axes{...}>` attribute's axis names, as the mesh's axes are named. Not
    read from its printed text: that escapes a quote as \\22, so a manual axis `a"b` read as
    `a\\22b`, which may be another axis of the mesh (tests/test_hostile_names.py)."""
    from jaxlib.mlir.dialects import sdy

    axes: Any = sdy.ManualAxesAttr(a)  # iterable at run time, not in jaxlib's stubs
    return tuple(str(x) for x in axes)


def densify_replica_groups(module: Any) -> int:
    """Rewrite every `#stablehlo.replica_group_mesh_axes` in an MLIR module (in place, in
    its context) as the dense integer groups it names; returns how many. XLA's own reading
    of the mesh form is not reliable (a flax-like train step exported by jax 0.10.2 ran
    differently from its sharded jit in the mesh form, identically once densified)."""
    from jaxlib.mlir import ir

    meshes = {}
    for op in module.body.operations:
        o = op.operation
        if o.name == "sdy.mesh":
            meshes[ir.StringAttr(o.attributes["sym_name"]).value] = sdy_mesh(o.attributes["mesh"])
    count = 0

    def visit(op: Any) -> Any:
        nonlocal count
        if "replica_groups" in op.attributes:
            a = op.attributes["replica_groups"]
            text = str(a)
            if text.startswith("#stablehlo.replica_group_mesh_axes<"):
                g = _mesh_axes_groups(a, text)
                if isinstance(g.mesh, str):
                    if g.mesh not in meshes:
                        raise ParseError(f"replica groups name an unknown mesh @{g.mesh}")
                    mesh = meshes[g.mesh]
                else:
                    mesh = g.mesh
                groups = resolve_mesh_axes(mesh, g.axes, text)
                rows, cols = groups.shape
                op.attributes["replica_groups"] = ir.Attribute.parse(
                    f"dense<{groups.tolist()}> : tensor<{rows}x{cols}xi64>")
                count += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return count


@dataclass(frozen=True)
class MeshAxesGroups:
    """`#stablehlo.replica_group_mesh_axes` as read, before its mesh is resolved: the mesh
    (a symbol naming an `sdy.mesh`, or an inline mesh) and the axis refs as
    (name, pre_size, size); size None for a whole axis."""

    mesh: str | tir.Mesh
    axes: tuple[tuple[str, int, int | None], ...]
    text: str


def _mesh_axes_groups(a: Any, text: str) -> MeshAxesGroups:
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as shlo

    g: Any = shlo.ReplicaGroupMeshAxesAttr(a)  # its stubs type the lists as plain Attributes
    mesh: str | tir.Mesh
    if isinstance(g.mesh, ir.FlatSymbolRefAttr):
        mesh = g.mesh.value
    elif str(g.mesh).startswith("#stablehlo.mesh<"):
        m: Any = shlo.MeshAttr(g.mesh)
        ids = m.device_ids
        mesh = tir.Mesh(tuple((shlo.MeshAxisAttr(x).name, int(shlo.MeshAxisAttr(x).size)) for x in m.axes),
                        tuple(int(i) for i in np.array(ids).ravel()) if ids is not None else ())
    else:
        raise Unsupported(f"replica groups over the mesh {g.mesh} (not a symbol or #stablehlo.mesh)", None,
                          "replica_group_mesh_axes")
    axes: list[tuple[str, int, int | None]] = []
    for x in g.axes:
        r = shlo.AxisRefAttr(x)
        info: Any = r.sub_axis_info
        if info is None:
            axes.append((r.name, 1, None))
        else:
            sub = shlo.SubAxisInfoAttr(info)
            axes.append((r.name, int(sub.pre_size), int(sub.size)))
    return MeshAxesGroups(mesh, tuple(axes), text)


def resolve_mesh_axes(mesh: tir.Mesh, axes: tuple[tuple[str, int, int | None], ...], text: str = ""
                      ) -> np.ndarray:
    """The replica groups that mesh-axes form names, as an int64 array [group, member].

    Semantics as StableHLO's compatibility expander lowers it (stablehlo tests
    `all_reduce_subaxis*`, `all_reduce_sdy_mesh_dev`): a group is the devices whose mesh
    coordinates differ only in the named (sub-)axes; members are ordered by the named axes
    in the order given (the first major), groups by the remaining coordinates in mesh
    order; ids are the mesh's `device_ids` at those positions. A sub-axis `(pre)size` of an
    axis of size n is the middle factor of n = pre * size * rest (major to minor), the
    Shardy convention."""
    sizes = dict(mesh.axes)
    taken: dict[str, list[tuple[int, int]]] = {}
    refs = []  # (mesh axis index, rest, size)
    names = [a for a, _ in mesh.axes]
    for name, pre, size in axes:
        if name not in sizes:
            raise ParseError(f"replica groups {text} name the axis {name!r}, not in the mesh {mesh.axes}")
        n = sizes[name]
        size = n if size is None else size
        if pre < 1 or size < 1 or n % (pre * size):
            raise ParseError(f"replica groups {text}: sub-axis ({pre}){size} does not divide axis {name!r} of size {n}")
        span = (pre, pre * size)  # the part of the axis it covers, as cumulative sizes from the major end
        for lo, hi in taken.get(name, []):
            if span[0] < hi and lo < span[1]:
                raise ParseError(f"replica groups {text} name overlapping parts of axis {name!r}")
        taken.setdefault(name, []).append(span)
        refs.append((names.index(name), n // (pre * size), size))
    ids = mesh.ids()
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for pos in np.ndindex(*ids.shape):
        key = list(pos)
        rank = 0
        for axis, rest, size in refs:
            part = (pos[axis] // rest) % size
            key[axis] -= part * rest
            rank = rank * size + part
        groups.setdefault(tuple(key), []).append((rank, int(ids[pos])))
    rows = [[d for _, d in sorted(members)] for _, members in sorted(groups.items())]
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1)


# The one table of element types: StableHLO's name -> the numpy dtype that holds its values
# exactly (ml_dtypes for bf16, the f8 types and int4).
def _ml_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtype(name))


_NUMPY_TYPES: dict[str, type] = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "complex<f32>": np.complex64, "complex<f64>": np.complex128,
}
_ML_DTYPES: dict[str, str] = {
    "bf16": "bfloat16", "i4": "int4", "ui4": "uint4", "i2": "int2", "ui2": "uint2",
    "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "f8E4M3FNUZ": "float8_e4m3fnuz",
    "f8E5M2FNUZ": "float8_e5m2fnuz", "f8E4M3B11FNUZ": "float8_e4m3b11fnuz", "f8E3M4": "float8_e3m4",
    "f6E2M3FN": "float6_e2m3fn", "f6E3M2FN": "float6_e3m2fn", "f4E2M1FN": "float4_e2m1fn",
    "f8E8M0FNU": "float8_e8m0fnu",
}
NP_DTYPES: Lazy[np.dtype] = Lazy({
    **{name: partial(np.dtype, t) for name, t in _NUMPY_TYPES.items()},
    **{name: partial(_ml_dtype, m) for name, m in _ML_DTYPES.items()},
})

# Element types with a dtype above that the model does not cover, and why. Any other type
# is not modelled either (a quantized type, ...): read as an integer it would give wrong
# verdicts, so the reader refuses it, naming it.
# ui64 is a random generator's state (stablehlo.rng_bit_generator) and what jax makes of it.
# The numeric algebra holds a ui64 as its int64 bits (exact modulo 2**64), the symbolic ones
# as its unsigned value: the two agree on the ops below, which make, move, bitcast or test
# for equality, and on nothing that orders, divides or converts a ui64 as a number. Any
# other op with a ui64 operand or result is refused, naming it, unless `ui64_ranges` shows
# every ui64 it reads and makes below 2**63 (jax's Threefry counters).
UI64_OPS = frozenset({
    "stablehlo.rng_bit_generator", "stablehlo.bitcast_convert", "stablehlo.constant", "stablehlo.reshape",
    "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.slice", "stablehlo.dynamic_slice",
    "stablehlo.dynamic_update_slice", "stablehlo.concatenate", "stablehlo.select", "stablehlo.reverse",
    "stablehlo.get_tuple_element", "stablehlo.tuple", "stablehlo.optimization_barrier", "stablehlo.while",
    "stablehlo.if", "stablehlo.case", "stablehlo.all_gather", "stablehlo.all_to_all",
    "stablehlo.collective_permute", "stablehlo.collective_broadcast", "stablehlo.custom_call",
    "func.call", "func.return", "stablehlo.return", "sdy.sharding_constraint", "sdy.manual_computation",
    "sdy.reshard", "sdy.return", "mhlo.copy", "stablehlo.compare",
})


def check_ui64(funcs: dict[str, tir.Func]) -> None:
    """Refuse the first op that does more with a ui64 than `UI64_OPS` allow (a compare
    only as EQ / NE: the numeric int64 bits order a ui64 past 2**63 below 0)."""
    for f in funcs.values():
        types = dict(zip(f.body.args, f.body.arg_types))
        for op in f.body.walk():
            types.update(zip(op.results, op.result_types))
            for region in op.regions:
                types.update(zip(region.args, region.arg_types))
        bounds: dict[str, ui64_ranges.Interval] | None = None
        for op in f.body.walk():
            operand_types = [types[v] for v in op.operands if v in types]
            if not any(t.dtype == "ui64" for t in (*operand_types, *op.result_types)):
                continue
            direction = str(op.attrs.get("comparison_direction", "")).rsplit(".", 1)[-1].upper()
            if op.name not in UI64_OPS or (op.name == "stablehlo.compare" and direction not in ("EQ", "NE")):
                if op.name in ui64_ranges.ARITHMETIC or op.name == "stablehlo.compare":
                    bounds = ui64_ranges.intervals(f) if bounds is None else bounds
                    ui64s = [v for v in (*op.operands, *op.results) if v in types and types[v].dtype == "ui64"]
                    if all(ui64_ranges.below_limit(bounds.get(v)) for v in ui64s):
                        continue  # a count below 2**63: both representations agree
                raise Unsupported(f"{op.name} on ui64: only a random generator's state (made, moved, "
                                  "bitcast, or compared for equality) and counts shown below 2**63 are "
                                  "modelled", op.loc, op.name)

# Complex types are read: passes/complex.py rewrites them into real pairs, or the verdict
# is unknown naming the first op it cannot rewrite.
NOT_MODELLED: dict[str, str] = {
    "f8E8M0FNU": "a float without sign and zero (a scale) is not modelled as a real",
}


def np_dtype(element_type: str) -> np.dtype:
    """The numpy dtype of a StableHLO element type (`f32`, `bf16`, `ui8`, ...)."""
    try:
        return NP_DTYPES[element_type]
    except KeyError:
        raise Unsupported(f"element type {element_type}", None, element_type) from None


# A splat above this many elements is kept as its one value, a 0-d array (the constant
# rule broadcasts it to the result type): `dense<1.0> : tensor<4x4000000000xf32>` is a few
# bytes of text and 59.6 GiB as an array. The shrink pass and the size check before
# encoding then see the program, and nothing allocates its full size.
COMPACT_SPLAT_ELEMENTS = 1 << 16


def dense_to_numpy(a: Any) -> np.ndarray:
    """A DenseElementsAttr as a numpy array of its own element type; a splat of more than
    COMPACT_SPLAT_ELEMENTS elements as its one element (a 0-d array)."""
    from jaxlib.mlir import ir

    shape = tuple(a.type.shape)
    dtype = str(a.type.element_type)
    if a.is_splat and int(np.prod(shape, dtype=object)) > COMPACT_SPLAT_ELEMENTS:
        with ir.Location.unknown(a.context):
            one = ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([1], a.type.element_type),
                                                 a.get_splat_value())
        return dense_to_numpy(one).reshape(())
    try:
        arr = np.array(a)
        return arr.reshape(shape) if arr.shape != shape else arr
    except (TypeError, ValueError, BufferError):
        pass
    # bf16 and the f8 types have no buffer protocol in the bindings: read the printed literal.
    return _parse_dense_literal(str(a), shape, np_dtype(dtype))


def complex_constant(o: Any, t: tir.TensorType) -> np.ndarray:
    """A complex `stablehlo.constant`'s value, parsed from the op's generic printed form
    (`value = dense<(re,im)> : tensor<...>`, a list of pairs, or a hex buffer). A splat of
    many elements is its one element as a 0-d array, as `dense_to_numpy` gives it."""
    text = o.get_asm(print_generic_op_form=True)
    m = re.search(r"value = (dense<.*?> : tensor<[^>]*>)", text, re.S)
    if m is None:
        raise ParseError(f"a complex constant whose value cannot be read: {text[:200]}")
    literal = m.group(1)
    body = literal[literal.index("<") + 1: literal.rindex(">", 0, literal.rindex(":"))].strip()
    shape = t.shape
    n = int(np.prod(shape, dtype=object)) if shape else 1
    if not body.startswith(("[", '"')) and n > COMPACT_SPLAT_ELEMENTS:
        return _parse_dense_literal(literal, (), np_dtype(t.dtype))
    return _parse_dense_literal(literal, shape, np_dtype(t.dtype))


def _parse_dense_literal(text: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    body = text[text.index("<") + 1: text.rindex(">", 0, text.rindex(":"))].strip()
    n = int(np.prod(shape)) if shape else 1
    itemsize = np.dtype(dtype).itemsize
    if body.startswith('"0x'):  # whole buffer as one hex blob
        raw = bytes.fromhex(body[3:-1])
        arr = np.frombuffer(raw, dtype=dtype)
        return (np.broadcast_to(arr, shape) if arr.size == 1 else arr.reshape(shape)).copy()
    tokens = re.findall(r"0x[0-9A-Fa-f]+|[-+]?(?:inf|nan|[0-9.]+(?:[eE][-+]?[0-9]+)?)|true|false", body)
    if np.dtype(dtype).kind == "c":
        # (re,im) pairs: each part is a float of half the element's width.
        part = np.dtype(f"f{itemsize // 2}")
        parts = _parse_dense_literal(f"dense<[{', '.join(tokens)}]> : x", (len(tokens),), part)
        arr = (parts[0::2] + 1j * parts[1::2]).astype(dtype)
        return np.broadcast_to(arr, shape).copy() if arr.size == 1 and n != 1 else arr.reshape(shape)
    values = []
    for tok in tokens:
        if tok.startswith("0x"):
            bits = int(tok, 16).to_bytes(itemsize, "little")
            values.append(np.frombuffer(bits, dtype=dtype)[0])
        elif tok in ("true", "false"):
            values.append(tok == "true")
        else:
            values.append(float(tok))
    arr = np.array(values).astype(dtype)
    if arr.size == 1 and n != 1:
        return np.broadcast_to(arr, shape).copy()
    return arr.reshape(shape)
