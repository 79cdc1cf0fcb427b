"""`verify`: the whole pipeline for one pair of programs. Read both (instantiating symbolic
shapes), run the pass pipeline, check that they take the same global inputs, shrink them,
prove them equal at the shrunk sizes (or find where they differ), and carry a shrunk
counterexample back to the original sizes."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from tv_mlir import regrow
from tv_mlir.assume import record as assume_record
from tv_mlir.assume import resolve as resolve_bounds
from tv_mlir.assume import shrunk_sizes
from tv_mlir.errors import TvError, Unsupported, UsageError
from tv_mlir.execute.xla import XlaRunner
from tv_mlir.execute.xla_child import shared_runner
from tv_mlir.frontend import symshape
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.frontend.read import BYTECODE_MAGIC, Loaded, SourceSpec, load_module, load_module_mlir, read_source
from tv_mlir.heap import full_collections_at_end
from tv_mlir.ir import Module
from tv_mlir.options import SECOND_WITNESS_FLOOR, SECOND_WITNESS_GROWTH, SECOND_WITNESS_HALVINGS, Options
from tv_mlir.passes import load_pipeline, run_pipeline
from tv_mlir.progress import progress
from tv_mlir.prove import deadline
from tv_mlir.shrink.context import ShrinkContext
from tv_mlir.shrink.embed import fills_for
from tv_mlir.shrink.pair import shrink_pair
from tv_mlir.stages import run as stages_run
from tv_mlir.stages import verdicts
from tv_mlir.stages.loops import rests_on_induction
from tv_mlir.stages.reuse import Memory
from tv_mlir.stages.run import prove_staged, too_large_to_cut
from tv_mlir.verdict import FullSizeCheck, Verdict
from tv_mlir.witness import fullsize
from tv_mlir.witness.replay import unshown_at_own_sizes
from tv_mlir.witness.settle import XLA_FAILED

# A path (str or os.PathLike), MLIR text, bytes, a text or binary stream (frontend.read.read_source
# has the rule), or a module already read.
ModuleLike = SourceSpec | Module
CORES = ("own", "z3")  # Options.core


def prepare(spec: ModuleLike | Loaded, options: Options, name: str | None = None) -> Module:
    if isinstance(spec, Loaded):
        spec = spec.module
    module = spec if isinstance(spec, Module) else load_module(spec, name)
    return run_pipeline(load_pipeline(options.pipeline), module)


def verify(ref: ModuleLike, other: ModuleLike, options: Options | None = None, **overrides: Any) -> Verdict:
    """Prove `ref` and `other` compute the same function, or find an input where they differ.
    Raises ParseError/UsageError for unreadable or incomparable inputs."""
    # What a verification builds (the parsed programs, the shrink's analyses and rewrites,
    # the cut) lives until its verdict: no automatic full collection walks it again and
    # again before then (~7 s CPU of ~110 on testdata/depth's 126-layer stack outside the
    # staged proof's own guard; docs/stages.md, "Full collections").
    with full_collections_at_end():
        return _verify(ref, other, options, **overrides)


def _verify(ref: ModuleLike, other: ModuleLike, options: Options | None = None, **overrides: Any) -> Verdict:
    options = resolve_options(options, overrides)
    if options.core not in CORES:
        raise UsageError(f"unknown symbolic core {options.core!r} (choose one of {', '.join(CORES)})")
    t0 = time.perf_counter()
    started = deadline.now()
    try:
        # Each input is read and parsed once: the passes copy rather than edit, so the
        # module as read (with its MLIR) is still there for the shrink pass.
        ref_read, ref_sym = _read(ref, options)
        other_read, other_sym = _read(other, options)
        # An unchanged pair proved before: its kept verdict (stages/verdicts.py).
        kept = verdicts.key(ref_read, other_read, [ref_sym, other_sym], options)
        hit = verdicts.lookup(options, kept)
        if hit is not None:
            hit.time_s = round(time.perf_counter() - t0, 4)
            return hit
        if options.deadline is None:  # after the key: a deadline is how long, not what is claimed
            options = replace(options, deadline=started + options.time_budget_s)
        ref_m = prepare(ref_read, options)
        other_m = prepare(other_read, options)
        check_signatures(ref_m, other_m)
        _check_assume(ref_m, options)
        shrink, embedding, originals = None, None, (ref_m, other_m)
        # Every shrink of this pair below reads the originals and analyses them once (shrink/context.py).
        context = ShrinkContext()
        if options.shrink and load_pipeline(options.pipeline).has("shrink"):
            ref_m, other_m, shrink, embedding = _shrink(ref_read, other_read, ref_m, other_m, options,
                                                        context=context)
    except Unsupported as exc:  # a form or type not modelled, or a budget: before any proof
        return unsupported_verdict(exc, options, t0)
    if ref_sym or other_sym:
        shrink = dict(shrink or {"applied": False, "reason": "off (--no-shrink, or no shrink in the pipeline)"})
        shrink["symbolic"] = {"instantiated_at": SYMBOLIC_SIZE, "ref": ref_sym, "other": other_sym}
    memory = Memory()  # the cut's lineage, for the second witness's cut of the same pair
    verdict = prove_staged(ref_m, other_m, options, shrunk_sizes(shrink), memory)
    verdict.shrink = shrink
    per_trip: bool | None = None
    if shrink is not None and shrink.get("loops") and verdict.verdict == "equivalent":
        # Rule l's sizes hold only for a proof by induction over every top-level loop:
        # otherwise shrink again with the degrees composed across the trips, and prove again.
        why = rests_on_induction(verdict, ref_m, other_m)
        if why:
            progress(options, f"shrink: loop degrees per trip not usable ({why}): shrinking with composed degrees")
            per_trip = False
            try:
                ref_m, other_m, again, embedding = _shrink(*originals, *originals, options, per_trip=False,
                                                           context=context)
            except Unsupported as exc:
                return unsupported_verdict(exc, options, t0, originals[0])
            again["loops"] = {"rule": "l: loop degrees per trip", "not_used": why}
            if "symbolic" in shrink:
                again["symbolic"] = shrink["symbolic"]
            shrink = again
            memory = Memory(proved=memory.proved)  # a new lineage; stage proofs of equal hash still hold
            verdict = prove_staged(ref_m, other_m, options, shrunk_sizes(shrink), memory)
            verdict.shrink = shrink
    if options.replay and regrow.xla_failed_on_shrunk(verdict):
        # XLA refused the shrunk modules on the witness (shrinking made them so): without
        # shrinking when affordable, as --no-shrink would verify the pair.
        verdict = regrow.retry_unreplayable(verdict, originals, options, shared_runner())
        if verdict.shrink is not None and not verdict.shrink.get("applied"):
            if shrink is not None and "symbolic" in shrink:
                verdict.shrink["symbolic"] = shrink["symbolic"]
            (ref_m, other_m), shrink, embedding = originals, verdict.shrink, None
    second: SecondWitness | None = None
    # One for every XLA run at the original sizes (it caches compiled modules), in a child
    # process: an XLA CHECK failure aborts the process it runs in. The child stays for
    # the next verification; its compiled modules go when this one ends.
    runner = shared_runner()
    shrunk = bool(verdict.shrink and verdict.shrink.get("applied"))
    checked = False
    if embedding is not None and shrink is not None and verdict.verdict == "equivalent":
        # The full-size check first: where the original programs run (within its budget),
        # it tests them at their own sizes, which a second proof at other shrunk sizes only
        # stands in for; the second proof (up to twice the first one's work: a 16-layer
        # decoder 57 s -> 135 s) runs where the check could not.
        _full_size_check(verdict, shrunk, originals, options, runner)
        checked = True
        fsc = verdict.full_size_check
        if verdict.verdict == "equivalent" and fsc is not None and fsc.ran and fsc.outcome == "agree":
            shrink["second"] = {"skipped": "the full-size check ran at the original sizes and agreed"}
        elif verdict.verdict == "equivalent":
            second = _second_witness(shrink, originals, options, memory, per_trip, context)
            if second is not None and second.verdict.verdict != "equivalent":
                verdict, ref_m, embedding = _second_disagrees(second, shrink), second.small_ref, second.embedding
                verdict.full_size_check = fsc  # the check's record (skipped, or failed) stays
    c = verdict.counterexample
    if c is not None and c.found_by == "full-size check":
        pass  # found and confirmed at the original sizes already
    elif embedding is not None and c is not None:
        if options.replay:
            _embed(verdict, embedding, ref_m, *originals, runner=runner, options=options)
            if not c.embedded:
                # A witness from the second proof was found at grow=1 already: retry from 2.
                verdict = regrow.retry(verdict, originals, options, runner, partial(_shrink, context=context), _embed,
                                       first_step=2 if second else 1,
                                       witness_sizes=second.sizes_text if second else None)
        else:
            c.shrunk_index = list(c.index)
            c.not_embedded = "replay is off (--no-replay)"
    elif c is not None and c.confirmed and not c.confirmed_at:
        c.confirmed_at = "original sizes"  # nothing was shrunk: these are the programs' own sizes
    if second is not None and second.found != "equivalent":
        _name_the_second_witness(verdict, second)
    if not checked:
        _full_size_check(verdict, shrunk, originals, options, runner)
    _exit_1_needs_confirmation(verdict, options, originals[0])
    runner.forget()
    verdict.time_s = round(time.perf_counter() - t0, 4)
    verdict.assume = assumed(options, originals[0])
    verdicts.keep(options, kept, verdict)
    return verdict


def _exit_1_needs_confirmation(verdict: Verdict, options: Options, ref: Module | None = None) -> None:
    """The last word on exit 1: `not-equivalent` stands only with a counterexample XLA
    shows at the original sizes. Each path above (embedding, regrowth, second witness,
    full-size check, replica divergence) is meant to leave only such verdicts; this is the
    one place that holds them all to it, so a new path cannot print an exit 1 that the
    programs as given do not show. With --no-replay the user asked not to confirm: the
    verdict stays, unconfirmed (README). A verdict without a counterexample is structural
    (output counts, shapes or element types differ; --strict-dtypes): no input to confirm.
    A pair verified at its own sizes (an unconfirmed approximation is `unknown` already,
    witness/settle.py) keeps its exact witness where XLA cannot run the programs, or where
    our float64 replay shows it; where XLA runs them and neither shows it, the programs
    differ as real functions by less than their dtypes resolve: `unknown`, the witness kept
    (witness/replay.unshown_at_own_sizes; `ref`: the reference as given, for the output's type)."""
    c = verdict.counterexample
    if verdict.verdict != "not-equivalent" or not options.replay or c is None:
        return
    if not (verdict.shrink and verdict.shrink.get("applied")):
        results = ref.global_result_types() if ref is not None else []
        why = None if c.confirmed else unshown_at_own_sizes(c, results[c.output].dtype
                                                             if 0 <= c.output < len(results) else None)
        if why:
            verdict.verdict, verdict.reason = "unknown", f"{why}: {verdict.reason}"
        return
    if c.confirmed and c.confirmed_at == "original sizes":
        return
    failed = next((r.error for r in c.replay if r.backend == "xla" and r.error), "")
    if c.confirmed:
        where = f"XLA shows it at the {c.confirmed_at or 'shrunk sizes'} only"
    else:  # an XLA run that failed is no run that agreed: say which
        where = f"{XLA_FAILED}: {failed}" if failed else "XLA does not reproduce it"
    verdict.verdict = "unknown"
    verdict.reason = f"not confirmed at the original sizes ({where}): {verdict.reason}"


def _assumed_bounds(ref: Module, options: Options) -> list[Any]:
    """Per input of `ref`, what `--assume` bounds it to (`assume.resolve`)."""
    return resolve_bounds(options.assume, ref.input_names(), ref.global_arg_types())


def _check_assume(ref: Module, options: Options) -> None:
    """Every --assume names an integer input of the pair (UsageError before any proof)."""
    _assumed_bounds(ref, options)


def assumed(options: Options, ref: Module | None = None) -> dict[str, list[int | float | str]]:
    """The verdict's record of Options.assume (`assume.record`): name -> [lo, hi], an
    unbounded end as "inf" / "-inf" (JSON has no infinity); a float input's range (read
    from `ref`'s inputs) with float ends, which the text prints closed."""
    if ref is None:
        return assume_record(options.assume)
    return assume_record(options.assume, ref.input_names(), ref.global_arg_types())


@dataclass
class SecondWitness:
    """The second proof of a pair proved equal at its shrunk sizes: at grown sizes."""

    verdict: Verdict
    small_ref: Module
    embedding: Any
    classes: list[dict[str, Any]]  # per shrunk class: class, where, original, first, second, note?
    found: str = ""  # the second proof's own verdict (`verdict` goes on to the confirmation and may change)

    def __post_init__(self) -> None:
        self.found = self.found or self.verdict.verdict

    @property
    def sizes_text(self) -> str:
        return ", ".join(f"{e['original']}->{e['second']}" for e in self.classes)

    def disagreement(self) -> str:
        grown = [e for e in self.classes if e["second"] != e["first"]]
        named = "; ".join(f"class {e['class']} ({e['where']}: {e['original']} verified at {e['first']} and "
                          f"{e['second']})" for e in grown)
        return (f"equivalent at the shrunk sizes but {self.found} at the second sizes, where "
                f"{len(grown)} class{'es differ' if len(grown) != 1 else ' differs'}: {named}")


def _second_witness(shrink: dict[str, Any], originals: tuple[Module, Module],
                    options: Options, memory: Memory, per_trip: bool | None = None,
                    context: ShrinkContext | None = None) -> SecondWitness | None:
    """Prove the pair again at the next admissible size of every shrunk class (plan.plan
    grow=1), within an element budget; record both assignments in `shrink["second"]`.
    `memory`: the first proof's lineage, which the second cut tries first.
    None when the second proof is off or there is nothing to prove (the map says why).
    `per_trip`: rule l as the first proof's shrink had it. `context`: the first shrink's
    (its reading and analysis of the pair, which do not depend on the budget)."""
    if not options.second_witness:
        shrink["second"] = {"skipped": "off (--no-second-witness)"}
        return None
    t0 = time.perf_counter()
    first = int(shrink.get("elements", 0))
    # The budget, then the same budget halved (its growth over the first plan's elements)
    # up to SECOND_WITNESS_HALVINGS times: for a pair grown past what staged proofs cut
    # (the first proof's way through a deep plan), which would go whole and end `unknown`
    # for its size. The planner tries them in order against its estimate of the cut's
    # measure (shrink/cutsize.py) before anything is rewritten; the pair it makes is still
    # checked in the cut's own measure, and the budgets left are tried if it is over.
    budgets = [max(SECOND_WITNESS_GROWTH * first, first + SECOND_WITNESS_FLOOR)]
    for _ in range(SECOND_WITNESS_HALVINGS):
        budgets.append(first + (budgets[-1] - first) // 2)
    halved, shrinks = 0, 0
    while True:
        try:
            small_ref, small_other, summary, emb = _shrink(
                *originals, *originals, options, grow=1, budget=budgets[halved], per_trip=per_trip,
                fallbacks=budgets[halved + 1:], cut_limit=stages_run.MAX_CUT_ELEMENTS if options.stages else None,
                context=context)
        except TvError as exc:
            shrink["second"] = {"skipped": f"the grown sizes cannot be verified: {exc.one_line()}"}
            return None
        shrinks += 1
        halved += int(summary.get("budget", {}).get("fallbacks_taken", 0))
        budget = budgets[halved]
        if not (options.stages and summary.get("applied") and too_large_to_cut(small_ref, small_other)) \
                or halved >= SECOND_WITNESS_HALVINGS:
            break
        halved += 1
    if not summary.get("applied") and summary.get("reason") != "no dimension can shrink":
        shrink["second"] = {"skipped": f"the grown sizes cannot be verified: {summary.get('reason', '')}"}
        return None
    grown_to = {e["class"]: e["verified"] for e in summary.get("shrunk", []) + summary.get("kept", [])}
    held = summary.get("held", {})
    classes = []
    for e in shrink["shrunk"]:
        # A class missing from the grown map has grown back to its original size.
        entry = {"class": e["class"], "where": e["where"], "original": e["original"], "first": e["verified"],
                 "second": grown_to.get(e["class"], e["original"]) if summary.get("applied") else e["original"]}
        if entry["second"] == entry["first"]:
            entry["note"] = held.get(str(e["class"]), "cannot grow: no larger admissible size (its relations)")
        classes.append(entry)
    record: dict[str, Any] = {"sizes": classes, "elements": {"first": first, "second": summary.get("elements"),
                                                             "budget": budget, "halved": halved},
                              "shrinks": shrinks}
    shrink["second"] = record
    if all(e["second"] == e["first"] for e in classes):
        record["skipped"] = "no shrunk class can grow within the budget"
        return None
    progress(options, f"second witness: verifying at grown sizes ({', '.join(str(e['second']) for e in classes)})")
    v = prove_staged(small_ref, small_other, options, shrunk_sizes(summary), memory)  # the first cut's lineage
    record["verdict"] = v.verdict
    record["time_s"] = round(time.perf_counter() - t0, 3)
    if v.verdict != "equivalent":
        record["reason"] = v.reason
    progress(options, f"second witness: {v.verdict} ({record['time_s']} s)")
    return SecondWitness(v, small_ref, emb if summary.get("applied") else None, classes)


def _second_disagrees(second: SecondWitness, shrink: dict[str, Any]) -> Verdict:
    """The verdict when the second proof is not `equivalent`. A counterexample there goes
    on to the confirmation at the original sizes like any shrunk one (verify); anything
    else is a shrinking failure: `unknown`, naming the classes whose sizes differ."""
    v = second.verdict
    v.shrink = shrink
    c = v.counterexample
    if v.verdict == "not-equivalent" and c is not None:
        if second.embedding is None:  # grown back to the original sizes: exact there
            c.confirmed_at = "original sizes" if c.confirmed else None
        return v
    v.verdict = "unknown"
    if (v.stats or {}).get("out_of_time"):  # no disagreement: the second proof did not finish
        v.reason = f"equivalent at the shrunk sizes; the second witness (grown sizes) did not finish: {v.reason}"
        return v
    v.reason = f"shrinking failure: {second.disagreement()}: {v.reason}"
    return v


def _name_the_second_witness(verdict: Verdict, second: SecondWitness) -> None:
    """The final verdict's reason, once a second proof's finding went through the
    confirmation at the original sizes: a witness confirmed there says it came from the
    second proof; one the original sizes do not show is a shrinking failure."""
    if verdict.verdict == "not-equivalent":
        verdict.reason += (f" (found by the second witness at grown sizes {second.sizes_text}; the first proof "
                           f"at the smaller sizes said equivalent)")
    elif verdict.verdict == "unknown" and not verdict.reason.startswith("shrinking failure"):
        verdict.reason = f"shrinking failure: {second.disagreement()}; {verdict.reason}"


def _full_size_check(verdict: Verdict, shrunk: bool, originals: tuple[Module, Module], options: Options,
                     runner: XlaRunner) -> None:
    """Before a verdict proved at shrunk sizes is printed as `equivalent`, both original
    programs run on XLA (witness/fullsize.py): a clear difference is a counterexample at
    the original sizes, a marginal one makes the verdict `unknown`."""
    if verdict.verdict != "equivalent":
        verdict.full_size_check = FullSizeCheck(False, "skipped", f"the verdict is {verdict.verdict}")
        return
    if not shrunk:
        verdict.full_size_check = FullSizeCheck(False, "skipped", "not needed: verified at the original sizes")
        return
    ref, other = originals
    progress(options, "full-size check: both original programs on XLA")
    out = fullsize.check(ref, other, options.full_size_check, runner, ref.input_names(),
                         _assumed_bounds(ref, options))
    verdict.full_size_check = out.check
    progress(options, f"full-size check: {out.check.outcome}: {out.check.reason}")
    if out.counterexample is not None:
        c = out.counterexample
        verdict.verdict, verdict.counterexample = "not-equivalent", c
        verdict.reason = (f"proved equal at the shrunk sizes, but at the original sizes output {c.output} differs at "
                          f"index {c.index} (full-size check on XLA): {ref.source} gives {c.ref_value}, "
                          f"{other.source} gives {c.other_value}; the shrinking argument does not hold for this pair")
    elif out.unknown:
        verdict.verdict, verdict.reason = "unknown", out.unknown


def unsupported_verdict(exc: Unsupported, options: Options, t0: float, ref: Module | None = None) -> Verdict:
    """`unknown`, naming what is not modelled or which budget was passed (exit 2, like the
    same finding during the proof), instead of an error. `ref`: the reference when it was
    read (its float inputs' ranges are recorded as such, `assumed`)."""
    v = Verdict("unknown", f"unsupported: {exc.one_line()}",
                unsupported=[{"op": exc.op or "", "loc": exc.loc or "", "message": exc.message}], inputs=options.inputs,
                assume=assumed(options, ref))
    v.time_s = round(time.perf_counter() - t0, 4)
    return v


# Dynamic dims (`?`, jax.export with symbolic shapes) are first instantiated at one size
# with many divisors (every shard count up to 8 divides it); shrinking then takes each
# class down to its smallest admissible size like any other.
SYMBOLIC_SIZE = 840


def resolve_options(options: object, overrides: dict[str, Any]) -> Options:
    """The options with the keyword overrides applied; a wrong type or an unknown name is a
    UsageError like any other bad argument (Options checks the values)."""
    if options is not None and not isinstance(options, Options):
        raise UsageError(f"options must be a tv_mlir.Options, got {type(options).__name__}")
    try:
        return replace(options or Options(), **overrides)
    except TypeError as exc:  # an unknown keyword
        raise UsageError(f"bad option: {exc}") from None


def _read(spec: ModuleLike, options: Options) -> tuple[Loaded | Module, list[list[int]]]:
    """The module as read (stdin is read once), instantiated at SYMBOLIC_SIZE when its
    entry has dynamic dims; and those dims. A Module given by the caller stays as it is."""
    if isinstance(spec, Module):
        return spec, []

    src = read_source(spec, limit=options.max_input_bytes)
    dims = [] if not src.data.startswith(BYTECODE_MAGIC) and b"?" not in src.data else \
        symshape.dynamic_dims(src.data, src.name)
    if not dims:
        return load_module_mlir(src.data, src.name), []
    text = symshape.instantiate(src.data, {d: SYMBOLIC_SIZE for d in dims}, src.name)
    return load_module_mlir(text, src.name), [list(d) for d in dims]


def _embed(verdict: Verdict, e: Any, small_ref: Module, ref: Module, other: Module, runner: XlaRunner | None = None,
           options: Options | None = None) -> None:
    """Place a shrunk witness into the original sizes and replay it there on XLA: when its
    inputs are small (embed.MAX_ELEMENTS), or the programs fit the full-size budget
    (witness/fullsize.py; `--full-size-check on` lifts its compute bound)."""
    c = verdict.counterexample
    assert c is not None  # verify embeds only a verdict that has a counterexample
    c.shrunk_index = list(c.index)
    mode = "on" if options is not None and options.full_size_check == "on" else "auto"
    b = fullsize.budget(ref, other, mode)
    if not b.memory_fits or not (e.fits() or b.run):
        c.not_embedded = f"too large to replay at the original sizes ({b.reason})"
        c.confirmed_at = "shrunk sizes" if c.confirmed else None
        return
    # Elements the witness does not set stay inside the inputs' assumed ranges.
    fills = fills_for(_assumed_bounds(ref, options)) if options is not None else []
    if c.devices:
        # A replica divergence: the same two devices' copies of the embedded element on XLA
        # at the original sizes (issue 12 item 4: exit 1 only once they show it there).
        if regrow.confirm_divergence(c, e, small_ref, ref, other, runner=runner, fills=fills):
            assert c.devices is not None
            verdict.reason = (f"{c.what} differ at index {c.index} (a divergence found at the shrunk sizes, "
                              f"replayed at the original sizes): device {c.devices[0]} holds {c.ref_value}, "
                              f"device {c.devices[1]} holds {c.other_value}")
        else:
            c.confirmed_at = "shrunk sizes" if c.confirmed else None
        return
    if regrow.replay_at_original_sizes(c, e, small_ref, ref, other, runner, fills=fills):
        verdict.reason = (f"output {c.output} differs at index {c.index} (a witness found at the shrunk sizes, "
                          f"replayed at the original sizes): {ref.source} gives {c.ref_value}, "
                          f"{other.source} gives {c.other_value}")


def _shrink(ref: Loaded | Module, other: Loaded | Module, ref_m: Module, other_m: Module,
            options: Options, grow: int = 0, budget: int | None = None, per_trip: bool | None = None,
            fallbacks: Sequence[int] = (), cut_limit: int | None = None, context: ShrinkContext | None = None
            ) -> tuple[Module, Module, dict[str, Any], Any]:
    """Both programs at their shrunk sizes, or as they are when nothing shrinks (or the
    rewrite is refused: then the verdict is still sound, only slower). `grow`: every
    shrunk class that many admissible sizes larger, `budget` its element budget (then
    `fallbacks`, while the plan's estimated size in the cut's measure is over `cut_limit`),
    `per_trip` rule l's loop degrees (plan.plan). `context`: the verification's, shared by
    its shrinks of one pair (shrink/context.py)."""

    try:
        # the assumed ranges: rule k's index predicates (shrink/lookups.py)
        result = shrink_pair(ref, other, ref_m, other_m, grow=grow, budget=budget,
                             ranges=_assumed_bounds(ref_m, options), per_trip=per_trip,
                             fallbacks=fallbacks, cut_limit=cut_limit, context=context,
                             assume=options.assume)
    except Unsupported as exc:
        progress(options, f"shrink: not applied ({exc})")
        return ref_m, other_m, {"applied": False, "reason": str(exc)}, None
    if result is None:
        return ref_m, other_m, {"applied": False, "reason": "no dimension can shrink"}, None
    summary = {"applied": True, **result.summary()}
    progress(options, f"shrink: {len(summary['shrunk'])} dimension classes shrunk, "
                       f"{summary['constants_rewritten']} constants rewritten ({result.time_s:.2f} s)")
    small_ref = prepare(result.ref_text, options, ref_m.source)
    small_other = prepare(result.other_text, options, other_m.source)
    check_signatures(small_ref, small_other)
    return small_ref, small_other, summary, result.embedding


