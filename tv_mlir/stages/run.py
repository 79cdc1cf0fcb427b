"""Staged proof of a prepared pair: cut both programs at matched values, prove each stage
pair once per structural hash (from the disk cache when an earlier run proved it), in
parallel, and chain the stage proofs.

The chain is the proof: the prologue stage proves the other program's argument-derived
values hold their reference values; stage k proves that when its inputs hold their
reference values so do its outputs; the last stage's outputs are the programs' outputs
(with their replica obligations). Stage inputs are free variables, so a stage proof is
stronger than what the chain needs, never weaker: a stage that fails may fail only for
inputs no program input reaches. So a failed stage is not the verdict: a difference the
random runs show at program inputs is reported as such; a stage with a counterexample at
its free inputs is proved again as a longer span with the stages before it (`_widen`:
the inputs it took as any value are then computed); failing that, the pair is proved whole
(which finds and confirms a counterexample at program inputs, or shows the stage's failure
unreachable), and the verdict names the stage that failed first."""
from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

import tv_mlir
from tv_mlir.assume import FloatRange, Resolved
from tv_mlir.assume import resolve as resolve_bounds
from tv_mlir.assume import signs as assume_signs
from tv_mlir.driver import MAX_ELEMENTS, prove_pair
from tv_mlir.errors import TvError
from tv_mlir.execute.runs import KnownRuns, Run
from tv_mlir.heap import full_collections_at_end
from tv_mlir.ir import Module, Op
from tv_mlir.options import Options
from tv_mlir.passes.normalize import cse
from tv_mlir.progress import progress
from tv_mlir.prove.fingerprints import random_inputs
from tv_mlir.semantics.ops import CALLS
from tv_mlir.stages import lift as lift_runs
from tv_mlir.stages import lineage, reuse
from tv_mlir.stages.bar import StageBar
from tv_mlir.stages.cache import ProofCache, cache_key
from tv_mlir.stages.chain import Chain, op_order
from tv_mlir.stages.diverge import divergence_stage
from tv_mlir.stages.extract import NotFormed, StagePair, _types, build
from tv_mlir.stages.finite import NONNEG, POS, finite_and_signed
from tv_mlir.stages.flat import flatten
from tv_mlir.stages.hashing import stage_hash
from tv_mlir.stages.lanes import fold_lanes
from tv_mlir.stages.lift import numeric_witness
from tv_mlir.stages.locate import Located, in_loop
from tv_mlir.stages.loops import induction, is_loop_stage
from tv_mlir.stages.peel import peel_output_pads
from tv_mlir.stages.plan import Side, choose_cuts, largest, region_uses, scheduled
from tv_mlir.stages.pool import Executor, Job, run_jobs
from tv_mlir.stages.prologue import by_layout
from tv_mlir.stages.ranges import Ranges, value_ranges
from tv_mlir.stages.same import same_program
from tv_mlir.verdict import Counterexample, OutputResult, Verdict

# A pair cut into fewer stages than this is proved whole: cutting costs a numeric run and
# the lineage search, and buys nothing for one or two stages.
MIN_STAGES = 3
# Cut the other program in the reference's order when that cuts it finer (`plan.scheduled`).
# Top-level pairs only: a stage that fails at free inputs there is proved again as a span
# with the stages before it (`_widen`), but a loop body's chain has no such second try
# (its links are one induction), so a finer body cut that splits a value from the copy it
# equals only in the body (the partitioned scan's weight slice) would fail for good; the
# body keeps the program's order (docs/stages.md, "The other program in the reference's
# order").
SCHEDULE = True
# A cut whose largest stage holds at least this share of the reference's ops is proved whole
# too: that stage's proof does the whole proof's work, over cut inputs that carry fewer
# facts than the values they stand for (a flax train step's last stage held 498 of its 505
# ops and took 2.2 s more CPU than the whole pair). Proving whole is the same proof the
# stages would chain to; only the stage report is lost.
DOMINANT_SHARE = 0.9
# Past this many tensor elements in one program (its values on the lineage's runs are kept
# in memory: 8 bytes per element per run, 3 runs) the pair is not cut; the whole proof has
# its own, smaller budget. The 126-layer fwd+bwd stack of testdata/depth has 73 M elements
# in the reference and 114 M in the sharded program (per device, 8 devices): 8.4 GB at peak.
MAX_CUT_ELEMENTS = 200_000_000
# A stage's program is refused past this many tensor elements (the whole proof's budget).
MAX_STAGE_ELEMENTS = MAX_ELEMENTS
# A pair with an op over MAX_STAGE_ELEMENTS (`over_any_stage`) and a reference over this many
# tensor elements is not cut: no stage can hold that op, and the lineage's runs of such a
# pair cost a minute and GBs (helper-54; the 8B fwd+bwd at 1.4e8 elements: 65 s CPU, 6.5 GB).
# Below it the runs are cheap and the lift's numeric search may still find a bug.
REFUSE_ELEMENTS = 20_000_000
# The elements one numeric run of a program may compute (the interpreter's budget for the
# lineage's runs, the kept lineage's check and the lift's runs). It bounds time, not memory:
# the lineage keeps the top-level values only (bounded by MAX_CUT_ELEMENTS above), and a loop
# body's values are dropped after each trip. A scan that writes one layer's slice into a
# stacked activation each trip (`dynamic_update_slice`) is counted the whole stack per trip:
# the 405B scan of testdata/depth computes 1.0 G elements in the reference and 1.2 G in the
# sharded program per run (2.9 and 6.7 s CPU), at 99 M elements held. ~5 ns an element:
# this budget is ~10-20 s of one run.
MAX_RUN_ELEMENTS = 2_500_000_000
# Ops whose regions are control flow: their results are not "made like" a reference
# value by their operands (`_cut`).
CONTROL_FLOW = frozenset({"stablehlo.while", "stablehlo.if", "stablehlo.case"})
# The lineage's runs of a pair are kept for its whole proof, which then makes two of its
# eight fingerprint runs fewer (`_shares_runs`, `driver._trace`; docs/stages.md, "The flax
# train step's costs, round 2"). The switch the tests flip.
SHARE_RUNS = True
# A stage that fails at free inputs is proved again with up to this many links before it
# (`_widen`) before the pair is proved whole.
MAX_WIDEN = 3


@dataclass
class StageRecord:
    """One stage in the verdict's `stages` list."""

    index: int
    name: str
    hash: str
    how: str  # proved | reused | cached
    verdict: str
    reason: str
    time_s: float
    ref_ops: int
    other_ops: int
    locs: list[str] = field(default_factory=list)
    first_divergence: dict[str, Any] | None = None  # from the stage's own counterexample
    lanes: list[int] = field(default_factory=list)  # dims proved at one position (stages/lanes.py)

    def as_dict(self) -> dict[str, Any]:
        """`dataclasses.asdict`'s dict, built directly: asdict copies every field
        recursively, 0.3 s CPU for the 22,121 records of the 126-layer stack, per summary."""
        d = dict(vars(self))
        d["locs"], d["lanes"] = list(self.locs), list(self.lanes)
        d["first_divergence"] = copy.deepcopy(self.first_divergence)
        return d


def prove_staged(ref: Module, other: Module, options: Options, sizes: Mapping[int, int] | None = None,
                 memory: reuse.Memory | None = None) -> Verdict:
    """The verdict for a prepared pair, by stages where the pair can be cut (see the module
    docstring), else by `driver.prove_pair` on the whole.

    memory: where this pair's cut keeps its lineage, and where the cut of the same pair at
    other sizes kept its own (the second witness takes it rather than run both programs
    again). A lineage kept there or in the proof cache (stages/reuse.py) is only evidence,
    so this is sound whatever it holds; if the stages do not all prove, the pair is cut
    again from its own runs and proved as any other."""
    if sizes:
        options = replace(options, by_cases=False)  # shrunk programs: Options.by_cases
    if not options.stages:
        return prove_pair(ref, other, options, sizes)
    # The cut and its stages build objects that live until the verdict (the flat program,
    # the lineage, every stage's module and record): CPython's automatic full collections
    # walked them again and again, ~7 s CPU of ~130 on the 126-layer stack (docs/stages.md,
    # "Where the 405B pair's time went"). Little of it is garbage before the end.
    with full_collections_at_end():
        return _prove_staged(ref, other, options, sizes, memory)


def _prove_staged(ref: Module, other: Module, options: Options, sizes: Mapping[int, int] | None,
                  memory: reuse.Memory | None) -> Verdict:
    memory = reuse.Memory() if memory is None else memory
    t0 = time.perf_counter()
    over = over_any_stage(ref)
    if over and _elements(ref) > REFUSE_ELEMENTS:
        # Refused before the lineage's runs, which cost the 8B fwd+bwd 65 s CPU and 6.5 GB to
        # end at the same `unknown` (docs/jax.md, "At Llama-3-8B widths"). Smaller pairs are
        # still cut: their runs cost seconds, and the lift may find a bug on them.
        whole = prove_pair(ref, other, options, sizes)
        whole.stages = {"used": False, "reason": f"not cut: {over}"}
        return whole
    cut = _safe_cut(ref, other, options, sizes, True, memory)
    if cut.reused:
        verdict = _prove_cut(ref, other, options, sizes, cut, t0, tentative=True)
        if verdict is not None:
            assert verdict.stages is not None
            verdict.stages["lineage"] = f"from {cut.reused}"
            if cut.keep is not None:  # proved: kept for the second witness and under these programs' key
                cut.keep()
            return verdict
        progress(options, "the reused lineage did not prove the pair: cutting it from its own runs")
        cut = _safe_cut(ref, other, options, sizes, False, memory)
    verdict = _prove_cut(ref, other, options, sizes, cut, t0)
    assert verdict is not None
    return verdict


def _dominant(stages: Sequence[Any]) -> int:
    """The ops of a stage that holds DOMINANT_SHARE of the reference's ops, else 0."""
    total = sum(st.ref_ops for st in stages)
    most = max((st.ref_ops for st in stages), default=0)
    return most if total and most >= DOMINANT_SHARE * total else 0


def _safe_cut(ref: Module, other: Module, options: Options, sizes: Mapping[int, int] | None,
              allow_reuse: bool, memory: reuse.Memory) -> Cut:
    try:
        cut = _cut(ref, other, options, sizes, allow_reuse, memory)
    except TvError as exc:  # an op the numeric runs do not know: the whole proof reports it
        cut = Cut([], f"not cut: {exc.one_line()}")
    cut.proved = memory.proved
    return cut


def _prove_cut(ref: Module, other: Module, options: Options, sizes: Mapping[int, int] | None, cut: Cut,
               t0: float, tentative: bool = False) -> Verdict | None:
    """The verdict by the cut's stages; `tentative` (a reused lineage): None unless every
    stage proves, before any lifting, widening or whole proof."""
    stages = cut.stages
    if tentative and (len(stages) < MIN_STAGES or not cut.chain):
        return None
    dominant = _dominant(stages)
    if tentative and dominant:
        return None
    if not tentative and cut.outputs_agree and lift_runs.SCALED_RUNS and cut.input_sets:
        # The unit-scale runs agree; a bug that only small values show (a clip by norm, an
        # eps) is caught here, before any stage or whole proof: a few runs of both programs,
        # when they are cheap (`lift.EARLY_SCALED_ELEMENTS`; else at a failed stage's lift).
        runs = len(lift_runs.SCALE_POWERS) * len(cut.input_sets[lineage.RUNS])
        if runs * max(_elements(ref), _elements(other)) <= lift_runs.EARLY_SCALED_ELEMENTS:
            scaled = _lift_scaled(ref, other, options, cut, t0)
            if scaled is not None:
                return scaled
    if (len(stages) < MIN_STAGES or dominant) and not any(s.loop for s in stages):
        why = cut.why or f"{len(stages)} stage(s): proved whole"
        if dominant and len(stages) >= MIN_STAGES:
            total = sum(st.ref_ops for st in stages)
            why = f"one of {len(stages)} stages holds {dominant} of the reference's {total} ops: proved whole"
        summary: dict[str, Any] = {"used": False, "reason": why}
        loop = next((op for op in ref.main.body.ops if op.name == "stablehlo.while"), None)
        if loop is not None and cut.input_sets:
            # A loop not proved by induction is unrolled by the whole proof, at a cost that
            # grows with its trips: a bug the random runs show is reported without it.
            record = StageRecord(0, "the loop", "", "", "unknown", "not proved by induction", 0.0, 1, 1,
                                 [loop.loc] if loop.loc else [])
            role = "that fails"
            if cut.located is not None:  # the trip and the body op where the runs show the loops part
                record = _located_record(record, "", cut.located, other.source, summary)
                role = "where the random runs first differ"
            lifted = _lift(ref, other, options, cut, record, summary, role)
            if lifted is not None:
                return lifted
        verdict = prove_pair(ref, other, options, sizes, cut.known)
        verdict.stages = summary
        if cut.located is not None and verdict.verdict != "equivalent":
            verdict.reason += f"; the random runs first differ in {cut.located.stage()} at {cut.located.loc}"
        return verdict
    # Staged: the kept runs are not held through the stage proofs (a whole proof after a
    # failed stage makes its own).
    cut.known = None
    progress(options, f"cut into {len(stages)} stages ({time.perf_counter() - t0:.1f} s)")
    if not cut.outputs_agree and not any(s.loop for s in stages):
        # Every cut value held its reference value on the lineage's runs, so an output that
        # did not differs in the last stage: lift it first rather than prove every stage
        # (the last one, from the bug to the outputs, is the largest and the hardest).
        # Loop stages are not a chain (body and condition by induction): they are proved.
        last = stages[-1]
        at = cut.divergence
        first = {"op": at.name, "loc": at.loc, "program": other.source, "stage": last.name} if at else None
        record = StageRecord(len(stages) - 1, last.name, "", "", "not-equivalent",
                             "the random runs differ at its outputs", 0.0, last.ref_ops, last.other_ops,
                             list(last.locs[:3]), first)
        early: dict[str, Any] = {"used": True, "count": len(stages), "proved": 0, "reused": 0, "cached": 0,
                                 "time_s": round(time.perf_counter() - t0, 3), "list": []}
        if cut.located is not None:  # the first unlinked op is a loop: where inside it the runs part
            record = _located_record(record, f"{last.name}: ", cut.located, other.source, early)
        lifted = _lift(ref, other, options, cut, record, early, "where the random runs first differ")
        if lifted is not None:
            early["failed"] = {"stage": record.index, "name": record.name, "verdict": record.verdict,
                               "reason": record.reason, "locs": record.locs}
            return lifted
    # The reference's integer and i1 values within the program inputs' bounds: a stage input
    # is narrowed to its interval, and a select on a decided condition is its branch.
    ranges = value_ranges(ref, [None if isinstance(b, FloatRange) else b for b in cut.bounds])  # integers'
    decided = ranges.decided()
    # CSE keeps first names: these name the stages' values too.
    finite, signs = finite_and_signed(ref, options.inputs == "finite", decided, assume_signs(cut.bounds))
    records, results = _prove_stages(stages, options, finite, signs, ranges, cut.proved)
    summary = _summary(records, time.perf_counter() - t0)
    if cut.by_layout:
        summary["prologue_by_layout"] = cut.by_layout
    failed = _first_failure(records)
    if failed is None:
        return _equivalent(ref, records, results, summary, options)
    if tentative:
        return None
    if not cut.outputs_agree:
        failed = _diverging(cut, options, finite, signs, ranges, summary) or failed
    summary["failed"] = {"stage": failed.index, "name": failed.name, "verdict": failed.verdict,
                         "reason": failed.reason, "locs": failed.locs[:5]}
    # When the lineage's runs showed the outputs differ, the bug is lifted first. When they
    # agreed, the lift (both programs on every random run, then on the scaled runs) waits
    # until widening has not covered the failed stage: a stage that fails at free inputs is
    # most often a correct pair's (its inputs taken as any reals), which widening proves in
    # a fraction of what 20 runs of a large pair cost (the 405B scan's second witness: 64%
    # of its CPU), and a covered stage leaves no bug to find.
    lift_first = not cut.outputs_agree
    if lift_first:
        lifted = _lift(ref, other, options, cut, failed, summary)
        if lifted is not None:
            return lifted
    spans = _widen(cut, records, options, finite, signs, summary, ranges)
    if spans is not None:
        summary["time_s"] = round(time.perf_counter() - t0, 3)
        summary["covered"] = summary.pop("failed")
        return _equivalent(ref, records, {**results, **spans}, summary, options)
    if not lift_first:
        lifted = _lift(ref, other, options, cut, failed, summary)
        if lifted is not None:
            return lifted
    progress(options, f"{failed.name} is {failed.verdict} ({failed.reason}); proving the pair whole")
    verdict = prove_pair(ref, other, options, sizes)
    summary["whole"] = verdict.verdict
    verdict.stages = summary
    if verdict.verdict != "equivalent":
        where = f" (first at {failed.locs[0]})" if failed.locs else ""
        verdict.reason += f"; the first stage that fails is {failed.name}{where}"
    return verdict


def _located_record(record: StageRecord, prefix: str, located: Located, program: str,
                    summary: dict[str, Any]) -> StageRecord:
    """`record` renamed for the loop trip and body op where the random runs show the
    programs part (stages/locate.py), that op's record as its first divergence; the
    summary keeps the record too (`located`), so that a verdict the lift does not make
    still says it."""
    first = {**located.divergence(program), "stage": prefix + located.stage()}
    summary["located"] = first
    return replace(record, name=prefix + located.stage(), locs=[located.loc, *record.locs[:2]],
                   first_divergence=first)


def _diverging(cut: Cut, options: Options, finite: set[str], signs: dict[str, int], ranges: Ranges | None,
               summary: dict[str, Any]) -> StageRecord | None:
    """The last link cut short at the other program's first unlinked value, claiming its
    structural counterpart (stages/diverge.py), when that claim fails with a counterexample
    at the stage's inputs: the stage to name for a pair whose outputs differ on the runs
    (the last link itself may run from the bug to the outputs, past any budget). Only a
    name: the verdict is still the lift's, the widened spans' or the whole proof's."""
    if cut.chain is None or cut.divergence is None:
        return None
    stage = divergence_stage(cut.chain, cut.divergence)
    if stage is None:
        return None
    records, _ = _prove_stages([stage], options, finite, signs, ranges, cut.proved)
    rec = replace(records[0], index=len(cut.stages) - 1)
    summary["divergence"] = asdict(rec)
    return rec if rec.verdict == "not-equivalent" else None


def _widen(cut: Cut, records: list[StageRecord], options: Options, finite: set[str], signs: dict[str, int],
           summary: dict[str, Any], ranges: Ranges | None = None) -> dict[str, dict] | None:
    """Stages that failed at free inputs, proved again as spans with the links before them
    (one more link per round, up to MAX_WIDEN): the values they took as any real (p = x*x + 1
    as any p) are then computed from the span's inputs.

    The chain then holds when the links are a sequence of consecutive segments, each a
    proved stage or a proved span (`_segments`): a segment's inputs are values live across
    its first cut, made by an earlier segment and live across that one's last cut, so
    among its outputs. Overlapping spans would not do: one span may take as input a value
    that a failed link makes and that the span covering that link does not return.
    Returns, when the segments reach the end: the used spans' results by hash, the last
    one's also under the last stage's hash (it stands for the programs' outputs); else
    None and the pair goes on to the whole proof. Only counterexamples are widened: a stage
    that timed out or passed a budget would only grow harder; so is neither the prologue
    nor a loop proved by induction."""
    chain = cut.chain
    failed = [r for r in records if r.verdict != "equivalent"]
    if chain is None or not failed or any(
            r.verdict != "not-equivalent" or cut.chain_index[r.index] in cut.loop_links | {None} for r in failed):
        return None
    open_ = sorted({k for r in failed if (k := cut.chain_index[r.index]) is not None})
    bad = set(open_)
    segments: dict[tuple[int, int], str | None] = {(k, k): None for k in range(chain.length) if k not in bad}
    results: dict[str, dict] = {}
    tried: list[dict[str, Any]] = []
    summary["widened"] = tried
    for w in range(1, MAX_WIDEN + 1):
        spans = sorted({(k - w, k) for k in open_
                        if k >= w and not any(j in cut.loop_links for j in range(k - w, k + 1))})
        pairs: list[StagePair] = []
        built: list[tuple[int, int]] = []
        for k0, k1 in spans:
            name = f"stages {k0 + 1}-{k1 + 1} of {chain.length}"
            try:
                pairs.append(chain.span(name, k0, k1))
                built.append((k0, k1))
            except NotFormed as exc:
                tried.append({"name": name, "verdict": "unknown", "reason": f"not formed: {exc}"})
        if not pairs:
            break
        progress(options, f"{len(open_)} stage(s) failed at free inputs: proving {len(pairs)} span(s) of "
                          f"{w + 1} stages")
        recs, res = _prove_stages(pairs, options, finite, signs, ranges, cut.proved)
        for span, rec in zip(built, recs):
            tried.append({"name": rec.name, "hash": rec.hash, "how": rec.how, "verdict": rec.verdict,
                          "reason": rec.reason, "time_s": rec.time_s})
            if rec.verdict == "equivalent":
                segments[span] = rec.hash
                results[rec.hash] = res[rec.hash]
        used = _segments(segments, chain.length)
        if used is not None:
            out = {h: results[h] for h in used if h is not None}
            if used[-1] is not None:
                out[records[-1].hash] = results[used[-1]]
            return out
    return None


def _segments(proved: dict[tuple[int, int], str | None], n: int) -> list[str | None] | None:
    """Links 0..n-1 as consecutive proved segments (first, last link) -> span hash (None:
    the link's own stage): the segments' hashes in order, or None when they cannot reach
    the end. Linear in the segments: a 126-layer plan has 20,000 links."""
    by_start: dict[int, list[tuple[int, str | None]]] = {}
    for (a, b), h in proved.items():
        by_start.setdefault(a, []).append((b + 1, h))
    came: dict[int, tuple[int, str | None]] = {}  # cut reached -> (the segment's first link, its hash)
    for start in range(n):
        if start != 0 and start not in came:
            continue
        for end, h in by_start.get(start, []):
            came.setdefault(end, (start, h))
    if n not in came:
        return None
    out: list[str | None] = []
    at = n
    while at != 0:
        at, h = came[at]
        out.append(h)
    return out[::-1]


def _first_failure(records: list[StageRecord]) -> StageRecord | None:
    """The stage to name for a difference: the first with a counterexample at its inputs
    (a stage whose proof only ran out of time is likelier to be right), else the first
    that is not proved."""
    failed = [r for r in records if r.verdict != "equivalent"]
    return next((r for r in failed if r.verdict == "not-equivalent"), failed[0] if failed else None)


def _lift(ref: Module, other: Module, options: Options, cut: Cut, failed: StageRecord,
          summary: dict[str, Any], role: str = "that fails") -> Verdict | None:
    """The failed stage's bug at program inputs from the random runs (stages/lift.py),
    then, when they agree, from the scaled runs; located by the stage's own proof."""
    if not cut.input_sets:
        return None
    # The random-normal runs first: small integers tie more often.
    sets = cut.input_sets[1:] + cut.input_sets[:1]
    c = numeric_witness(ref, other, sets, cut.names, options.max_unroll, MAX_RUN_ELEMENTS, cut.bounds)
    if c is None:
        if cut.outputs_agree and lift_runs.SCALED_RUNS and not cut.scaled_tried:
            return _lift_scaled(ref, other, options, cut, time.perf_counter(), failed, summary)
        return None
    where = f" at {failed.locs[0]}" if failed.locs else ""
    c.first_divergence = {**_stage_divergence(failed, other), "stage": failed.name}
    summary["lifted"] = True
    reason = (f"output {c.output} differs at index {c.index} (found on a random input, minimised and replayed on "
              f"XLA); the first stage {role} is {failed.name}{where}")
    return _lifted_verdict(c, reason, "a random run differs", options, summary)


def _stage_divergence(failed: StageRecord, other: Module) -> dict[str, Any]:
    """A failed stage's own first divergence, else the stage itself at its first line."""
    return failed.first_divergence or {
        "op": None, "loc": failed.locs[0] if failed.locs else "", "program": other.source, "stage": failed.name}


def _lifted_verdict(c: Counterexample, reason: str, detail: str, options: Options,
                    summary: dict[str, Any]) -> Verdict:
    """`not-equivalent` for a random run's difference lifted to program inputs."""
    v = Verdict("not-equivalent", reason, counterexample=c,
                outputs=[OutputResult(c.output, "not-equivalent", detail=detail, what=c.what)],
                stats={"pipeline": options.pipeline})
    v.stages = summary
    v.inputs = options.inputs
    return v


def _lift_scaled(ref: Module, other: Module, options: Options, cut: Cut, t0: float,
                 failed: StageRecord | None = None, summary: dict[str, Any] | None = None) -> Verdict | None:
    """A difference on the lineage's random-normal runs with their floats scaled by 2^-k
    (`lift.scaled_runs`), lifted as `_lift` does (minimised, confirmed on XLA) when one
    shows; None otherwise. Before the stages no stage is named (the lineage saw the
    programs agree, so the cut says nothing of where they part); after, `failed` is."""
    cut.scaled_tried = True
    runs = lift_runs.scaled_runs(cut.input_sets[lineage.RUNS], cut.bounds)
    t = time.perf_counter()
    c = numeric_witness(ref, other, [r.arrays for r in runs], cut.names, options.max_unroll, MAX_RUN_ELEMENTS,
                        cut.bounds, found_by=[r.found_by for r in runs])
    progress(options, f"{len(runs)} scaled random runs: {'a difference' if c else 'agree'} "
                      f"({time.perf_counter() - t:.1f} s)")
    if c is None:
        return None
    if summary is None:
        summary = {"used": True, "count": len(cut.stages), "proved": 0, "reused": 0, "cached": 0,
                   "time_s": round(time.perf_counter() - t0, 3), "list": []}
    summary.update(lifted=True, scaled=c.found_by)
    where = "so no stage is named"
    if failed is not None:
        c.first_divergence = _stage_divergence(failed, other)
        where = f"the first stage that fails is {failed.name}" + (f" at {failed.locs[0]}" if failed.locs else "")
    reason = (f"output {c.output} differs at index {c.index} (found on a {c.found_by}, its float inputs times "
              f"that power of two, minimised and replayed on XLA); the unit-scale random runs agree, {where}")
    return _lifted_verdict(c, reason, "a scaled random run differs", options, summary)


@dataclass
class Cut:
    """A pair cut into stages, with what the cutting computed that a failure needs again."""

    stages: list[StagePair]
    why: str  # why the pair is not cut ("" when it is)
    input_sets: list[list[np.ndarray]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    bounds: list[Resolved] = field(default_factory=list)
    outputs_agree: bool = True  # the other's outputs held the reference's on the lineage's runs
    divergence: Op | None = None  # when they did not: the first op whose value matched none
    located: Located | None = None  # when that op is a loop: the trip and body op where the loops part
    chain: Chain | None = None  # the cuts, to build longer spans of them (`_widen`)
    chain_index: list[int | None] = field(default_factory=list)  # per stage: its link of the chain (not the prologue)
    loop_links: set[int] = field(default_factory=set)  # links proved by induction (several stages each)
    reused: str = ""  # where the lineage came from when not from this pair's runs (stages/reuse.py)
    keep: Callable[[], None] | None = None  # keeps a reused lineage once its stages proved
    proved: dict[str, dict] | None = None  # stage proofs of this verify by `memo_key` (`reuse.Memory.proved`)
    by_layout: int = 0  # prologue values held by their arguments' layouts, not proved (stages/prologue.py)
    scaled_tried: bool = False  # the scaled random runs were compared (`_lift_scaled`): not again
    known: KnownRuns | None = None  # the lineage's runs, for the whole proof of the same programs


def too_large_to_cut(ref: Module, other: Module) -> bool:
    """Whether `_cut` refuses the pair for its size (the other program as flattened)."""
    flat = flatten(other)
    return flat.ok and max(_elements(ref), _elements(flat.module)) > MAX_CUT_ELEMENTS


def over_any_stage(ref: Module) -> str:
    """Why no staged proof of the pair can be `equivalent` (else ""): an op of the reference
    whose result alone is over the encoding's budget (`driver.MAX_ELEMENTS`, the tensor
    elements of a stage's program, which counts its ops' results). Every op of the reference
    is in one stage (or in the prologue), that stage is then refused as too large to encode,
    so is every wider span of stages around it, and so is the whole proof; the lineage's
    numeric runs (the largest cost of a cut) would only find that out. What the refusal
    gives up is the lift's numeric search for a counterexample at the shrunk sizes (an
    `unknown` either way when there is none). Decided from the reference alone: it is a
    global program, one element per element (the other program is per device or flattened
    over its devices)."""
    for f in ref.funcs.values():
        for op in f.body.walk():
            for t in op.result_types:
                if t.size > MAX_STAGE_ELEMENTS and op.name != "stablehlo.constant":
                    return (f"{op.name} at {op.loc} has {t.size} tensor elements, over the "
                            f"{MAX_STAGE_ELEMENTS} a stage may encode")
    return ""


def _elements(m: Module) -> int:
    devices = m.num_devices if m.per_device else 1
    return sum(t.size * devices for f in m.funcs.values() for op in f.body.walk() for t in op.result_types)


def _cut(ref: Module, other: Module, options: Options, sizes: Mapping[int, int] | None,
         allow_reuse: bool = False, memory: reuse.Memory | None = None, schedule: bool | None = None) -> Cut:
    """The pair cut into stages. `allow_reuse`: from a kept lineage where there is one (the
    cut's of this pair at other sizes in `memory`, else the proof cache's for these
    programs); the lineage found is kept in `memory`. `schedule`: whether the other
    program may be cut in the reference's order (None: `SCHEDULE`; a loop body's chain
    passes False, see `SCHEDULE`)."""
    memory = reuse.Memory() if memory is None else memory
    flat = flatten(other)
    if not flat.ok:
        return Cut([], f"not cut: {flat.reason}")
    if ref.per_device:
        return Cut([], "not cut: the reference is a per-device program")
    # The lineage's runs are kept for the whole proof (`Cut.known`) when it runs these very
    # programs: then they are traced before CSE (which only drops ops that compute a value
    # computed already), and the lineage reads the values CSE keeps.
    share = _shares_runs(ref, other, flat.module)
    given_ref, given_other = ref, flat.module
    # One name per value: a stage input the reference computes twice would be two inputs.
    ref, flat = cse(ref), replace(flat, module=cse(flat.module))
    # The lineage keeps every value of both programs on a few runs.
    elements = max(_elements(ref), _elements(flat.module))
    if elements > MAX_CUT_ELEMENTS:
        return Cut([], f"not cut: over {MAX_CUT_ELEMENTS} tensor elements to run for the lineage")
    r_side, o_side = Side.of(ref), Side.of(flat.module)
    loops = any(op.name == "stablehlo.while" for op in r_side.flow)
    if elements < options.stage_min_elements and not loops:
        return Cut([], f"not cut: {elements} tensor elements, below --stage-min-elements {options.stage_min_elements}")
    if (len(r_side.flow) < MIN_STAGES or len(o_side.flow) < MIN_STAGES) and not loops:
        return Cut([], "not cut: too few ops")
    names = ref.input_names()
    bounds = resolve_bounds(options.assume, names, ref.global_arg_types(), sizes)
    # Inputs assumed >= 0 (`--assume '*nu*=0:inf'`) are drawn so, as the proofs' own runs draw
    # them: a negative Adam second moment made NaN of every updated weight, so the outputs
    # never agreed and each verify ran the lift's float64 search for a witness in vain.
    input_sets = random_inputs(ref.global_arg_types(), bounds=bounds, signs=assume_signs(bounds))
    cut = Cut([], "", input_sets, names, bounds)
    r_vals: lineage.Values = {}
    o_vals: lineage.Values = {}
    shape_key = reuse.shape_free(ref, flat.module)
    cache = ProofCache.open(options.cache_dir, enabled=options.cache and not loops)
    disk_key = (reuse.content_key(ref, flat.module, f"{tool_fingerprint()}|{bounds}|{options.max_unroll}")
                if cache.root is not None else None)
    # Loop stages read the runs' values (the loops' constant operands): no reuse there.
    kept, cut.reused = None, ""
    if allow_reuse and not loops:
        kept, cut.reused = memory.last(shape_key), "the pair's cut at the other sizes"
        # At other sizes the outputs may differ where they agreed (a bug only a larger size
        # shows), and a link may not hold: one run says, and a pair whose run differs is cut
        # from its own runs, which report a difference before any stage is proved. The
        # cache's lineage is of these very programs, on these very inputs: it held.
        if kept is not None:
            kept = {v: k for v, k in kept.items() if _fits(k, v, r_side, o_side)}
            if not reuse.holds(kept, ref, flat.module, input_sets[lineage.RUNS.start], options.max_unroll,
                               MAX_RUN_ELEMENTS):
                kept = None
        if kept is None and disk_key is not None:
            kept, cut.reused = reuse.load(cache, disk_key), "the proof cache"
    if kept is not None:
        links = {v: k for v, k in kept.items() if _fits(k, v, r_side, o_side)}
        cut.keep = partial(memory.remember, shape_key, dict(links), cache, disk_key)
    else:
        cut.reused = ""
        if share:
            kept_r: list[Run] = []
            kept_o: list[Run] = []
            r_vals = _defined_in(ref, lineage.trace(given_ref, input_sets[lineage.RUNS], options.max_unroll,
                                                    MAX_RUN_ELEMENTS, kept_r))
            o_vals = _defined_in(flat.module, lineage.trace(given_other, input_sets[lineage.RUNS], options.max_unroll,
                                                            MAX_RUN_ELEMENTS, kept_o))
            at = range(len(input_sets))[lineage.RUNS]
            cut.known = KnownRuns(given_ref, given_other, {k: input_sets[k] for k in at}, dict(zip(at, kept_r)),
                                  dict(zip(at, kept_o)))
        else:
            r_vals = lineage.trace(ref, input_sets[lineage.RUNS], options.max_unroll, MAX_RUN_ELEMENTS)
            o_vals = lineage.trace(flat.module, input_sets[lineage.RUNS], options.max_unroll, MAX_RUN_ELEMENTS)
        cut.outputs_agree = lineage.outputs_agree(r_vals, o_vals, ref, flat.module)
        wanted = [v for v, k in o_side.kind.items() if k in ("flow", "prologue")]
        candidates = [v for v, k in r_side.kind.items() if k != "const"]
        # Control flow is left out: a loop's results are aligned by the loop rule
        # (stages/loops.py), which reads the lineage the values alone give. Ops whose
        # regions are only a combiner (reduce, all_reduce, scatter, sort) stay in: the
        # reduce over size-1 dims that backward RMSNorm makes of a reshaped sum must be
        # linked to the reference's reduce, not to the sum, or the reference's reduce is
        # held by nothing across a whole backward layer (`lineage.find`).
        reads = ({v: op.operands for v, op in r_side.producer.items() if op.name not in CONTROL_FLOW},
                 {v: op.operands for v, op in o_side.producer.items() if op.name not in CONTROL_FLOW})
        given = dict(zip(flat.module.main.body.args, ref.main.body.args))
        # Equal reference values may share a holder among the activations (`lineage.find`,
        # `Link.also`); arguments and prologue values keep their one link each.
        shareable = [v for v, k in r_side.kind.items() if k == "flow"]
        links = lineage.find(r_vals, o_vals, flat.module, wanted, candidates, _ranks(r_side), _ranks(o_side),
                             reads, given, shareable, o_side.last_use)
        if cut.outputs_agree and not loops:
            memory.remember(shape_key, links, cache, disk_key)
    # Other arguments hold the reference's arguments by definition (same global signature).
    for k, a in enumerate(flat.module.main.body.args):
        s = flat.module.arg_shardings[k] if flat.module.per_device else None
        links[a] = lineage.Link(ref.main.body.args[k], s)
    cuts = choose_cuts(r_side, o_side, links)
    if SCHEDULE if schedule is None else schedule:
        # The other program's flow in the reference's order where that cuts it finer
        # (`plan.scheduled`); either order is sound, as any admissible cut is.
        s_side = scheduled(r_side, o_side, links)
        if s_side is not o_side and any(a is not b for a, b in zip(s_side.flow, o_side.flow)):
            s_cuts = choose_cuts(r_side, s_side, links)
            if largest(s_cuts) < largest(cuts):
                o_side, cuts = s_side, s_cuts
    hoisted = {v for v, k in o_side.kind.items() if k == "prologue" and v in links
               and r_side.kind.get(links[v].ref) in ("arg", "prologue")}
    ref_given = {links[v].ref for v in hoisted}
    stages: list[StagePair] = []
    try:
        used_hoisted = sorted({u for op in o_side.flow for u in _uses(op) if u in hoisted}, key=op_order(o_side))
        # Slices of arguments that hold their links by the arguments' layouts need no
        # proof (stages/prologue.py); the prologue stage proves the others.
        arg_links = {a: links[a] for a in flat.module.main.body.args}
        held = by_layout(used_hoisted, links, o_side, r_side, arg_links)
        cut.by_layout = len(held)
        proved_here = [v for v in used_hoisted if v not in held]
        if proved_here:
            r_out = [links[v].ref for v in proved_here]
            stages.append(build("prologue", r_side, o_side, links, r_side.cone(r_out, frozenset({"prologue"})),
                                o_side.cone(proved_here, frozenset({"prologue"})), r_out, proved_here,
                                [links[v].sharding for v in proved_here], set(), set()))
            cut.chain_index.append(None)
        chain = Chain(ref, flat.module, r_side, o_side, links, cuts, hoisted, ref_given)
        for k in range(chain.length):
            name = f"stage {k + 1} of {chain.length}"
            r_ops, o_ops = chain.ops(k, k)
            if is_loop_stage(r_ops, o_ops):
                r_out, o_out, shard = chain.outputs(k, k)
                try:
                    loop = induction(name, r_side, o_side, links, r_ops[0], o_ops[0], r_out, o_out, shard,
                                     hoisted, ref_given, r_vals, o_vals, options)
                    stages += loop
                    cut.chain_index += [k] * len(loop)
                    cut.loop_links.add(k)
                    continue
                except NotFormed as exc:  # unrolled instead, as any other stage
                    progress(options, f"{name}: the loops are not proved by induction: {exc}")
            stages.append(chain.span(name, k, k))
            cut.chain_index.append(k)
        cut.chain = chain
    except NotFormed as exc:
        cut.why = f"not cut: {exc}"
        return cut
    cut.stages = stages
    if not cut.outputs_agree and len(cuts.other) >= 2:
        cut.divergence = _first_unlinked(o_side, links, cuts.other[-2], list(flat.module.main.body.returns))
        if cut.divergence is not None and cut.divergence.name == "stablehlo.while" and o_vals:
            # A loop's results differ: the trip and the body op where they part (stages/locate.py).
            # It runs the loops again; of the lineage's runs only what the loops read is kept.
            r_vals = {v: r_vals[v] for op in r_side.flow if op.name == "stablehlo.while"
                      for v in region_uses(op) if v in r_vals}
            o_vals = {v: o_vals[v] for v in region_uses(cut.divergence) if v in o_vals}
            cut.located = in_loop(r_side, o_side, links, cut.divergence, r_vals, o_vals, options.max_unroll,
                                  MAX_RUN_ELEMENTS)
    return cut


def _shares_runs(ref: Module, other: Module, flat: Module) -> bool:
    """Whether the lineage's runs of this pair are kept for its whole proof (`Cut.known`):
    the other program is cut as it is (no manual region brought to a per-device entry), each
    entry calls no function and has no loop (what a run computes is then bounded by its tensor
    elements: tracing before CSE cannot pass the run budget where tracing after it would not),
    and neither is over the whole proof's encoding budget (a pair the proof refuses needs
    no runs; past it the kept runs would be memory held for nothing)."""
    if not SHARE_RUNS or flat is not other:
        return False
    for m in (ref, other):
        if any(op.name == "stablehlo.while" or op.name in CALLS for op in m.main.body.walk()):
            return False
    return max(_elements(ref), _elements(other)) <= MAX_ELEMENTS  # every function's ops: a bound


def _defined_in(module: Module, values: lineage.Values) -> lineage.Values:
    """The traced values that `module` (the program traced, after CSE) defines at its top
    level: CSE keeps the first of equal ops under its own name, so each is the value the
    program after CSE computes."""
    names = set(module.main.body.args) | {r for op in module.main.body.ops for r in op.results}
    return {v: runs for v, runs in values.items() if v in names}


def _fits(link: lineage.Link, v: str, r_side: Side, o_side: Side) -> bool:
    """Whether a kept link can hold at all: both values exist and the other's value under
    the link's layout has the reference value's shape (a kept lineage may be stale)."""
    r_t, o_t = _types(r_side).get(link.ref), _types(o_side).get(v)
    if r_t is None or o_t is None:
        return False
    s = link.sharding
    if s is None:
        return r_t.shape == o_t.shape
    try:
        return (s.mesh.size == o_side.module.num_devices and len(s.dims) == len(o_t.shape)
                and s.global_type(o_t).shape == r_t.shape)
    except KeyError:  # an axis its mesh does not have
        return False


def _first_unlinked(side: Side, links: dict[str, lineage.Link], start: int, outputs: list[str]) -> Op | None:
    """Where the random runs first differ, by the lineage: the first op of the last stage
    that computes an output and whose value matches no reference value (every value live
    across the last cut held its reference value on those runs)."""
    needed = {id(op) for op in side.cone(outputs, frozenset({"flow"}))}
    for op in side.flow[start:]:
        if id(op) in needed and any(r not in links for r in op.results):
            return op
    return None


def _uses(op: Any) -> list[str]:
    from tv_mlir.stages.plan import region_uses

    return region_uses(op)


def _ranks(side: Side) -> dict[str, float]:
    n = max(len(side.flow), 1)
    return {v: p / n for v, p in side.position.items()}


# ---------------------------------------------------------------------------
# Proving


def stage_options(options: Options) -> Options:
    """What a stage proof runs with: no progress lines, no replay (a failed stage sends the
    pair to the whole proof, which replays), one process. Its inputs are not the program's:
    what --assume says of a program input reaches a stage through its value ranges
    (`_bounded`, as `Options.input_bounds`)."""
    return replace(options, progress=False, replay=False, jobs=1, stages=False, assume=())


def prove_stage(ref: Module, other: Module, options: Options) -> dict[str, Any]:
    """One stage proof in a worker: a JSON-able record (what the cache stores)."""
    t0 = time.perf_counter()
    v = prove_pair(ref, other, options)
    return {"verdict": v.verdict, "reason": v.reason, "time_s": round(time.perf_counter() - t0, 3),
            "approximations": list(v.approximations), "precision": list(v.precision),
            "outputs": [asdict(o) for o in v.outputs],
            "first_divergence": v.stats.get("first_divergence"),
            "elements": int(v.stats.get("elements", 0)), "syntactic": int(v.stats.get("syntactic", 0))}


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The package's source, hashed: a cached proof is only reused by the code that made it
    (a changed semantics rule must not inherit an old `equivalent`)."""
    h = hashlib.sha256(tv_mlir.__version__.encode())
    root = Path(tv_mlir.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".txt") and path.is_file():
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def options_fingerprint(options: Options) -> str:
    o = stage_options(options)
    return (f"{tool_fingerprint()}|{o.inputs}|{o.core}|{o.sweep}|{o.timeout_s}|{o.strict_dtypes}|{o.max_unroll}"
            f"|{o.refine_models}|{o.by_cases}")


def _ieee(stage: StagePair, finite: set[str]) -> tuple[int, ...]:
    """The stage's float inputs that may be +-inf or NaN (stages/finite.py)."""
    types = stage.ref.main.arg_types
    return tuple(k for k, (r, t) in enumerate(zip(stage.slots, types)) if t.is_float and r not in finite)


def _signed(stage: StagePair, signs: dict[str, int], sign: int) -> tuple[int, ...]:
    """The stage's float inputs whose value is finite with `sign` by construction
    (`finite.finite_and_signed`; the parts of a partial sum are not: only their sum is the
    value). A stage that divides by a softmax denominator it takes as input needs this:
    over every real divisor, zero included, the quotient has no IEEE class to share."""
    types = stage.ref.main.arg_types
    return tuple(k for k, (r, t) in enumerate(zip(stage.slots, types))
                 if t.is_float and k not in stage.partial and signs.get(r) == sign)


def _bounded(stage: StagePair, ranges: Ranges | None) -> tuple[tuple[int, int, int], ...]:
    """The stage's integer and i1 inputs whose reference value lies in an interval narrower
    than their type (stages/ranges.py), as (position, lo, hi). Partial-sum slots hold parts,
    not the value (they are floats today; the check keeps it so)."""
    if ranges is None:
        return ()
    types = stage.ref.main.arg_types
    return tuple((k, iv.lo, iv.hi) for k, (r, t) in enumerate(zip(stage.slots, types))
                 if k not in stage.partial and (iv := ranges.narrower(r, t)) is not None)


def memo_key(stage: StagePair, h: str, ofp: str) -> str:
    """The key of a stage proof in `reuse.Memory.proved`: its full hash (ops, attributes,
    types, shardings, input facts) and the proof options. Equal keys are one problem, so
    one proof holds for both; `stage` is unused (kept so that a test can put a key that
    leaves out the sizes here and show what that would prove)."""
    return f"{h}|{ofp}"


def _prove_stages(stages: list[StagePair], options: Options, finite: set[str], signs: dict[str, int] | None = None,
                  ranges: Ranges | None = None, memo: dict[str, dict] | None = None
                  ) -> tuple[list[StageRecord], dict[str, dict]]:
    """Each distinct stage proved once: `reused` for a hash seen before in this call or
    proved in this verify's other calls (`memo`: the first witness's proofs, for the
    second's), `cached` from the proof cache, else `proved` by a job."""
    sopts = stage_options(options)
    memo = {} if memo is None else memo
    cache = ProofCache.open(options.cache_dir, enabled=options.cache)
    ofp = options_fingerprint(options)
    ieee = [_ieee(s, finite) for s in stages]
    signs = signs or {}
    pos = [_signed(s, signs, POS) for s in stages]
    nonneg = [_signed(s, signs, NONNEG) for s in stages]
    bounded = [_bounded(s, ranges) for s in stages]
    # What each stage proves: its output pads peeled where that is the same claim
    # (stages/peel.py), so stages that differ only in a pad's offset share one proof.
    # Inputs are untouched: the facts above hold of the peeled stages alike.
    stages = [peel_output_pads(s) for s in stages]
    contexts = [f"ieee {list(e)} pos {list(p)} nonneg {list(n)} bounds {list(b)}"
                for e, p, n, b in zip(ieee, pos, nonneg, bounded)]
    hashes = [stage_hash(s.ref, s.other, c) for s, c in zip(stages, contexts)]
    # What is proved: each distinct stage with its lane dims folded to one position
    # (stages/lanes.py), the same claim; stages that differ only in the sizes of such dims
    # (a grown class in the second witness) are then one problem, under its own hash.
    proof: dict[str, tuple[StagePair, list[int], str]] = {}
    for k, h in enumerate(hashes):
        if h not in proof:
            folded, sizes = fold_lanes(stages[k])
            proof[h] = (folded, sizes, stage_hash(folded.ref, folded.other, contexts[k]) if sizes else h)
    results: dict[str, dict] = {}  # by proof hash
    how: dict[int, str] = {}
    jobs: list[Job] = []
    first: dict[str, int] = {}
    keys = {ph: memo_key(folded, ph, ofp) for folded, _, ph in proof.values()}
    for k, h in enumerate(hashes):
        folded, _, ph = proof[h]
        if ph in first:
            how[k] = "reused"
            continue
        first[ph] = k
        known = memo.get(keys[ph])
        if known is not None:
            results[ph] = known
            how[k] = "reused"
            continue
        if same_program(folded.ref, folded.other) and not folded.loop:
            results[ph] = memo[keys[ph]] = _same_record(folded.ref)
            how[k] = "proved"
            continue
        hit = cache.get(cache_key(ph, ofp))
        if hit is not None and hit.get("verdict") == "equivalent":
            results[ph] = hit
            how[k] = "cached"
            memo[keys[ph]] = hit
        else:
            how[k] = "proved"
            jobs.append(Job(ph, prove_stage, (folded.ref, folded.other,
                                              replace(sopts, ieee_inputs=ieee[k], positive_inputs=pos[k],
                                                      nonnegative_inputs=nonneg[k], input_bounds=bounded[k]))))
    lanes = {ph: sizes for _, sizes, ph in proof.values() if sizes}
    bar = StageBar(len(stages), force=options.progress,
                   reused=sum(1 for v in how.values() if v == "reused"),
                   cached=sum(1 for v in how.values() if v == "cached"))
    for k in range(len(stages)):
        if how[k] == "cached":
            bar.done(stages[k].name, "cached")
        elif how[k] == "proved" and proof[hashes[k]][2] in results:  # the same program on both sides
            bar.done(stages[k].name, "equivalent")

    def done(res: Any) -> None:
        if res.ok:
            results[res.key] = res.value
            if lanes.get(res.key):
                res.value["lanes"] = lanes[res.key]
            if res.value.get("verdict") == "equivalent":
                cache.put(cache_key(res.key, ofp), res.value)
                memo[keys[res.key]] = res.value
        else:
            results[res.key] = {"verdict": "unknown", "reason": f"stage proof: {res.error}", "time_s": res.time_s,
                                "outputs": [], "approximations": [], "precision": []}
        bar.done(stages[first[res.key]].name, results[res.key]["verdict"])

    try:
        run_jobs(jobs, workers=options.jobs, executor=Executor.parse(options.executor),
                 timeout_s=options.stage_timeout_s, on_done=done)
    finally:
        bar.close()
    records = []
    for k, (s, h) in enumerate(zip(stages, hashes)):
        r = results[proof[h][2]]
        records.append(StageRecord(k, s.name, h[:16], how[k], r["verdict"], r.get("reason", ""),
                                   r.get("time_s", 0.0) if how[k] == "proved" else 0.0, s.ref_ops, s.other_ops,
                                   list(s.locs[:3]), r.get("first_divergence"),
                                   list(r.get("lanes", [])) if how[k] == "proved" else []))
    return records, {h[:16]: results[proof[h][2]] for h in hashes}


def _same_record(ref: Module) -> dict[str, Any]:
    """A stage proof's record for a stage that is the same program on both sides
    (stages/same.py): every output equal, none by simplification or the solver."""
    outputs = [OutputResult(i, "equivalent", elements=t.size, what=f"output {i}")
               for i, t in enumerate(ref.global_result_types())]
    return {"verdict": "equivalent", "reason": "the same program on both sides (stages/same.py)", "time_s": 0.0,
            "approximations": [], "precision": [], "outputs": [asdict(o) for o in outputs],
            "first_divergence": None, "elements": 0, "syntactic": 0}


def _summary(records: list[StageRecord], time_s: float) -> dict[str, Any]:
    count = {k: sum(1 for r in records if r.how == k) for k in ("proved", "reused", "cached")}
    folded = sum(1 for r in records if r.lanes)
    return {"used": True, "count": len(records), **count, "time_s": round(time_s, 3),
            **({"lanes_folded": folded} if folded else {}), "list": [r.as_dict() for r in records]}


def _equivalent(ref: Module, records: list[StageRecord], results: dict[str, dict], summary: dict[str, Any],
                options: Options) -> Verdict:
    last = results[records[-1].hash]
    outputs = [OutputResult(**o) for o in last.get("outputs", [])]
    approximations = sorted({a for r in results.values() for a in r.get("approximations", [])})
    precision = sorted({p for r in results.values() for p in r.get("precision", [])})
    n = len(ref.global_result_types())
    outs = f"all {n} outputs equal" if n != 1 else "the output is equal"
    reason = (f"{outs}, proved in {summary['count']} stages ({summary['proved']} proved, "
              f"{summary['reused']} reused, {summary['cached']} from the cache)")
    spans = [w for w in summary.get("widened", []) if w["verdict"] == "equivalent"]
    if spans:
        failed = sum(1 for r in records if r.verdict != "equivalent")
        reason += (f"; {failed} stage(s) that failed at free inputs proved as {len(spans)} longer span(s) "
                   f"({', '.join(w['name'] for w in spans[:3])})")
    if approximations:
        reason += f"; uninterpreted: {', '.join(approximations)}"
    verdict = "equivalent"
    if options.strict_dtypes and precision:
        verdict, reason = "not-equivalent", f"--strict-dtypes: {precision[0]}"
    stats = {"pipeline": options.pipeline, "stages": summary["count"],
             "elements": sum(int(r.get("elements", 0)) for r in results.values()),
             "syntactic": sum(int(r.get("syntactic", 0)) for r in results.values())}
    v = Verdict(verdict, reason, outputs=outputs, approximations=approximations, precision=precision, stats=stats)
    v.stages = summary
    v.inputs = options.inputs
    return v
