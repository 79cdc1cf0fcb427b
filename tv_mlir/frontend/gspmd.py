"""GSPMD sharding strings (`mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"`)
read into the one `Sharding` model. The grammar is XLA's HloSharding text form:

    {replicated} | {manual} | {maximal device=N}
    {devices=[t0,...,tk]<=[n0,...]T(p0,...) [last_tile_dim_replicate | last_tile_dims={...}]}
    {devices=[t0,...,tk]id0,id1,... [...]}
    {{...}, {...}}   (a tuple: one sharding per result)

A tile dimension per tensor dimension becomes a mesh axis `d<i>`; trailing subgroup
dimensions become replication axes `r<j>` (or manual ones, which only full-manual
programs use). Size-1 axes are left out: they split nothing."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tv_mlir.ir import Mesh, Sharding

MANUAL = "manual"

_DEVICES = re.compile(r"devices=\[([0-9,\s]*)\]\s*(<=\[([0-9,\s]*)\](?:T\(([0-9,\s]*)\))?|([0-9,\s]+))")
_LAST_TILE_DIMS = re.compile(r"last_tile_dims=\{([^}]*)\}")
# `metadata={op_name="..." ...}`, or a list of such {...}: its strings are the user's (jax
# writes the Python source's names there) and may hold braces, so a quoted string is
# skipped whole. Reading up to the first `}` left `op_name="}devices=[2]<=[2]"` of a
# `{maximal device=0 metadata={...}}` behind, which then read as a tiling.
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_METADATA = re.compile(rf"metadata=\{{(?:[^{{}}\"]|{_QUOTED}|\{{(?:[^{{}}\"]|{_QUOTED})*\}})*\}}")
# What may follow the device list: the subgroup forms read below, nothing else.
_SUBGROUPS = re.compile(r"\s*(last_tile_dim_replicate|last_tile_dims=\{[^}]*\})?\s*")


class ShardingSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Maximal:
    """The whole tensor on one device."""

    device: int


def parse(text: str, rank: int, num_devices: int) -> Sharding | str | Maximal:
    """One non-tuple sharding for a tensor of `rank` dims on `num_devices` devices:
    a `Sharding`, `MANUAL`, or `Maximal`."""
    body = _strip_braces(text.strip())
    body = _METADATA.sub("", body).strip()
    if '"' in body:  # a string left outside metadata: not a sharding this reader knows
        raise ShardingSyntaxError(f"unreadable sharding {text!r}")
    if body in ("replicated", ""):
        return Sharding(Mesh((("r0", num_devices),)) if num_devices > 1 else Mesh(()), ((),) * rank)
    if body == MANUAL:
        return MANUAL
    m = re.fullmatch(r"maximal device=(\d+)", body)
    if m:
        return Maximal(int(m.group(1)))
    m = _DEVICES.match(body)
    if m is None or not _SUBGROUPS.fullmatch(body[m.end():]):
        raise ShardingSyntaxError(f"unreadable sharding {text!r}")
    tiles = [int(x) for x in m.group(1).split(",") if x.strip()]
    if m.group(2).startswith("<="):
        reshape = [int(x) for x in m.group(3).split(",") if x.strip()]
        ids = np.arange(int(np.prod(reshape))).reshape(reshape)
        if m.group(4):
            ids = ids.transpose([int(x) for x in m.group(4).split(",") if x.strip()])
        flat = ids.reshape(-1)
    else:
        flat = np.array([int(x) for x in m.group(5).split(",") if x.strip()])
    rest = body[m.end():]
    subgroups: list[str] = []
    if "last_tile_dim_replicate" in rest:
        subgroups = ["replicated"]
    lt = _LAST_TILE_DIMS.search(rest)
    if lt:
        subgroups = [s.strip() for s in lt.group(1).split(",") if s.strip()]
    if len(tiles) != rank + len(subgroups):
        raise ShardingSyntaxError(f"sharding {text!r} has {len(tiles)} tile dims for a rank-{rank} tensor")
    if int(np.prod(tiles)) != flat.size:
        raise ShardingSyntaxError(f"sharding {text!r}: {flat.size} devices for {int(np.prod(tiles))} tiles")
    if any(kind not in ("replicated", MANUAL) for kind in subgroups):
        raise ShardingSyntaxError(f"sharding {text!r}: subgroup kinds {subgroups} are not supported")
    if MANUAL in subgroups:
        raise ShardingSyntaxError(f"sharding {text!r} is partly manual, which is not supported")
    axes: list[tuple[str, int]] = []
    dims: list[tuple[str, ...]] = []
    for i, t in enumerate(tiles[:rank]):
        if t > 1:
            axes.append((f"d{i}", t))
            dims.append((f"d{i}",))
        else:
            dims.append(())
    for j, t in enumerate(tiles[rank:]):
        if t > 1:
            axes.append((f"r{j}", t))
    # A mesh over fewer devices than the program runs on: the others hold nothing.
    return Sharding(Mesh(tuple(axes), tuple(int(x) for x in flat)), tuple(dims))


def parse_tuple(text: str) -> list[str]:
    """The element strings of a tuple sharding `{{a}, {b}}`, or [text] for a single one."""
    t = text.strip()
    inner = _strip_braces(t)
    if not inner.startswith("{"):
        return [t]
    parts, depth, start = [], 0, 0
    quoted, escaped = False, False
    for i, ch in enumerate(inner):
        # A brace inside a metadata string (`op_name="}"`) neither opens nor closes one.
        if quoted:
            quoted, escaped = (escaped or ch != '"'), (not escaped and ch == "\\")
            continue
        if ch == '"':
            quoted = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                parts.append(inner[start:i + 1])
    return parts


def _strip_braces(t: str) -> str:
    if t.startswith("{") and t.endswith("}"):
        return t[1:-1].strip()
    raise ShardingSyntaxError(f"unreadable sharding {t!r}")
