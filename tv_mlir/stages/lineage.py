"""Lineage: which reference value a value of the sharded program holds, and how it lies on
the devices. Found on the random runs: a per-device value is assembled under each sharding
its shapes allow and looked up among the reference values by a projection of the run's
numbers, then compared on every run. Lineage is evidence, never a proof: it only proposes
where stages are cut, and every stage proves its outputs' lineage."""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from tv_mlir.algebra import NumericAlgebra
from tv_mlir.execute.interp import Interpreter
from tv_mlir.execute.runs import Run
from tv_mlir.execute.spmd import scatter
from tv_mlir.ir import Mesh, Module, Op, Sharding
from tv_mlir.semantics.common import Budget

# Relative width of a projection bucket: far wider than float64 reassociation error
# (1e-13), far narrower than the spread of projections of unrelated values.
BUCKET = 1e-4
# The runs lineage looks at: the random-normal ones (run 0 has small integers: too many
# ties). Whole arrays are compared, so three runs rarely leave a coincidence; one that is
# left costs a failed stage (and the whole proof), never a wrong verdict.
RUNS = slice(1, 4)
KEY_RUN = 0  # of those
# Reference values with one key tried per value, nearest in program position first.
CANDIDATES = 8


@dataclass(frozen=True)
class Link:
    """The other program's value holds reference value `ref` laid out by `sharding`
    (None: the other program is global and holds it whole), and, under the same layout,
    the reference values `also` (equal to `ref` on every run, held by no other value's
    `ref`: `shared`)."""

    ref: str
    sharding: Sharding | None = None
    also: tuple[str, ...] = ()


Values = dict[str, list[Any]]  # name -> per run: an array (global) or a tuple of per-device arrays


def trace(module: Module, input_sets: list[list[np.ndarray]], max_unroll: int, max_elements: int,
          keep: list[Run] | None = None) -> Values:
    """Every top-level value of `module` on every run (per-device values as tuples);
    `max_elements`: the elements one run may compute (the interpreter's budget). `keep`:
    where each run is also kept as the proof's fingerprint runs record it (`Run`)."""
    values: Values = {}
    n = module.num_devices
    for inputs in input_sets:
        budget = Budget(max_iterations=max_unroll, max_elements=max_elements, calls=[module.entry])
        interp = _Tracer(module, NumericAlgebra(), max_unroll, budget=budget,
                         kept=Run() if keep is not None else None)
        outputs = interp.run(inputs)
        if interp.kept is not None and keep is not None:
            interp.kept.outputs, interp.kept.checks = outputs, interp.replica_checks
            keep.append(interp.kept)
        run = interp.seen
        if module.per_device:
            for name, s, x in zip(module.main.body.args, module.arg_shardings, inputs):
                run[name] = scatter(x, s, n, "").parts if s is not None else (x,) * n
        else:
            run.update(zip(module.main.body.args, inputs))
        for name, r in run.items():
            values.setdefault(name, []).append(r)
    return values


@dataclass
class _Tracer(Interpreter):
    """An interpreter that keeps every top-level value, a per-device one as its tuple of
    parts. The general observer (`Interpreter._observe`) calls back once per device under a
    device-qualified copy of the op, and a deep plan's trace spent a third of its time there."""

    seen: dict[str, Any] = field(default_factory=dict)
    # The run as `prove.fingerprints.numeric_trace` records it, when kept for the proof: the
    # names `Interpreter._observe` gives its observer (an op with a per-device result: each
    # result on every device as `name@device`; the numeric algebra keys no device's arrays
    # alike, so every device is observed).
    kept: Run | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.observer = _unused  # _step observes top-level ops only when there is an observer

    def _observe(self, op: Op, results: list[Any]) -> list[Any]:
        local = False
        for name, r in zip(op.results, results):
            parts = getattr(r, "parts", None)
            local = local or parts is not None
            self.seen[name] = tuple(parts) if parts is not None else r
        if self.kept is not None:
            kept = self.kept.values
            if not local:
                kept.update(zip(op.results, results))
            else:
                n = self.num_devices
                for d in range(n):
                    for name, r in zip(op.results, results):
                        parts = getattr(r, "parts", None)
                        kept[f"{name}@{d}"] = parts[d] if parts is not None else r
        return results


def _unused(op: Op, results: list[Any]) -> None:
    raise AssertionError("_Tracer._observe records values itself")


def _weights(shape: tuple[int, ...], cache: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    w = cache.get(shape)
    if w is None:
        w = cache[shape] = np.random.default_rng(abs(hash(shape)) % (2**32)).normal(size=shape)
    return w


def _key(arr: np.ndarray, cache: dict[tuple[int, ...], np.ndarray]) -> tuple | None:
    arr = np.asarray(arr)
    if arr.dtype == object:
        return None
    if arr.dtype.kind in "biu":
        return (arr.shape, arr.dtype.kind, np.ascontiguousarray(arr).tobytes())
    a = arr.astype(np.float64)
    if not np.all(np.isfinite(a)):
        return None
    norm = float(np.sum(np.abs(a)))
    if norm == 0.0:
        return None  # zeros: every zero value would match; such values are not cut at
    # The norm's magnitude keeps apart values of one direction (x + k * y for many k), which
    # the direction alone would put in one bucket, making the look-up quadratic.
    return (arr.shape, "f", round(float(np.sum(a * _weights(arr.shape, cache))) / norm / BUCKET),
            round(math.log(norm) / BUCKET))


# float64 runs of reordered sums agree to ~1e-14 of the values' scale in a shallow program;
# deep in a 126-layer stack, rounding grown through exp and rsqrt of large arguments reaches
# 1e-8 (measured on testdata/depth: no difference between 1e-8 and 1e-5, the smallest real
# one). EXACT links are preferred; a LOOSE one only when no reference value is exact, and
# then the numerically nearest: RMSNorm's mean and mean + 1e-6 are 1e-9 apart at a scale of
# 1000, and taking one for the other costs a failed stage and the whole proof.
EXACT = 1e-12
LOOSE = 1e-7


def _error(a: Any, b: Any) -> float:
    """How far `b` is from `a`: 0 when equal, inf when they cannot be the same value, else
    the largest difference relative to the scale of `a` (at least 1) plus |b|."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return math.inf
    if a.dtype.kind in "biu" or b.dtype.kind in "biu" or np.array_equal(a, b):
        return 0.0 if np.array_equal(a, b) else math.inf
    if not a.size:
        return 0.0
    with np.errstate(all="ignore"):
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        scale = max(1.0, float(np.max(np.abs(a))))
        r = float(np.max(d / (scale + np.abs(b))))
    return r if math.isfinite(r) else math.inf


def _close(a: Any, b: Any, tol: float = LOOSE) -> bool:
    return _error(a, b) <= tol


def _run_error(got: Any, want: list[Any]) -> float:
    """The largest `_error` over the runs (`got`: run -> value or None)."""
    worst = 0.0
    for k, w in enumerate(want):
        g = got(k)
        if g is None:
            return math.inf
        worst = max(worst, _error(g, w))
        if worst > LOOSE:
            return math.inf
    return worst


def _shardings(mesh: Mesh, rank: int) -> Iterable[Sharding]:
    """Every way to split `rank` dims by the mesh's axes (each axis on one dim or on none,
    in mesh order within a dim), the replicated layout first; then the partial sums: each
    axis on one dim, replicated or summed over (unreduced), at least one summed (a stage
    takes such a value as free parts, one per device group: stages/extract.py)."""
    axes = [a for a, _ in mesh.axes]
    for choice in itertools.product(range(-1, rank), repeat=len(axes)):
        dims = tuple(tuple(a for a, c in zip(axes, choice) if c == i) for i in range(rank))
        yield Sharding(mesh, dims)
    for choice in itertools.product(range(-2, rank), repeat=len(axes)):
        if -2 not in choice:
            continue
        dims = tuple(tuple(a for a, c in zip(axes, choice) if c == i) for i in range(rank))
        yield Sharding(mesh, dims, tuple(a for a, c in zip(axes, choice) if c == -2))


@lru_cache(maxsize=4096)
def _blocks(s: Sharding, local: tuple[int, ...]) -> tuple[tuple[int, tuple, bool], ...]:
    """Per device: its block of the global value under `s`, and whether an earlier device
    holds the same block (a replica)."""
    out = []
    seen: set[tuple[int, ...]] = set()
    for d, c in sorted(s.mesh.coords().items()):
        block = tuple(s.shard_index(c, i) for i in range(len(local)))
        sl = tuple(slice(k * b, (k + 1) * b) for k, b in zip(block, local)) + (Ellipsis,)
        out.append((d, sl, block in seen))
        seen.add(block)
    return tuple(out)


@lru_cache(maxsize=4096)
def _part_blocks(s: Sharding, local: tuple[int, ...]) -> tuple[tuple[int, tuple, tuple], ...]:
    """Per device: its block under `s`, and which part it holds (its block and its place
    along the unreduced axes; replicas hold the same part)."""
    coords = s.mesh.coords()
    return tuple((d, sl, (tuple(x.start for x in sl[:-1]), tuple(coords[d][a] for a in s.unreduced)))
                 for d, sl, _ in _blocks(s, local))


def _assemble(parts: Sequence[np.ndarray], s: Sharding) -> np.ndarray | None:
    """The global value whose blocks under `s` are `parts`, or None when copies that `s`
    declares replicated differ."""
    local = parts[0].shape
    if s.mesh.size != len(parts):
        return None
    gshape = tuple(d * s.shards(i) for i, d in enumerate(local))
    if s.unreduced:  # the devices of a group along the unreduced axes hold parts of its block
        if parts[0].dtype.kind not in "fc":
            return None
        out = np.zeros(gshape, dtype=np.float64)
        held: dict[tuple, np.ndarray] = {}
        for d, sl, key in _part_blocks(s, local):
            if key in held:  # a replica (an axis the layout replicates) holds the same part
                if not _close(held[key], parts[d]):
                    return None
                continue
            held[key] = parts[d]
            out[sl] += parts[d]
        return out
    out = np.empty(gshape, dtype=parts[0].dtype)
    for d, sl, replica in _blocks(s, local):
        if replica:
            if not _close(out[sl], parts[d]):
                return None
        else:
            out[sl] = parts[d]
    return out


def outputs_agree(ref_values: Values, other_values: Values, ref: Module, other: Module) -> bool:
    """Whether every output of `other` (assembled by its result sharding; a per-device output
    with none is replicated) held the reference's output on every traced run. False when a
    value is missing: the caller then asks the full comparison (stages/lift.py)."""
    returns = list(other.main.body.returns)
    shardings = list(other.result_shardings) if other.per_device else [None] * len(returns)
    for r, o, s in zip(ref.main.body.returns, returns, shardings):
        want, got = ref_values.get(r), other_values.get(o)
        if not want or not got or len(want) != len(got):
            return False
        for a, b in zip(want, got):
            if isinstance(b, tuple):
                whole = _assemble(b, s) if s is not None else (b[0] if all(_close(b[0], x) for x in b) else None)
            else:
                whole = b
            if whole is None or not _close(a, whole):
                return False
    return True


def _same_along_a_split(parts: Sequence[Any], s: Sharding) -> bool:
    """Whether the devices along some axis that `s` splits a dim by all hold the same
    block: a value replicated along that axis, which matches a reference value constant
    along the dim (RMSNorm's per-row scale broadcast over the hidden dim) only by that
    constancy. A stage that took the reference value as a free input would lose it (its
    elements along the dim then differ), so such a layout links nothing."""
    for axis in (a for d in s.dims for a in d):
        if all(all(np.array_equal(np.asarray(parts[g[0]]), np.asarray(parts[d])) for d in g[1:])
               for g in _along(s.mesh, axis)):
            return True
    return False


@lru_cache(maxsize=256)
def _along(mesh: Mesh, axis: str) -> tuple[tuple[int, ...], ...]:
    """The mesh's devices grouped by their place on every axis but `axis`."""
    groups: dict[tuple, list[int]] = {}
    for d, c in sorted(mesh.coords().items()):
        groups.setdefault(tuple(v for k, v in c.items() if k != axis), []).append(d)
    return tuple(tuple(g) for g in groups.values())


def find(ref_values: Values, other_values: Values, other: Module, names: Iterable[str],
         ref_names: Iterable[str], ref_rank: dict[str, float], other_rank: dict[str, float],
         operands: tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]] | None = None,
         given: dict[str, str] | None = None, shareable: Iterable[str] = (),
         last_use: dict[str, int] | None = None) -> dict[str, Link]:
    """The lineage of the other program's values `names` (in program order) among the
    reference values `ref_names`. Of several reference values that match (a mask computed
    twice), the one the value is made like is taken first, then an exact match, then the
    nearest relative position (`*_rank`, 0..1).

    Made like (`operands`: per value of each program, the operands of the op that makes it;
    `given`: links known beforehand, the other's arguments): the reference value's op
    reads a value that an operand of the other's op is linked to. A reduce over size-1
    dims of a reshape of a sum equals the sum itself, and linked to the sum, the other's
    copy of that reduce left the reference's unheld, live across a whole backward layer:
    no cut there (the 126-layer stack's last 11 backward layers were one stage each).

    Equal reference values (`_shared`): a value whose link is exact also holds the other
    `shareable` float reference values it equals exactly on every run under the same
    layout, unless a value linked to one of them outlives it (`last_use`: the other's flow
    values' last uses). XLA folds RMSNorm's `x - 0`: the partitioned module's one value
    stands for the reference's embedding lookup and its `x - 0`, and linked to `x - 0`
    alone it left the lookup (also the residual) unheld, so no cut until the residual add
    (docs/stages.md, "Equal reference values")."""
    cache: dict[tuple[int, ...], np.ndarray] = {}
    table: dict[tuple, list[str]] = {}
    shapes: set[tuple[int, ...]] = set()
    for r in ref_names:
        runs = ref_values.get(r)
        if runs is None or len(runs) <= KEY_RUN:
            continue
        key = _key(runs[KEY_RUN], cache)
        if key is not None:
            table.setdefault(key, []).append(r)
            shapes.add(np.shape(runs[KEY_RUN]))
    meshes = _meshes(other)
    links: dict[str, Link] = {}
    found: dict[str, tuple[str, ...]] = {}  # value -> the other reference values it equals (`_equals`)
    shareable = set(shareable)
    held = dict(given or {})  # other value -> the reference value it is linked to
    r_reads, o_reads = operands or ({}, {})
    for name in names:
        runs = other_values.get(name)
        if runs is None or len(runs) <= KEY_RUN:
            continue
        read = {held[o] for o in o_reads.get(name, ()) if o in held}
        # (not made alike?, exact?, error when not exact, distance)
        best: tuple[int, int, float, float, Link] | None = None
        here = other_rank.get(name, 0.0)
        tried: dict[Sharding | None, tuple[Any, list[str]]] = {}  # layout -> (its runs, its near values)
        for layout, global_runs in _layouts(runs, meshes, other.per_device, shapes):
            key = _key(global_runs(KEY_RUN), cache)
            bucket = table.get(key, []) if key is not None else []
            # Nearest first, and only a few: values that agree on the key are almost always
            # one value computed more than once, and a bucket of hundreds would make the
            # search quadratic in the program's length.
            near = sorted(bucket, key=lambda r: abs(ref_rank.get(r, 0.0) - here))[:CANDIDATES]
            tried[layout] = (global_runs, near)
            for r in near:
                dist = abs(ref_rank.get(r, 0.0) - here)
                if best is not None and best[:2] == (0, 0) and dist >= best[3]:
                    break
                alike = 0 if read and not read.isdisjoint(r_reads.get(r, ())) else 1
                if best is not None and alike > best[0]:
                    continue
                err = _run_error(global_runs, ref_values[r][:len(runs)])
                if err > LOOSE:
                    continue
                score = (alike, 0, 0.0, dist) if err <= EXACT else (alike, 1, err, dist)
                if best is None or score < best[:4]:
                    best = (*score, Link(r, layout))
                if score[:2] == (0, 0):
                    break
        if best is not None:
            links[name] = best[4]
            held[name] = best[4].ref
            if best[1] == 0 and shareable:
                found[name] = _equals(best[4], tried, ref_values, len(runs), shareable)
    return _shared(links, found, last_use or {})


def _equals(link: Link, tried: dict[Sharding | None, tuple[Any, list[str]]], ref_values: Values, n: int,
            shareable: set[str]) -> tuple[str, ...]:
    """The `shareable` reference values besides `link.ref` that the value equals exactly
    on every run under the link's layout (among the few nearest of its key)."""
    global_runs, near = tried[link.sharding]
    if not _varies(global_runs, n):
        return ()
    return tuple(r for r in near if r != link.ref and r in shareable
                 and np.asarray(ref_values[r][KEY_RUN]).dtype.kind in "fc"
                 and _run_error(global_runs, ref_values[r][:n]) <= EXACT)


def _varies(global_runs: Any, n: int) -> bool:
    """Whether the value differs between the runs: one that does not (a mask of ones made
    float, a count) is no function of the random inputs there, and two such values agree
    by coincidence as often as not."""
    first = global_runs(0)
    return first is not None and any(
        (g := global_runs(k)) is not None and not np.array_equal(np.asarray(g), np.asarray(first)) for k in range(1, n))


def _shared(links: dict[str, Link], found: dict[str, tuple[str, ...]], last_use: dict[str, int]) -> dict[str, Link]:
    """The links with the equal values `found` as their `also`, less those a value linked
    to them outlives (or lives as long as) the holder: every stage whose last cut the
    holder is live across proves each value it holds, so a value held more than needed is
    one more output to prove, and an equality seen on the runs only (a NaN guard's
    `select(is_finite(x), x, 0)` and `x`) may fail that proof. Only a value that its own
    holders leave unheld while the holder lives is shared."""
    outlives: dict[str, int] = {}  # reference value -> the latest last use of a value linked to it
    for w, k in links.items():
        outlives[k.ref] = max(outlives.get(k.ref, -1), last_use.get(w, -1))
    out = dict(links)
    for v, rs in found.items():
        also = tuple(r for r in rs if outlives.get(r, -1) < last_use.get(v, -1))
        if also:
            out[v] = replace(links[v], also=also)
    return out


def _meshes(module: Module) -> list[Mesh]:
    found: list[Mesh] = []
    for s in (*module.arg_shardings, *module.result_shardings):
        if s is not None and s.mesh not in found and s.mesh.size == module.num_devices:
            found.append(s.mesh)
    return found


def _layouts(runs: list[Any], meshes: list[Mesh], per_device: bool, shapes: set[tuple[int, ...]]):
    """(sharding, run -> global value) for every layout of the value that gives a shape some
    reference value has."""
    if not per_device:
        if np.shape(runs[KEY_RUN]) in shapes:
            yield None, lambda k: runs[k]
        return
    first = runs[KEY_RUN]
    if not isinstance(first, tuple) or any(np.asarray(p).dtype == object for p in first):
        return
    local = np.shape(first[0])
    for mesh in meshes:
        for s, gshape in _layout_table(mesh, local, _shardings):
            if gshape not in shapes:
                continue
            done: dict[int, np.ndarray | None] = {}

            def at(k: int, s: Sharding = s, done: dict[int, np.ndarray | None] = done) -> np.ndarray | None:
                if k not in done:
                    done[k] = _assemble([np.asarray(p) for p in runs[k]], s)
                return done[k]

            if at(KEY_RUN) is not None and not _same_along_a_split(runs[KEY_RUN], s):
                yield s, at


@lru_cache(maxsize=1024)
def _layout_table(mesh: Mesh, local: tuple[int, ...], layouts: Any) -> tuple[tuple[Sharding, tuple[int, ...]], ...]:
    """Every layout `layouts` (`_shardings`, passed so that the key names it) gives a value
    of per-device shape `local`, with the global shape it gives: the same few shapes recur
    for thousands of values of a deep plan."""
    return tuple((s, tuple(d * s.shards(i) for i, d in enumerate(local))) for s in layouts(mesh, len(local)))
