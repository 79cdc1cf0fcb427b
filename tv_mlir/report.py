"""Human text and JSON renderings of a Verdict."""
from __future__ import annotations

import json
from typing import Any

from tv_mlir.options import INPUT_DOMAINS
from tv_mlir.verdict import Verdict


def to_json(v: Verdict) -> str:
    return json.dumps(v.to_dict(), default=_default, sort_keys=False)


def error_json(kind: str, message: str, exit_code: int) -> str:
    """The one JSON object `--json` prints when there is no verdict: `verdict` is "error"
    (as in verdict.EXIT_CODES), `exit_code` the process's exit code, `kind` one of usage,
    parse, shape, unsupported, internal, interrupted; `error` the one-line message
    also printed on stderr."""
    return json.dumps({"verdict": "error", "exit_code": exit_code, "kind": kind, "error": message})


def _default(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def _fmt_array(values: Any) -> str:
    return json.dumps(values, default=_default)


def _fmt_input(values: Any) -> str:
    """An input array; mostly-zero ones (minimised witnesses) as their non-zero entries, at
    most MAX_LISTED of them (a witness replayed at the original sizes has millions)."""
    import numpy as np

    try:
        arr = np.asarray(values)
    except ValueError:  # ragged: shown as given
        return _fmt_array(values)
    if arr.dtype.kind in "US":  # "inf"/"nan" written as text among numbers
        arr = np.array(values, dtype=object)
    if arr.ndim == 0 or arr.size <= 8:
        return _fmt_array(values)
    nonzero = np.argwhere(arr != 0)  # numpy's own loop: a Python one took 27 s at 25M entries
    if len(nonzero) * 4 > arr.size:
        return _fmt_array(values)
    shape = "x".join(str(d) for d in arr.shape)
    if not len(nonzero):
        return f"zeros({shape})"
    listed = [tuple(int(i) for i in idx) for idx in nonzero[:MAX_LISTED]]
    entries = ", ".join(f"[{', '.join(map(str, idx))}] = {_fmt_array(np.asarray(arr[idx]).tolist())}"
                        for idx in listed)
    more = f", ... and {len(nonzero) - MAX_LISTED} more non-zero entries" if len(nonzero) > MAX_LISTED else ""
    return f"zeros({shape}) except {entries}{more}"


MAX_LISTED = 64


def _shrink_lines(shrink: dict[str, Any] | None) -> list[str]:
    if not shrink:
        return []
    lines = []
    sym = shrink.get("symbolic")
    if sym:
        lines.append(f"symbolic shapes: the dynamic dims (?) were instantiated at {sym['instantiated_at']}"
                     + (", then shrunk" if shrink.get("applied") else ""))
    if not shrink.get("applied"):
        return lines + [f"shrink:  not applied: {shrink.get('reason', '')}"]
    shrunk, kept = shrink["shrunk"], shrink["kept"]
    lines += [f"shrink:  {len(shrunk)} dimension classes shrunk, {len(kept)} kept, "
             f"{shrink['constants_rewritten']} size constants rewritten; verified at the sizes on the right, "
             f"carried over by docs/shrinking.md"]
    second = shrink.get("second") or {}
    at_second = {e["class"]: e for e in second.get("sizes", [])}
    for e in shrunk:
        s = at_second.get(e.get("class"))
        grown = f" (second: {s['second']})" if s is not None else ""
        lines.append(f"  {e['original']:>8} -> {e['verified']:<4} {e['role']:<24} {e['where']}{grown}")
    for e in kept:
        lines.append(f"  {e['original']:>8} kept  {e['where']}: {e.get('reason', '')}")
    return lines + _second_lines(second)


def _second_lines(second: dict[str, Any]) -> list[str]:
    """The second witness of an `equivalent` at shrunk sizes (api._second_witness)."""
    if not second:
        return []
    if "verdict" not in second:
        return [f"second:  not proved: {second.get('skipped', '')}"]
    sizes = second["sizes"]
    grown = sum(1 for e in sizes if e["second"] != e["first"])
    lines = [f"second:  {second['verdict']} at grown sizes ({grown} of {len(sizes)} shrunk classes larger, "
             f"shown as 'second:' above; {second['time_s']:.2f} s)"
             + (f": {second['reason']}" if second.get("reason") else "")]
    notes: dict[str, list[str]] = {}
    for e in sizes:
        if e.get("note"):
            notes.setdefault(e["note"], []).append(f"{e['where']} ({e['first']})")
    for note, where in notes.items():
        lines.append(f"  same size at both: {', '.join(where)}: {note}")
    return lines


def _full_size_lines(v: Verdict) -> list[str]:
    lines = []
    for r in v.retries:
        state = r["verdict"] or "not verified"
        lines.append(f"retry:   at {r['sizes'] or '-'}: {state}" + (f" ({r['note']})" if r["note"] else ""))
    f = v.full_size_check
    shrunk = bool(v.shrink and v.shrink.get("applied"))
    if f is not None and (f.ran or f.outcome == "failed" or (shrunk and v.verdict == "equivalent")):
        label = "ran" if f.ran else ("failed" if f.outcome == "failed" else "not run")
        lines.append(f"full-size check: {label}: {f.reason}")
    return lines


def _stage_lines(st: dict[str, Any] | None) -> list[str]:
    if not st:
        return []
    if not st.get("used"):
        return [f"stages:  none, proved whole ({st.get('reason', '')})"]
    lines = [f"stages:  {st['count']} ({st['proved']} proved, {st['reused']} reused, {st['cached']} from the cache) "
             f"in {st['time_s']:.1f} s"]
    c = st.get("covered")
    if c:
        lines.append(f"  {c['name']} is {c['verdict']} at free inputs ({c['reason']}); proved again with the stages "
                     f"before it:")
    for w in st.get("widened", []):
        lines.append(f"  {w['name']} (widened): {w['verdict']}" + (f": {w['reason']}" if w["verdict"] != "equivalent"
                                                                  else ""))
    f = st.get("failed")
    if f:
        at = f" at {', '.join(f['locs'][:3])}" if f.get("locs") else ""
        lines.append(f"  {f['name']} is {f['verdict']}{at}: {f['reason']}")
        if st.get("lifted"):
            lines.append("  not proved whole: a random input of the programs shows the difference (minimised, "
                         "confirmed on XLA)")
        else:
            lines.append(f"  the pair proved whole: {st.get('whole')}")
    return lines


def to_text(v: Verdict) -> str:
    lines = [f"verdict: {v.verdict}", f"reason:  {v.reason}",
             f"inputs:  {INPUT_DOMAINS.get(v.inputs, v.inputs)}" + (" (--inputs ieee for +-inf and NaN)"
                                                                  if v.inputs == "finite" else ""),
             f"time:    {v.time_s:.3f} s"]
    if v.assume:
        lines.insert(3, "assume:  " + ", ".join(f"{name} in [{lo}, {hi})" for name, (lo, hi) in v.assume.items()))
    lines.extend(_shrink_lines(v.shrink))
    lines.extend(_full_size_lines(v))
    lines.extend(_stage_lines(v.stages))
    if v.outputs:
        lines.append("outputs:")
        replicas = [o for o in v.outputs if o.what.startswith("replicas")]
        for o in v.outputs:
            if o in replicas and o.verdict == "equivalent":
                continue  # summarised below
            detail = f"  ({o.detail})" if o.detail else ""
            label = f"#{o.index}" if not o.what or o.what.startswith("output") else o.what
            lines.append(f"  {label}: {o.verdict:<15} {o.elements} elements, {o.syntactic} by simplification{detail}")
        if replicas:
            held = sum(1 for o in replicas if o.verdict == "equivalent")
            lines.append(f"  replica obligations: {held} of {len(replicas)} hold")
    c = v.counterexample
    if c is not None:
        notes = []
        if c.minimized:
            notes.append("minimised")
        if c.completed:
            notes.append("found near a solver model that XLA did not reproduce")
        if c.unique is True:
            notes.append("the only witness the solver finds")
        elif c.unique is False:
            notes.append("the solver finds other witnesses too")
        if c.found_by == "full-size check":
            notes.insert(0, "found by the full-size check: both original programs on XLA")
        elif c.embedded:
            notes.insert(0, f"found at the shrunk sizes (index {c.shrunk_index}), embedded into the original "
                            f"sizes and replayed there")
        elif v.shrink and v.shrink.get("applied"):
            why = ("its embedding into the original sizes is not reproduced there" if c.embedded is False else
                   c.not_embedded or "not carried back to the original sizes")
            notes.insert(0, f"at the shrunk sizes above; {why}")
        lines.append("counterexample" + (f" ({'; '.join(notes)})" if notes else "") + ":")
        for name, vals in c.inputs.items():
            lines.append(f"  {name} = {_fmt_input(vals)}")
        if c.devices:
            lines.append(f"  {c.what}, index {c.index}: device {c.devices[0]} = {c.ref_value}, "
                         f"device {c.devices[1]} = {c.other_value}")
        else:
            lines.append(f"  output #{c.output}{c.index}: ref = {c.ref_value}, other = {c.other_value}")
        fd = c.first_divergence
        if fd and fd.get("moved"):
            h = fd["holds"]
            line = f"  first divergence: none computed; the value is {h['op']} {h['value']}{h['index']} " \
                   f"at {h['loc']}"
            if "expected" in fd:
                e = fd["expected"]
                line += f", where the reference has {e['value']}{e['index']} ({e['op']} at {e['loc']})"
            lines.append(line + ": data moved to the wrong place")
        elif fd and fd.get("op") is None:  # a failed stage its own proof did not locate further
            lines.append(f"  first divergence: in {fd.get('stage', 'a stage')}, which starts at {fd['loc']} "
                         f"(in {fd['program']})")
        elif fd:
            device = f" on device {fd['device']}" if "device" in fd else ""
            stage = f", {fd['stage']}" if "stage" in fd else ""
            lines.append(f"  first divergence: {fd['op']} at {fd['loc']}{device} (in {fd['program']}{stage})")
        elif c.found_by == "full-size check":
            lines.append("  first divergence: not located (found by running both programs on XLA, not by the sweep)")
        else:
            lines.append("  first divergence: none found (every value on the way has a reference counterpart: "
                         "they end up at other positions)")
        for r in c.replay:
            if r.error:
                lines.append(f"  replay ({r.backend}): failed: {r.error}")
            else:
                state = "confirmed" if r.confirmed else "NOT reproduced"
                a, b = (f"device {c.devices[0]}", f"device {c.devices[1]}") if c.devices else ("ref", "other")
                lines.append(f"  replay ({r.backend}): {a} = {r.ref_value}, {b} = {r.other_value}: {state}")
        lines.append(f"  confirmed at: {c.confirmed_at or 'nowhere (XLA does not show it)'}")
    for u in v.unsupported:
        lines.append(f"unsupported: {u['op']} at {u['loc']}: {u['message']}")
    if v.approximations:
        lines.append(f"approximations (uninterpreted): {', '.join(v.approximations)}")
    for p in v.precision:
        lines.append(f"precision: {p}")
    return "\n".join(lines)
