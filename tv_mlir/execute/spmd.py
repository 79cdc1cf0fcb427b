"""SPMD execution in lockstep over the devices of a sharded program.

A value inside a manual region is a `Local`: one array per device (device id =
replica_id * num_partitions + partition_id, the spec's flattened id). Ordinary ops map over
the devices; collectives combine the devices' parts by their process groups as the
StableHLO spec defines them; control flow whose regions hold collectives runs in lockstep
and needs the same branch / trip count on every device.

Three ways into a manual region, one model (`ir.Sharding`) for all:
- `sdy.manual_computation` (Shardy): operands sliced by `in_shardings` over the manual
  axes, results assembled by `out_shardings`;
- `custom_call @SPMDFullToShardShape` / `@SPMDShardToFullShape` (GSPMD), with the global
  sharding of the `@Sharding` op that feeds the former and of the latter's own attribute;
- a per-device entry function (XLA's partitioner output): the arguments are sliced by
  their `mhlo.sharding`, the results assembled by theirs.

Assembling a result whose sharding replicates it over some axes records a `ReplicaCheck`
per extra copy: the copies must be equal, which the verifier proves like an output."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.algebra.base import contents_key
from tv_mlir.errors import ParseError, ShapeError, Unsupported
from tv_mlir.execute.interp import no_content_keys
from tv_mlir.frontend import gspmd
from tv_mlir.frontend.classify import parse_gspmd
from tv_mlir.ir import Block, Mesh, Module, Op, Sharding, TensorType
from tv_mlir.semantics.common import concrete_bool
from tv_mlir.semantics.ops import (
    CALLS,
    CHANNEL_PARTITION_COLLECTIVES,
    COLLECTIVES,
    CONTROL,
    DEVICE_IDS,
    SHARD_CALLS,
    SPMD_OPS,
    called_function,
)
from tv_mlir.semantics.reduction import simple_reducer


@dataclass(frozen=True, eq=False)
class Local:
    """One array per device."""

    parts: tuple[np.ndarray, ...]


@dataclass
class ReplicaCheck:
    """Two copies of one block of a value that its sharding declares replicated."""

    what: str  # "output 0", or "result 1 of sdy.manual_computation"
    value: str  # the SSA value assembled ("output 0" for a per-device entry's results)
    loc: str
    device_a: int  # the copy taken into the global value
    device_b: int
    axes: tuple[str, ...]  # the replication axes
    offset: tuple[int, ...]  # where the block starts in the global value
    a: np.ndarray
    b: np.ndarray
    type: TensorType  # of the global value


# ---------------------------------------------------------------------------
# Entry points used by the interpreter


def involved(interp: Any, op: Op, args: list[Any]) -> bool:
    """Whether the op needs SPMD handling rather than plain semantics."""
    if op.name in SPMD_OPS:
        return True
    if op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in SHARD_CALLS:
        return True
    if any(isinstance(a, Local) for a in args):
        return True
    if op.name in CONTROL and interp.device is None:
        if _regions_have_spmd_ops(op):
            return True
        # Per-device values reach a region only through its free values; a single-device
        # program has none worth the walk.
        return interp.num_devices > 1 and any(isinstance(v, Local) for v in _free_values(interp, op))
    return False


def step(interp: Any, op: Op, args: list[Any], types: tuple[TensorType, ...]) -> list[Any]:
    n = interp.num_devices
    if op.name in DEVICE_IDS:
        return [_device_ids(interp, op)]
    if interp.device is not None:
        raise Unsupported(f"{op.name} inside a region that runs per device", op.loc, op.name)
    if op.name == "sdy.manual_computation":
        return _manual_computation(interp, op, args)
    if op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in SHARD_CALLS:
        return _shard_call(interp, op, args)
    if op.name in COLLECTIVES:
        local = [_as_local(a, n) for a in args]
        try:
            results = COLLECTIVE_RULES[op.name](interp, op, local, types)
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise ShapeError(f"{op.name}: {' '.join(str(exc).split())}", op.loc) from None
        for r, t in zip(results, op.result_types):
            if any(p.shape != t.shape for p in r.parts):
                raise ShapeError(f"{op.name} produced a per-device shape other than its type {t}", op.loc)
        return [Local(tuple(interp.alg.canonical(p) for p in r.parts)) for r in results]
    if op.name in CONTROL and _regions_have_spmd_ops(op):
        return _lockstep(interp, op, args)
    # Ordinary op: each device on its own part, nested regions seeing that device's values.
    # Devices whose arguments hold the same terms (a replicated weight's update, an
    # all-reduced sum on every device of its group) compute the same results: once, and
    # shared as the same arrays, which the observer then also sees once (`Interpreter._observe`).
    outs: list[list[Any]] = []
    keys: dict[Any, int] = {}
    memo: dict[int, Any] = {}
    shareable = not no_content_keys(interp.alg) and (not op.regions or not _free_values(interp, op))
    for d in range(n):
        dargs = [a.parts[d] if isinstance(a, Local) else a for a in args]
        key = contents_key(interp.alg, dargs, memo) if shareable else None
        if key is not None and key in keys:
            outs.append(outs[keys[key]])
            continue
        if key is not None:
            keys[key] = d
        outs.append(interp.view(d).apply(op, dargs, types))
    return [Local(tuple(o[k] for o in outs)) for k in range(len(op.results))]


def run_per_device_entry(interp: Any, module: Module, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """A per-device program as a function of global arrays."""
    func = module.main
    args = [scatter(x, s, interp.num_devices, func.loc) if s is not None else x
            for x, s in zip(inputs, module.arg_shardings or (None,) * len(inputs))]
    results = interp.run_block(func.body, args)
    gtypes = module.global_result_types()
    shardings = module.result_shardings or (None,) * len(results)
    return [gather(interp, r, s, t, f"output {k}", func.loc)
            for k, (r, s, t) in enumerate(zip(results, shardings, gtypes))]


def finish_global(results: list[Any], loc: str) -> list[np.ndarray]:
    """Outputs of a global program: a per-device value may only reach them on one device."""
    out = []
    for r in results:
        if isinstance(r, Local):
            if len(r.parts) != 1:
                raise Unsupported("a per-device value is returned from a global program without "
                                  "@SPMDShardToFullShape or a manual computation", loc, "spmd")
            r = r.parts[0]
        out.append(r)
    return out


# ---------------------------------------------------------------------------
# Shardings: slicing global values and assembling them


def _check_mesh(s: Sharding, n: int, loc: str) -> dict[int, dict[str, int]]:
    coords = s.mesh.coords()
    if s.mesh.size != n or set(coords) != set(range(n)):
        raise Unsupported(f"sharding {s.describe()} covers {s.mesh.size} devices, the program runs on {n}",
                          loc, "spmd.mesh")
    return coords


def _block_slices(s: Sharding, coords: dict[str, int], local_shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(s.shard_index(coords, i) * b, (s.shard_index(coords, i) + 1) * b)
                 for i, b in enumerate(local_shape))


def device_block(s: Sharding | None, device: int, n: int, local_shape: tuple[int, ...], loc: str
                 ) -> tuple[slice, ...]:
    """The block of the global value that a device holds."""
    if s is None:
        return tuple(slice(0, b) for b in local_shape)
    return _block_slices(s, _check_mesh(s, n, loc)[device], local_shape)


def scatter(value: np.ndarray, s: Sharding, n: int, loc: str) -> Local:
    """A global value as its per-device shards."""
    if isinstance(value, Local):
        raise Unsupported("a per-device value is sharded again", loc, "spmd")
    if s.unreduced:
        raise Unsupported(f"an input sharding with unreduced axes {s.unreduced}", loc, "spmd.unreduced")
    if len(s.dims) != value.ndim:
        raise ParseError(f"sharding {s.describe()} has {len(s.dims)} dims for a rank-{value.ndim} value", loc)
    coords = _check_mesh(s, n, loc)
    local = []
    for i, size in enumerate(value.shape):
        k = s.shards(i)
        if size % k:
            raise Unsupported(f"dimension {i} of size {size} does not split evenly into {k} shards", loc,
                              "spmd.uneven")
        local.append(size // k)
    # The trailing Ellipsis keeps a 0-d block an array (value[()] would be the element).
    return Local(tuple(value[_block_slices(s, coords[d], tuple(local)) + (Ellipsis,)] for d in range(n)))


def gather(interp: Any, value: Any, s: Sharding | None, gtype: TensorType, what: str, loc: str,
           name: str = "") -> np.ndarray:
    """A per-device value as a global one. Copies along replicated axes must agree (a
    ReplicaCheck each); parts along unreduced axes are summed."""
    n = interp.num_devices
    if not isinstance(value, Local):
        value = Local((value,) * n)
    if s is None:
        s = Sharding(Mesh((("all", n),)) if n > 1 else Mesh(()), ((),) * len(gtype.shape))
    coords = _check_mesh(s, n, loc)
    local_shape = value.parts[0].shape
    if s.global_type(TensorType(local_shape, gtype.dtype)).shape != gtype.shape:
        raise ParseError(f"{what}: a {local_shape} shard under {s.describe()} does not make {gtype}", loc)
    kind = Kind.of(gtype)
    blocks: dict[tuple[int, ...], dict[tuple[int, ...], list[int]]] = {}
    for d in range(n):
        c = coords[d]
        block = tuple(s.shard_index(c, i) for i in range(len(local_shape)))
        blocks.setdefault(block, {}).setdefault(tuple(c[a] for a in s.replicated), []).append(d)
    out = np.empty(gtype.shape, dtype=value.parts[0].dtype)
    for block, copies in blocks.items():
        sl = tuple(slice(k * b, (k + 1) * b) for k, b in zip(block, local_shape))
        summed = []
        for devices in copies.values():
            v = value.parts[devices[0]]
            for e in devices[1:]:
                v = interp.alg.canonical(interp.alg.add(v, value.parts[e], kind))
            summed.append((devices[0], v))
        d0, v0 = summed[0]
        out[sl + (Ellipsis,)] = v0  # Ellipsis: a 0-d object block is copied, not stored as one element
        for d1, v1 in summed[1:]:
            interp.replica_checks.append(ReplicaCheck(what, name or what, loc, d0, d1, s.replicated,
                                                      tuple(x.start for x in sl), v0, v1, gtype))
    return out


def _manual_part(s: Sharding, manual: tuple[str, ...], loc: str) -> Sharding:
    """The part of a manual computation's in/out sharding that the body sees as local:
    the manual axes (free axes only lay out the local value)."""
    if not manual:
        return s
    dims = []
    for axes in s.dims:
        kept = tuple(a for a in axes if a in manual)
        if axes[:len(kept)] != kept:
            raise Unsupported(f"sharding {s.describe()} puts free axes before manual ones", loc,
                              "sdy.manual_computation")
        dims.append(kept)
    return Sharding(s.mesh, tuple(dims), tuple(a for a in s.unreduced if a in manual))


def _manual_computation(interp: Any, op: Op, args: list[Any]) -> list[np.ndarray]:
    n = interp.num_devices
    manual = tuple(op.attrs.get("manual_axes", ()))
    ins = op.attrs.get("in_shardings", ())
    outs = op.attrs.get("out_shardings", ())
    if len(ins) != len(args) or len(outs) != len(op.results):
        raise ParseError("sdy.manual_computation: shardings do not match its operands/results", op.loc)
    body = op.regions[0]
    local_args = [scatter(a, _manual_part(s, manual, op.loc), n, op.loc) for a, s in zip(args, ins)]
    results = interp.run_block(body, local_args, top_level=True)
    return [gather(interp, r, _manual_part(s, manual, op.loc), t, f"result {k} of sdy.manual_computation",
                   op.loc, op.results[k])
            for k, (r, s, t) in enumerate(zip(results, outs, op.result_types))]


def _shard_call(interp: Any, op: Op, args: list[Any]) -> list[Any]:
    n = interp.num_devices
    target = op.attrs["call_target_name"]
    if target == "SPMDFullToShardShape":
        text = op.attrs.get("tv.full_sharding")
        if text is None:
            raise Unsupported("@SPMDFullToShardShape whose operand has no @Sharding annotation", op.loc,
                              "stablehlo.custom_call")
        s = parse_gspmd(text, len(op.result_types[0].shape), n, op.loc)
        if s == gspmd.MANUAL:
            raise Unsupported("@SPMDFullToShardShape of a manual value", op.loc, "stablehlo.custom_call")
        assert isinstance(s, Sharding)  # MANUAL is the only string parse_gspmd returns
        return [scatter(args[0], s, n, op.loc)]
    s = parse_gspmd(op.attrs.get("mhlo.sharding", "{replicated}"), len(op.result_types[0].shape), n, op.loc)
    if s == gspmd.MANUAL:
        raise Unsupported("@SPMDShardToFullShape to a manual sharding", op.loc, "stablehlo.custom_call")
    assert isinstance(s, Sharding)  # MANUAL is the only string parse_gspmd returns
    return [gather(interp, args[0], s, op.result_types[0], "result of @SPMDShardToFullShape", op.loc,
                   op.results[0])]


# ---------------------------------------------------------------------------
# Collectives


def _as_local(a: Any, n: int) -> Local:
    return a if isinstance(a, Local) else Local((a,) * n)


def _channel(op: Op) -> int:
    h = op.attrs.get("channel_handle")
    if h is None:
        return 0
    import re

    m = re.search(r"handle\s*=\s*(-?\d+)", str(h))
    return int(m.group(1)) if m else 0


def _groups_attr(op: Op, name: str = "replica_groups") -> list[list[int]]:
    rg = op.attrs.get(name)
    if rg is None:
        return []
    if not isinstance(rg, np.ndarray | tuple | list) or not np.issubdtype(np.asarray(rg).dtype, np.integer):
        # An attribute form the reader does not convert (kept as its text): name it rather
        # than guess its groups.
        raise Unsupported(f"{op.name}: {name} in the form {str(rg)[:200]}", op.loc, f"{op.name} {name}")
    arr = np.asarray(rg).astype(np.int64)
    if arr.size == 0:
        return []
    return [[int(x) for x in row if x >= 0] for row in arr.reshape(arr.shape[0], -1)]


def process_groups(op: Op, num_replicas: int, num_partitions: int) -> list[list[int]]:
    """The spec's process groups as lists of flattened device ids."""
    R, P = num_replicas, num_partitions
    groups = _groups_attr(op)
    channel = _channel(op) > 0
    global_ids = "use_global_device_ids" in op.attrs and op.attrs["use_global_device_ids"] is not False
    if op.name in CHANNEL_PARTITION_COLLECTIVES:
        mode = "cross_partition" if channel else "cross_replica"
    elif not channel:
        mode = "cross_replica"
    else:
        mode = "flattened_ids" if global_ids else "cross_replica_and_partition"
    if mode == "flattened_ids":
        return groups or [list(range(R * P))]
    if mode == "cross_replica":
        groups = groups or [list(range(R))]
        return [[r * P + p for r in g] for g in groups for p in range(P)]
    if mode == "cross_partition":
        groups = groups or [list(range(P))]
        return [[r * P + p for p in g] for g in groups for r in range(R)]
    groups = groups or [list(range(R))]
    return [[r * P + p for p in range(P) for r in g] for g in groups]


def _groups(interp: Any, op: Op) -> list[list[int]]:
    m = interp.module
    groups = process_groups(op, m.num_replicas, m.num_partitions)
    n = interp.num_devices
    seen = [x for g in groups for x in g]
    if any(not 0 <= x < n for x in seen) or len(seen) != len(set(seen)):
        raise Unsupported(f"{op.name}: replica groups {groups} do not partition the {n} devices", op.loc, op.name)
    return groups


def _reduce_group(interp: Any, op: Op, stacks: list[np.ndarray], kinds: list[Kind]) -> list[np.ndarray]:
    """Reduce each stacked operand (group members along the last axis) with the op's body,
    which combines two scalars and applies to every operand separately."""
    body: Block = op.regions[0]
    alg = interp.alg
    fast = simple_reducer(body)
    out = []
    for stack, kind in zip(stacks, kinds):
        if fast == "add" and kind is not Kind.BOOL:
            out.append(alg.reduce_sum(stack, (stack.ndim - 1,), kind))
            continue
        acc = stack[..., 0]
        for j in range(1, stack.shape[-1]):
            acc = interp.run_block(body, [_nd(acc), _nd(stack[..., j])], batched=True)[0].reshape(stack.shape[:-1])
        out.append(acc)
    return out


def _nd(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else np.asarray(a)


def _reduced_per_group(interp: Any, op: Op, args: list[Local],
                       types: tuple[TensorType, ...]) -> list[tuple[list[int], list[np.ndarray]]]:
    """Each process group with its members' operands reduced by the op's body."""
    kinds = [Kind.of(t) for t in types]
    return [(g, _reduce_group(interp, op, [np.stack([a.parts[d] for d in g], axis=-1) for a in args], kinds))
            for g in _groups(interp, op)]


def _all_reduce(interp: Any, op: Op, args: list[Local], types: tuple[TensorType, ...]) -> list[Local]:
    out: list[list[Any]] = [list(a.parts) for a in args]
    for g, reduced in _reduced_per_group(interp, op, args, types):
        for k, r in enumerate(reduced):
            for d in g:
                out[k][d] = r
    return [Local(tuple(o)) for o in out]


def all_gather(interp: Any, op: Op, args: list[Local], types: tuple[TensorType, ...]) -> list[Local]:
    dim = int(op.attrs["all_gather_dim"])
    out: list[list[Any]] = [list(a.parts) for a in args]
    for g in _groups(interp, op):
        for k, a in enumerate(args):
            full = np.concatenate([a.parts[d] for d in g], axis=dim)
            for d in g:
                out[k][d] = full
    return [Local(tuple(o)) for o in out]


def _reduce_scatter(interp: Any, op: Op, args: list[Local], types: tuple[TensorType, ...]) -> list[Local]:
    """An all_reduce whose result is split along the scatter dimension, piece i to the
    group's i-th member."""
    dim = int(op.attrs["scatter_dimension"])
    out: list[list[Any]] = [list(a.parts) for a in args]
    for g, reduced in _reduced_per_group(interp, op, args, types):
        for k, r in enumerate(reduced):
            for d, piece in zip(g, np.split(r, len(g), axis=dim)):
                out[k][d] = piece
    return [Local(tuple(o)) for o in out]


def _all_to_all(interp: Any, op: Op, args: list[Local], types: tuple[TensorType, ...]) -> list[Local]:
    split_dim, concat_dim = int(op.attrs["split_dimension"]), int(op.attrs["concat_dimension"])
    count = int(op.attrs["split_count"])
    out: list[list[Any]] = [list(a.parts) for a in args]
    for g in _groups(interp, op):
        if len(g) != count:
            raise Unsupported(f"all_to_all with split_count {count} over a group of {len(g)}", op.loc, op.name)
        for k, a in enumerate(args):
            split = {d: np.split(a.parts[d], count, axis=split_dim) for d in g}
            for i, d in enumerate(g):
                out[k][d] = np.concatenate([split[s][i] for s in g], axis=concat_dim)
    return [Local(tuple(o)) for o in out]


def _zeros(interp: Any, t: TensorType) -> np.ndarray:
    return interp.alg.full(t.shape, False if Kind.of(t) is Kind.BOOL else 0, Kind.of(t))


def _collective_permute(interp: Any, op: Op, args: list[Local], types: tuple[TensorType, ...]) -> list[Local]:
    m = interp.module
    R, P = m.num_replicas, m.num_partitions
    pairs = _groups_attr(op, "source_target_pairs")
    cross_partition = _channel(op) > 0
    moves: dict[int, int] = {}  # target device -> source device
    copies = range(R) if cross_partition else range(P)
    for s, t in pairs:
        for c in copies:
            src, dst = (c * P + s, c * P + t) if cross_partition else (s * P + c, t * P + c)
            if dst in moves or not (0 <= src < R * P and 0 <= dst < R * P):
                raise Unsupported(f"collective_permute pairs {pairs} are not a partial permutation", op.loc, op.name)
            moves[dst] = src
    a = args[0]
    return [Local(tuple(a.parts[moves[d]] if d in moves else _zeros(interp, op.result_types[0])
                        for d in range(interp.num_devices)))]


def _collective_broadcast(interp: Any, op: Op, args: list[Local], types: tuple[TensorType, ...]) -> list[Local]:
    out: list[list[Any]] = [[_zeros(interp, t) for _ in range(interp.num_devices)] for t in op.result_types]
    for g in _groups(interp, op):
        for k, a in enumerate(args):
            for d in g:
                out[k][d] = a.parts[g[0]]
    return [Local(tuple(o)) for o in out]


COLLECTIVE_RULES = {
    "stablehlo.all_reduce": _all_reduce,
    "stablehlo.all_gather": all_gather,
    "stablehlo.reduce_scatter": _reduce_scatter,
    "stablehlo.all_to_all": _all_to_all,
    "stablehlo.collective_permute": _collective_permute,
    "stablehlo.collective_broadcast": _collective_broadcast,
}


def _device_ids(interp: Any, op: Op) -> Any:
    P = interp.module.num_partitions
    t = op.result_types[0]

    def value(d: int) -> np.ndarray:
        v = d % P if op.name == "stablehlo.partition_id" else d // P
        return interp.alg.constant(np.array(v, dtype=np.int64).reshape(t.shape), Kind.INT)

    if interp.device is not None:
        return value(interp.device)
    return Local(tuple(value(d) for d in range(interp.num_devices)))


# ---------------------------------------------------------------------------
# Control flow with collectives inside: lockstep


def _walk_ops(op: Op):
    for r in op.regions:
        yield from r.walk()


def _regions_have_spmd_ops(op: Op) -> bool:
    return any(o.name in SPMD_OPS for o in _walk_ops(op))


def _free_values(interp: Any, op: Op) -> list[Any]:
    """Values the op's regions use from the enclosing scope."""
    defined: set[str] = set()
    used: list[str] = []

    def visit(block: Block) -> None:
        defined.update(block.args)
        for o in block.ops:
            used.extend(o.operands)
            for r in o.regions:
                visit(r)
            defined.update(o.results)
        used.extend(block.returns)

    for r in op.regions:
        visit(r)
    out = []
    for name in dict.fromkeys(used):
        if name not in defined:
            try:
                out.append(interp.value(name))
            except KeyError:
                pass
    return out


def _uniform(interp: Any, op: Op, x: Any, kind: Kind) -> Any:
    """A predicate or index that must be the same known value on every device."""
    parts = x.parts if isinstance(x, Local) else (x,)
    values = []
    for p in parts:
        e = p.reshape(())[()] if p.dtype == object else p.reshape(()).item()
        v = concrete_bool(interp.alg, e) if kind is Kind.BOOL else interp.alg.index_value(e)
        if v is None:
            raise Unsupported(f"{op.name} with collectives inside and a data-dependent condition", op.loc, op.name)
        values.append(v)
    if len(set(values)) != 1:
        raise Unsupported(f"{op.name} with collectives inside takes different paths on different devices",
                          op.loc, op.name)
    return values[0]


def _lockstep(interp: Any, op: Op, args: list[Any]) -> list[Any]:
    if op.name == "stablehlo.while":
        cond, body = op.regions
        values = list(args)
        while True:  # ends: every trip is charged to the run's loop budget
            pred = interp.run_block(cond, values)[0]
            if not _uniform(interp, op, pred, Kind.BOOL):
                return values
            interp.run_budget.iteration(op)
            values = interp.run_block(body, values)
    if op.name == "stablehlo.if":
        taken = _uniform(interp, op, args[0], Kind.BOOL)
        return interp.run_block(op.regions[0 if taken else 1], [])
    if op.name == "stablehlo.case":
        v = _uniform(interp, op, args[0], Kind.INT)
        n = len(op.regions)
        return interp.run_block(op.regions[v if 0 <= v < n else n - 1], [])
    if op.name in CALLS:
        name = called_function(op)
        if not isinstance(name, str):
            raise Unsupported(f"call to unknown function @{name}", op.loc, op.name)
        return interp.run_call(op, name, args)
    return list(args)  # optimization_barrier
