"""The op census (`make census`, `python -m tv_mlir.census [PATH ...]`): every op the
programs under the given folders contain (testdata by default: the jax-exported models,
the flax train step, the hand-written pairs), how often and in how many files, and its
support status:

  semantics       a rule in `tv_mlir.semantics.TABLE` (a custom_call: a target that does
                  not change values), run by the SPMD executor, module structure, or a
                  shape computation of a shape-polymorphic export that the frontend
                  refines away (`tv_mlir.frontend.symshape`, jax's own refinement);
  unknown-tested  no semantics, and a test asserts that a program using it ends `unknown`
                  (`UNKNOWN_TESTED` names the test);
  unsupported     neither: a program with it ends `unknown` without a test saying so.

The programs are read with MLIR's own parser and walked as MLIR ops (nested regions
included), not through the frontend, so programs it declines (symbolic shapes) are counted
too. tests/test_census.py fails when a testdata program holds an unsupported op."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tv_mlir.errors import ParseError, Unsupported
from tv_mlir.frontend.read import ALIASES, mlir_context, parse_mlir, read_source
from tv_mlir.passes.complex import RULES as COMPLEX_RULES
from tv_mlir.semantics import TABLE
from tv_mlir.semantics.linalg import lapack_rule
from tv_mlir.semantics.ops import NOOP_CUSTOM_CALLS, ROUND_TRIP_CALLS, SHARD_CALLS, SPMD_OPS

SEMANTICS, UNKNOWN_TESTED_STATUS, UNSUPPORTED = "semantics", "unknown-tested", "unsupported"

# Ops (a custom_call as `stablehlo.custom_call @target`) without semantics whose `unknown`
# verdict a test asserts: op -> the test file that does (tests/test_census.py checks that the
# file exists and names the op).
UNKNOWN_TESTED: dict[str, str] = {
    # Stateful: a hidden generator state, no seed operand; equal operands draw different
    # numbers, so no sharing of equal arguments is sound. (stablehlo.rng_bit_generator, a
    # function of its state operand, has semantics: tv_mlir/semantics/random.py.)
    "stablehlo.rng": "tests/test_verify.py",
    # jax's CPU LAPACK calls other than potrf and trsm: LU, QR, eigh, SVD (tv_mlir/semantics/linalg.py)
    **{f"stablehlo.custom_call @lapack_s{r}_ffi": "tests/test_ops_xla_more.py"
       for r in ("getrf", "geqrf", "orgqr", "syevd", "gesdd")},
}

# Shardy's HLO round-trip form of sdy.manual_computation (and the ShardingGroup hint), which
# the frontend reads as one manual computation (tests/test_sdy_round_trip.py); its tuples'
# get_tuple_element is read only there.
ROUND_TRIP = frozenset({*(f"stablehlo.custom_call @{t}" for t in ROUND_TRIP_CALLS), "stablehlo.get_tuple_element"})
# Module structure: no values of their own.
# Files parsed into one MLIR context (a fresh context per file cost the census of
# testdata, ~1,260 files, 16 of its 20 s).
CONTEXT_BATCH = 200
STRUCTURE = frozenset({"builtin.module", "func.func", "func.return", "stablehlo.return", "sdy.mesh", "sdy.return"})
# Shape computations of shape-polymorphic exports: instantiating the module at concrete sizes
# folds them away (tests/test_symshape.py runs such programs).
SHAPE_REFINED = frozenset({"stablehlo.get_dimension_size", "stablehlo.dynamic_broadcast_in_dim",
                           "stablehlo.dynamic_reshape", "stablehlo.dynamic_iota",
                           "stablehlo.custom_call @shape_assertion"})


def op_key(op: Any) -> str:
    """An MLIR op's census name: its name, and a custom_call's target."""
    name = str(op.name)
    if name == "stablehlo.custom_call" and "call_target_name" in op.attributes:
        from jaxlib.mlir import ir

        return f"{name} @{ir.StringAttr(op.attributes['call_target_name']).value}"
    return name


def status(key: str) -> str:
    if key in UNKNOWN_TESTED:
        return UNKNOWN_TESTED_STATUS
    if key in SHAPE_REFINED or key in ROUND_TRIP:
        return SEMANTICS
    name, _, target = key.partition(" @")
    if target:
        return SEMANTICS if target in NOOP_CUSTOM_CALLS | SHARD_CALLS or lapack_rule(target) else UNSUPPORTED
    if name in TABLE or name in SPMD_OPS or name in STRUCTURE or name in COMPLEX_RULES or name in ALIASES:
        return SEMANTICS  # COMPLEX_RULES: rewritten into real ops; ALIASES: read as another op
    return UNSUPPORTED


@dataclass
class OpCount:
    key: str
    count: int = 0
    files: set[str] = field(default_factory=set)

    @property
    def status(self) -> str:
        return status(self.key)


@dataclass
class Census:
    ops: dict[str, OpCount] = field(default_factory=dict)
    programs: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file, why)

    def add(self, key: str, file: str) -> None:
        entry = self.ops.setdefault(key, OpCount(key))
        entry.count += 1
        entry.files.add(file)

    def with_status(self, s: str) -> list[OpCount]:
        return [c for c in self.ops.values() if c.status == s]


def _walk(op: Any) -> Iterator[Any]:
    yield op
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _walk(inner.operation)


def programs(roots: Iterable[Path]) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
        else:
            yield from sorted(p for p in root.rglob("*.mlir") if p.is_file())


def take(roots: Iterable[Path]) -> Census:
    """The census of the .mlir programs under `roots` (files or folders)."""
    census = Census()
    ctx = None
    for k, path in enumerate(programs(roots)):
        # One context per batch of files: a context keeps every attribute and type it has
        # seen until it goes, so a new one now and then bounds that.
        if k % CONTEXT_BATCH == 0:
            ctx = mlir_context()
        try:
            ctx, module = parse_mlir(read_source(str(path)), ctx)
        except (ParseError, Unsupported) as exc:  # testdata/bad holds broken inputs on purpose
            census.unreadable.append((str(path), str(exc).splitlines()[0][:120]))
            continue
        census.programs += 1
        with ctx:
            for op in _walk(module.operation):
                census.add(op_key(op), str(path))
    return census


def _note(key: str) -> str:
    if key in UNKNOWN_TESTED:
        return f" ({UNKNOWN_TESTED[key]})"
    if key in ROUND_TRIP:
        return " (Shardy's round-trip form, read as sdy.manual_computation)"
    return " (refined away by the frontend)" if key in SHAPE_REFINED else ""


def render(census: Census) -> str:
    order = {SEMANTICS: 2, UNKNOWN_TESTED_STATUS: 1, UNSUPPORTED: 0}
    rows = sorted(census.ops.values(), key=lambda c: (order[c.status], c.key))
    width = max((len(c.key) for c in rows), default=10)
    lines = [f"{'op':<{width}}  {'count':>7}  {'files':>5}  status"]
    lines += [f"{c.key:<{width}}  {c.count:>7}  {len(c.files):>5}  {c.status}{_note(c.key)}" for c in rows]
    counts = {s: len(census.with_status(s)) for s in (SEMANTICS, UNKNOWN_TESTED_STATUS, UNSUPPORTED)}
    lines.append(f"{census.programs} programs, {len(rows)} distinct ops: {counts[SEMANTICS]} with semantics, "
                 f"{counts[UNKNOWN_TESTED_STATUS]} unknown-tested, {counts[UNSUPPORTED]} unsupported")
    if census.unreadable:
        lines.append(f"{len(census.unreadable)} files not read: "
                     + ", ".join(f"{f} ({why})" for f, why in census.unreadable))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tv_mlir.census", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["testdata"], help="folders or .mlir files (default: testdata)")
    args = parser.parse_args(argv)
    census = take(Path(p) for p in args.paths)
    print(render(census))
    return 1 if census.with_status(UNSUPPORTED) else 0


if __name__ == "__main__":
    sys.exit(main())
