"""Lineages kept for a later cut of the same pair: in memory for the second witness (the same
programs at other sizes, with the same value names) and on disk, in the proof cache, for a
warm re-run of an unchanged pair.

Running both programs for the lineage (three runs of every op, every layout of every value)
is the costliest part of cutting a deep plan, and on a warm run it is most of the run. A
lineage is evidence, never a proof (stages/lineage.py): every stage proves its own outputs'
lineage. So a kept lineage is sound whatever it holds, stale or foreign; the caller
(stages/run.py) proves the stages it gives, and when one fails it cuts the pair again from
its own runs before anything else. Only lineages of pairs whose outputs agreed on the runs
are kept: a pair whose runs differ is reported from those runs, which a kept lineage skips."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.errors import TvError
from tv_mlir.ir import Mesh, Module, Sharding
from tv_mlir.stages.cache import ProofCache, cache_key
from tv_mlir.stages.hashing import module_text
from tv_mlir.stages.lineage import EXACT, LOOSE, Link, _assemble, _error, outputs_agree, trace


def shape_free(ref: Module, other: Module) -> str:
    """A key equal for two pairs whose top-level ops, operands, results and argument layouts
    are the same, whatever their shapes and attributes (a pair and its second witness)."""
    h = hashlib.sha256()
    for m in (ref, other):
        body = m.main.body
        h.update(repr((m.per_device, m.num_devices, tuple(body.args), tuple(body.returns),
                       tuple(_sharding_json(s) for s in m.arg_shardings))).encode())
        for op in body.ops:
            h.update(f"{op.name}({','.join(op.operands)})->{','.join(op.results)};".encode())
    return h.hexdigest()


def content_key(ref: Module, other: Module, context: str) -> str:
    """The disk key of a pair's lineage: both programs' canonical text (ops, attributes,
    constants, types, shardings) and `context` (what else the runs depend on: the tool,
    the input bounds, the unroll budget)."""
    h = hashlib.sha256(b"lineage\0")
    for part in (module_text(ref), module_text(other), context):
        h.update(part.encode())
        h.update(b"\0")
    return cache_key(h.hexdigest(), "lineage")


@dataclass
class Memory:
    """The last lineage a pair's own runs found, for a later cut of the same pair in the same
    `verify` (its second witness: the same programs at other sizes, with the same value
    names), keyed by `shape_free`; passed from cut to cut, one entry.

    `proved`: the stage proofs of this `verify` that came out `equivalent`, by
    `stages.run.memo_key` (the stage's full hash and the proof options). The second witness
    proves the pair again at grown sizes, and a stage that holds no grown class is the very
    problem the first witness proved: its hash is equal, so it is looked up here rather than
    proved again (with `--no-cache` the proof cache cannot give it). A stage whose shapes
    differ has another hash and is proved: the key never leaves out a size."""

    shape_key: str = ""
    links: dict[str, Link] | None = None
    proved: dict[str, dict[str, Any]] = field(default_factory=dict)

    def last(self, shape_key: str) -> dict[str, Link] | None:
        return dict(self.links) if self.links is not None and self.shape_key == shape_key else None

    def remember(self, shape_key: str, links: dict[str, Link], cache: ProofCache, disk_key: str | None) -> None:
        """Keep the lineage here and, under `disk_key`, in the proof cache."""
        self.shape_key, self.links = shape_key, dict(links)
        if disk_key is not None:
            # [value, its reference value, layout] and, when it holds equal ones too, their list.
            cache.put(disk_key, {"kind": "lineage", "links": [[v, k.ref, _sharding_json(k.sharding)]
                                                              + ([list(k.also)] if k.also else [])
                                                              for v, k in links.items()]})


def load(cache: ProofCache, disk_key: str) -> dict[str, Link] | None:
    """The lineage kept on disk under `disk_key`, or None (missing, corrupt or foreign)."""
    record = cache.get(disk_key)
    if record is None or record.get("kind") != "lineage" or not isinstance(record.get("links"), list):
        return None
    links: dict[str, Link] = {}
    try:
        for v, r, s, *rest in record["links"]:
            also = tuple(rest[0]) if rest else ()
            if not isinstance(v, str) or not isinstance(r, str) or not all(isinstance(a, str) for a in also):
                return None
            links[v] = Link(r, _sharding(s), also)
    except (TypeError, ValueError, KeyError):
        return None
    return links


def holds(links: dict[str, Link], ref: Module, other: Module, inputs: list[np.ndarray], max_unroll: int,
          max_elements: int) -> bool:
    """Whether the outputs agree and every link holds on one run (a lineage kept at other
    sizes: a bug or a coincidence the new sizes show; the lineage's own search takes three
    runs and every layout of every value, this one run and one layout per link)."""
    try:
        r_vals = trace(ref, [inputs], max_unroll, max_elements)
        o_vals = trace(other, [inputs], max_unroll, max_elements)
    except TvError:
        return False
    if not outputs_agree(r_vals, o_vals, ref, other):
        return False
    for v, link in links.items():
        got = o_vals.get(v)
        if not got:
            return False
        value = got[0]
        if isinstance(value, tuple):
            if link.sharding is None:
                return False
            value = _assemble([np.asarray(p) for p in value], link.sharding)
            if value is None:
                return False
        for r in (link.ref, *link.also):  # the equal values a value holds as well (`Link.also`)
            want = r_vals.get(r)
            if not want or _error(want[0], value) > (LOOSE if r == link.ref else EXACT):
                return False
    return True


def _sharding_json(s: Sharding | None) -> Any:
    if s is None:
        return None
    return {"axes": [[a, k] for a, k in s.mesh.axes], "ids": list(s.mesh.device_ids),
            "dims": [list(d) for d in s.dims], "unreduced": list(s.unreduced)}


def _sharding(j: Any) -> Sharding | None:
    if j is None:
        return None
    if not isinstance(j, dict):
        raise ValueError("not a sharding")
    mesh = Mesh(tuple((str(a), int(k)) for a, k in j["axes"]), tuple(int(d) for d in j["ids"]))
    return Sharding(mesh, tuple(tuple(str(a) for a in d) for d in j["dims"]), tuple(str(a) for a in j["unreduced"]))

