"""`not-equivalent` means reproduced at the original sizes (issue 12, item 4). A witness
found at the shrunk sizes that XLA does not show at the original sizes (not reproduced,
its replay failed, or the original programs are too large to run) is not a reason to
exit 1: the pair is verified again at less-shrunk sizes (every shrunk class grown to its
next admissible size, `shrink.plan.plan(grow=k)`), then without shrinking when the
original programs are small enough; a witness from there that XLA confirms at the
original sizes, or a proof at the original sizes, is the verdict. Otherwise the verdict
is `unknown`, naming why, with the shrunk witness kept for inspection."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tv_mlir.assume import shrunk_sizes
from tv_mlir.driver import prove_pair
from tv_mlir.errors import TvError
from tv_mlir.ir import Module
from tv_mlir.options import Options
from tv_mlir.progress import progress
from tv_mlir.verdict import Counterexample, Verdict
from tv_mlir.witness import fullsize

# Grow steps tried: each is a whole verification at larger sizes.
MAX_GROW = 2
# Verifying without shrinking encodes every element: tried only for programs this small
# (in tensor elements, both together), besides the full-size memory and compute budget.
NO_SHRINK_MAX_ELEMENTS = 250_000

ShrinkFn = Callable[..., tuple[Module, Module, dict[str, Any], Any]]
EmbedFn = Callable[..., None]


def why_unconfirmed(c: Counterexample) -> str:
    if c.not_embedded:
        return c.not_embedded
    if c.embedded is False:
        return "its embedding into the original sizes is not reproduced there by XLA"
    return "not carried back to the original sizes"


def retry(verdict: Verdict, originals: tuple[Module, Module], options: Options, runner: Any,
          shrink: ShrinkFn, embed: EmbedFn, first_step: int = 1, witness_sizes: str | None = None) -> Verdict:
    """`first_step`, `witness_sizes`: a witness found by the second proof of an `equivalent`
    (api.verify) is at grow=1 already, at those sizes."""
    c = verdict.counterexample
    assert c is not None
    why = why_unconfirmed(c)
    retries: list[dict[str, Any]] = []
    first_sizes = witness_sizes or _sizes(verdict.shrink)
    # A witness too large to replay stays too large at any shrunk size, and a replay that
    # failed (XLA declines a 10,000-op chain) fails again: growing cannot confirm it, only
    # a proof or a replay at the original sizes could (it cost a 10,000-op chain 2 whole
    # verifications, 25 s).
    if not why.startswith("too large") and not why.startswith("the replay at the original sizes failed"):
        previous = first_sizes
        for step in range(first_step, MAX_GROW + 1):
            try:
                small_ref, small_other, summary, emb = shrink(*originals, *originals, options, grow=step)
            except TvError as exc:
                retries.append({"sizes": "", "verdict": "error", "note": f"cannot grow: {exc}"})
                break
            sizes = _sizes(summary)
            if emb is None or sizes == previous:
                retries.append({"sizes": sizes, "verdict": "", "note": "no class can grow further while shrunk"})
                break
            previous = sizes
            progress(options, f"retry: verifying at less-shrunk sizes ({sizes})")
            v = prove_pair(small_ref, small_other, options, shrunk_sizes(summary))
            v.shrink = summary
            entry = {"sizes": sizes, "verdict": v.verdict, "note": ""}
            retries.append(entry)
            if v.verdict != "not-equivalent" or v.counterexample is None:
                entry["note"] = "no counterexample at these sizes"
                break
            embed(v, emb, small_ref, *originals, runner=runner, options=options)
            cv = v.counterexample
            if cv is not None and cv.embedded:
                v.retries = retries
                entry["note"] = "confirmed at the original sizes"
                v.reason += f" (the witness at the smallest sizes ({first_sizes}) was not: {why})"
                return v
            entry["note"] = why_unconfirmed(cv) if cv is not None else ""
    full = _without_shrinking(originals, options, runner, retries, why)
    if full is not None:
        return full
    verdict.verdict = "unknown"
    c.confirmed_at = "shrunk sizes" if c.confirmed else None  # where XLA does show it
    tried = "; ".join(f"at {r['sizes']}: {r['verdict'] or '-'}" + (f" ({r['note']})" if r["note"] else "")
                      for r in retries)
    shown = "that the original sizes do not show" if c.embedded is False else "not confirmed at the original sizes"
    a, b = (f"device {c.devices[0]} holds", f"device {c.devices[1]} holds") if c.devices else ("ref", "other")
    verdict.reason = (f"a counterexample at the shrunk sizes {shown}: {why}; "
                      f"{c.what or f'output {c.output}'} at shrunk index {c.shrunk_index}: {a} {c.ref_value}, "
                      f"{b} {c.other_value}"
                      + (f"; retried {tried}" if tried else "")
                      + _located(c.first_divergence))
    verdict.retries = retries
    return verdict


def _located(fd: dict[str, Any] | None) -> str:
    """Where the shrunk runs first differ, for the one-line reason of an unconfirmed
    witness (a user who reads only that line learns the op and the source line to look at,
    as a confirmed one's report gives them)."""
    if not fd or fd.get("moved") or not fd.get("loc"):
        return ""
    what = f"{fd['op']} at {fd['loc']}" if fd.get("op") else f"a stage starting at {fd['loc']}"
    stage = f", {fd['stage']}" if fd.get("stage") else ""
    return f"; the shrunk runs first differ at {what}{stage}"


def confirm_divergence(c: Counterexample, e: Any, small_ref: Module, ref: Module, other: Module,
                       runner: Any = None, fills: Sequence[int | float] = ()) -> bool:
    """A replica divergence found at the shrunk sizes, embedded into the original sizes
    and replayed there on XLA on the program that diverges, comparing the same two
    devices' copies of the embedded element (`replay_at_original_sizes`). A divergence
    that shows only at the shrunk sizes is the same ghost as a difference that does: exit
    1 needs it reproduced (issue 12 item 4); not reproduced, the caller retries at grown
    sizes like any unconfirmed witness."""
    assert c.devices is not None and len(c.devices) == 2
    c.shrunk_index = list(c.index)
    return replay_at_original_sizes(c, e, small_ref, ref, other, runner, devices=(c.devices[0], c.devices[1]),
                                    fills=fills)


def replay_at_original_sizes(c: Counterexample, e: Any, small_ref: Module, ref: Module, other: Module,
                             runner: Any = None, devices: tuple[int, int] | None = None,
                             fills: Sequence[int | float] = ()) -> bool:
    """The shrunk witness placed into the original sizes (shard blocks kept, each layout
    of `embed.LAYOUTS` until one reproduces) and replayed on XLA: the two programs' values
    of the embedded element, or with `devices` those two devices' copies of it on program
    `c.side`. Reproduced, the witness becomes the original-size one (`embedded`,
    `confirmed_at: "original sizes"`)."""
    from tv_mlir.shrink.embed import LAYOUTS, embed_inputs
    from tv_mlir.witness.replay import xla_replay
    from tv_mlir.witness.settle import concrete_inputs, py_list

    small = concrete_inputs(c, small_ref.global_arg_types())
    for layout in LAYOUTS:
        arrays = embed_inputs(e, small, layout, fills)
        index = tuple(e.index(c.output, c.index, layout))
        r = xla_replay(ref, other, arrays, c.output, index, side=c.side if devices else "", devices=devices,
                       runner=runner)
        if r.confirmed:
            break
    r.backend = "xla, original sizes"
    c.replay.append(r)
    c.embedded = bool(r.confirmed)
    if r.error:
        c.not_embedded = f"the replay at the original sizes failed: {r.error}"
    if c.embedded:
        c.confirmed_at = "original sizes"
        c.inputs = {name: py_list(a) for name, a in zip(c.inputs, arrays)}
        c.index, c.ref_value, c.other_value = list(index), r.ref_value, r.other_value
    return c.embedded


def xla_failed_on_shrunk(verdict: Verdict) -> str:
    """The XLA error, when a verdict at the shrunk sizes is `unknown` only because XLA could
    not run the shrunk modules on an approximated op's witness (settle.XLA_FAILED on every
    unknown output), else "". Shrinking can make a module XLA refuses (an unreduced axis
    over a dim the plan made non-divisible: testdata/clients/unreduced_halved.*), which
    says nothing of the programs as given."""
    from tv_mlir.witness.settle import XLA_FAILED

    if verdict.verdict != "unknown" or not (verdict.shrink and verdict.shrink.get("applied")):
        return ""
    unknown = [r for r in verdict.outputs if r.verdict == "unknown"]
    if not unknown or not all(XLA_FAILED in r.detail for r in unknown):
        return ""
    return unknown[0].detail.split(f"{XLA_FAILED}: ", 1)[-1]


def retry_unreplayable(verdict: Verdict, originals: tuple[Module, Module], options: Options,
                       runner: Any) -> Verdict:
    """A shrunk witness XLA could not run (`xla_failed_on_shrunk`): the pair verified
    without shrinking when it is affordable (`_without_shrinking`), as `--no-shrink` would
    verify it; else the shrunk verdict, `unknown`, with the attempt in `retries`."""
    failed = xla_failed_on_shrunk(verdict)
    retries: list[dict[str, Any]] = []
    first_line = failed.splitlines()[0] if failed else ""
    why = f"XLA could not run the shrunk modules on its witness: {first_line}"
    full = _without_shrinking(originals, options, runner, retries, why, shown=False)
    if full is not None:
        return full
    verdict.retries = retries
    return verdict


def _without_shrinking(originals: tuple[Module, Module], options: Options, runner: Any,
                       retries: list[dict[str, Any]], why: str, shown: bool = True) -> Verdict | None:
    """`shown`: the shrunk witness ran at the original sizes (or could have) and was not
    shown there; False: it could not be replayed at all."""
    ref, other = originals
    elements = sum(t.size for m in originals for t in m.main.arg_types) + \
        sum(t.size for m in originals for f in m.funcs.values() for op in f.body.walk() for t in op.result_types)
    b = fullsize.budget(ref, other, "on" if options.full_size_check == "on" else "auto")
    if not b.run or elements > NO_SHRINK_MAX_ELEMENTS:
        note = b.reason if not b.run else f"{elements} tensor elements, over {NO_SHRINK_MAX_ELEMENTS}"
        retries.append({"sizes": "original", "verdict": "", "note": f"not tried without shrinking: {note}"})
        return None
    progress(options, "retry: verifying at the original sizes (no shrinking)")
    v = prove_pair(ref, other, options)
    c = v.counterexample
    entry = {"sizes": "original", "verdict": v.verdict, "note": ""}
    retries.append(entry)
    # Without shrinking, the verdict is the one `--no-shrink` gives: a counterexample there
    # is exact at the original sizes (an approximated one counts only when XLA shows it,
    # as always), confirmed by XLA unless XLA cannot run here.
    if v.verdict in ("equivalent", "not-equivalent"):
        if c is not None:
            c.confirmed_at = "original sizes" if c.confirmed else None
        what = "was not shown by them" if shown else "could not be replayed"
        v.shrink = {"applied": False,
                    "reason": f"verified at the original sizes: a counterexample at the shrunk sizes {what} ({why})"}
        v.retries = retries
        return v
    entry["note"] = "no confirmed verdict"
    return None


def _sizes(shrink: dict[str, Any] | None) -> str:
    return ", ".join(f"{e['original']}->{e['verified']}" for e in (shrink or {}).get("shrunk", []))


__all__ = ["MAX_GROW", "NO_SHRINK_MAX_ELEMENTS", "confirm_divergence", "retry", "retry_unreplayable", "why_unconfirmed",
           "xla_failed_on_shrunk"]
