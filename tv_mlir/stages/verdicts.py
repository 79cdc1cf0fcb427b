"""Whole `equivalent` verdicts in the proof cache: a warm re-run of an unchanged pair costs
reading both files and hashing them (docs/stages.md, "The warm run").

Without it a warm run of the 126-layer stack still parsed, ran the pass pipeline, shrank
the pair twice (once per witness) and rebuilt and hashed 22,000 stages before its first
cache look-up: minutes, all to reach stage proofs it already had.

The key is both programs' bytes as read, the tool's source (`run.tool_fingerprint`: a
changed rule must not inherit an old verdict) and every option but those that only say
how to run (jobs, executor, progress, where the cache is). Only `equivalent` is kept. It
is a proof: of these very programs, by this very code, under these very options, so it
holds on the next run as well. Random draws only guide a proof, they are not part of
what it shows, so a re-run that drew otherwise proves the same claim. Nothing else is
kept: an `unknown` may become a proof with more time, and a `not-equivalent` carries a
counterexample worth replaying."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from typing import Any

from tv_mlir.frontend.read import Loaded
from tv_mlir.ir import Module
from tv_mlir.options import Options
from tv_mlir.stages.cache import ProofCache, cache_key
from tv_mlir.stages.run import tool_fingerprint
from tv_mlir.verdict import FullSizeCheck, OutputResult, Verdict

# Off when "0": the test suite runs one pair many ways in one process (semantics mutated by
# a monkeypatch the key cannot see, stage-level warm runs); tests/conftest.py sets it.
SWITCH = "TV_MLIR_KEEP_VERDICTS"

# Options that change how a run goes, not what its verdict claims.
HOW_TO_RUN = frozenset({"jobs", "executor", "progress", "cache_dir", "cache"})


def key(ref: Module | Loaded, other: Module | Loaded, symbolic: list[Any], options: Options) -> str | None:
    """The cache key of a pair as read, None when there is none to trust: a module given
    in memory (no bytes as read), or a pipeline read from a file (not in the tool's source);
    None too when the cache or the switch is off."""
    if not options.cache or os.environ.get(SWITCH, "1") == "0":
        return None
    ref, other = (m.module if isinstance(m, Loaded) else m for m in (ref, other))
    if not ref.text or not other.text or "/" in options.pipeline or options.pipeline.endswith(".txt"):
        return None
    h = hashlib.sha256()
    for part in (ref.text, other.text):
        h.update(hashlib.sha256(part).digest())
    said = {f.name: repr(getattr(options, f.name)) for f in dataclasses.fields(options) if f.name not in HOW_TO_RUN}
    h.update(json.dumps([said, symbolic, tool_fingerprint()], sort_keys=True).encode())
    return cache_key(h.hexdigest(), "whole verdict")


def lookup(options: Options, k: str | None) -> Verdict | None:
    """The verdict kept under `k`, marked as taken from the cache; None on a miss or an
    entry that does not read back as an `equivalent` verdict."""
    if k is None:
        return None
    record = ProofCache.open(options.cache_dir, enabled=options.cache).get(k)
    if record is None or record.get("kind") != "whole verdict":
        return None
    try:
        v = _from_dict(record["verdict"])
    except (KeyError, TypeError, ValueError):
        return None
    if v.verdict != "equivalent" or v.counterexample is not None:
        return None
    v.stats = {**v.stats, "verdict_from_cache": True}
    if v.stages and v.stages.get("used"):
        n = v.stages.get("count", 0)
        v.stages = {**v.stages, "proved": 0, "reused": 0, "cached": n, "verdict_from_cache": True,
                    "list": [{**r, "how": "cached", "time_s": 0.0} for r in v.stages.get("list", [])]}
        # The reason's stage counts are the cold run's: say what this run did.
        v.reason = re.sub(r"\(\d+ proved, \d+ reused, \d+ from the cache\)",
                          f"(0 proved, 0 reused, {n} from the cache)", v.reason)
    v.reason += " (the whole verdict from the proof cache)"
    return v


def keep(options: Options, k: str | None, v: Verdict) -> None:
    """Keeps a finished verdict under `k`: only an `equivalent` one, and only of a staged
    proof (a pair proved whole costs about as much again as reading its kept verdict)."""
    if k is None or v.verdict != "equivalent" or v.counterexample is not None or not (v.stages or {}).get("used"):
        return
    ProofCache.open(options.cache_dir, enabled=options.cache).put(k, {"kind": "whole verdict", "verdict": v.to_dict()})


def _from_dict(d: dict[str, Any]) -> Verdict:
    names = {f.name for f in dataclasses.fields(Verdict)}
    if set(d) - names or "verdict" not in d or "reason" not in d:
        raise ValueError("not a verdict")
    fsc = d.get("full_size_check")
    return Verdict(**{**d, "outputs": [OutputResult(**o) for o in d.get("outputs", [])],
                      "counterexample": None if d.get("counterexample") is None else _no(),
                      "full_size_check": None if fsc is None else FullSizeCheck(**fsc)})


def _no() -> Any:
    raise ValueError("a kept verdict has no counterexample")
