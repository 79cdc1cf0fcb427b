"""Human text and JSON renderings of a Verdict."""
from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from tv_mlir.assume import describe as describe_assume
from tv_mlir.options import INPUT_DOMAINS
from tv_mlir.verdict import Verdict

# The `--json` object's layout (README, "--json"); 2: arrays of more than DENSE_MAX elements
# as array objects (`encode_array`), `schema_version` added.
SCHEMA_VERSION = 2
# Arrays up to this many elements are written as nested lists, as in version 1.
DENSE_MAX = 64
# A larger array that is not sparse is written as a nested list up to this many elements,
# beyond it as its bytes in base64 (a witness at the original sizes of an 8B-wide plan has
# tens of millions of elements: 126 MB as JSON numbers).
LIST_MAX = 4096


def to_json(v: Verdict) -> str:
    """The verdict as one JSON object (README, "--json"). Arrays in the counterexample
    (inputs, and any array-valued value) larger than DENSE_MAX elements are array objects
    (`encode_array`); `inputs_from_json` rebuilds the inputs."""
    c = v.counterexample
    # asdict copies every element of a nested list in Python: the inputs are taken out first.
    light = v if c is None else dataclasses.replace(v, counterexample=dataclasses.replace(c, inputs={}))
    d = {"schema_version": SCHEMA_VERSION, **light.to_dict()}
    if c is not None:
        cd = d["counterexample"]
        cd["inputs"] = {name: encode_array(vals) for name, vals in c.inputs.items()}
        for holder in (cd, *cd["replay"]):
            for key in ("ref_value", "other_value"):
                if isinstance(holder.get(key), (list, np.ndarray)):
                    holder[key] = encode_array(holder[key])
    return json.dumps(d, default=_default, sort_keys=False)


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


# ---------------------------------------------------------------------------
# Arrays in the JSON (README, "--json", "Arrays"). Values are JSON numbers and booleans,
# non-finite floats the strings "nan", "inf", "-inf" (as everywhere in the report).

_NAMED = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}


def _as_array(values: Any) -> np.ndarray:
    """A counterexample's values (nested lists with non-finite floats named, or an array)
    as a numpy array of a dtype JSON numbers carry exactly: bool, an integer type, float64."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values.astype(np.float64) if values.dtype.kind == "f" else values
    leaf = values
    while isinstance(leaf, list) and leaf:
        leaf = leaf[0]
    try:
        if isinstance(leaf, (float, str)):  # a float array ("nan", "inf" parsed by numpy)
            return np.asarray(values, dtype=np.float64)  # inferred, numpy made 16M strings in 12 s
        arr = np.asarray(values)
    except ValueError as exc:  # ragged
        raise ValueError(f"not an array: {exc}") from None
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    if arr.dtype.kind in "US":  # "nan"/"inf" among numbers: numpy parses the names
        return np.asarray(values, dtype=np.float64)
    raise ValueError(f"not an array of numbers ({arr.dtype})")  # ints beyond 64 bits, None, ...


def _json_values(flat: np.ndarray) -> list[Any]:
    """Elements of a 1-d array as JSON values: numbers, booleans, "nan"/"inf"/"-inf"."""
    out = flat.tolist()
    if flat.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(flat))
        for i in bad.tolist():
            x = out[i]
            out[i] = "nan" if x != x else ("inf" if x > 0 else "-inf")
    return out


def _json_value(x: np.ndarray) -> Any:
    return _json_values(x.reshape(1))[0]


def _differs(arr: np.ndarray, default: np.ndarray) -> np.ndarray:
    """Where `arr` is not `default` bit for bit as JSON tells values apart: -0.0 is not 0.0,
    every NaN is the same NaN."""
    if arr.dtype.kind != "f":
        return np.asarray(arr != default)
    if np.isnan(default):
        return ~np.isnan(arr)
    return np.asarray((arr != default) | (np.signbit(arr) != np.signbit(default)))


def encode_array(values: Any) -> Any:
    """An array as the JSON value the report writes for it. Up to DENSE_MAX elements (and
    anything that is not an array: a scalar, a ragged list) as given, nested lists; larger
    ones as an object {"shape", "dtype"} plus either
      "default", "entries": the array is `default` except at each [i0, ..., value] of
          "entries" (index in shape order, C order): when that is shorter than the values;
      "data": the values as nested lists, up to LIST_MAX elements;
      "base64": the values' bytes, little-endian, C order (np.frombuffer), beyond that.
    `decode_array` is the inverse: lossless for bool, integer and float64 values (-0.0
    and the infinities kept; a NaN is "nan")."""
    try:
        arr = _as_array(values)
    except (ValueError, KeyError, TypeError):
        return values
    if arr.ndim == 0 or arr.size <= DENSE_MAX:
        if not isinstance(values, np.ndarray):
            return values
        nested = np.array(_json_values(arr.reshape(-1)) + [None], dtype=object)[:-1]
        return nested.reshape(arr.shape).tolist() if arr.ndim else nested[0]
    head = {"shape": list(arr.shape), "dtype": arr.dtype.name}
    flat = arr.reshape(-1)
    default = np.zeros((), arr.dtype)
    mask = _differs(flat, default)
    count = int(np.count_nonzero(mask))
    if count * (arr.ndim + 1) >= arr.size:  # not mostly zero: perhaps mostly another value (ones)
        for candidate in (flat[0], flat[arr.size // 2], flat[-1]):
            other = _differs(flat, candidate)
            if (n := int(np.count_nonzero(other))) < count:
                default, mask, count = candidate, other, n
    if count * (arr.ndim + 1) < arr.size:
        where = np.nonzero(mask)[0]
        index = np.stack(np.unravel_index(where, arr.shape), axis=1).tolist()
        entries = [i + [x] for i, x in zip(index, _json_values(flat[where]))]
        return {**head, "default": _json_value(default), "entries": entries}
    if arr.size <= LIST_MAX:
        return {**head, "data": _json_values(flat)}
    little = flat.astype(arr.dtype.newbyteorder("<"), copy=False)
    return {**head, "base64": base64.b64encode(little.tobytes()).decode("ascii")}


def decode_array(obj: Any) -> np.ndarray:
    """The array `encode_array` wrote (nested lists and scalars as numpy reads them, with
    "nan", "inf", "-inf" as floats; array objects at their "dtype")."""
    if not isinstance(obj, Mapping):
        return _as_array(obj)
    shape = tuple(int(n) for n in obj["shape"])
    dtype = np.dtype(obj["dtype"])
    if "base64" in obj:
        raw = np.frombuffer(base64.b64decode(obj["base64"]), dtype=dtype.newbyteorder("<"))
        return raw.astype(dtype).reshape(shape)
    if "data" in obj:
        return _as_array(obj["data"]).astype(dtype).reshape(shape)
    arr = np.full(shape, _NAMED.get(obj["default"], obj["default"]), dtype=dtype)
    entries = obj["entries"]
    if entries:
        index = tuple(np.array([e[:-1] for e in entries], dtype=np.intp).T)
        arr[index] = np.array([_NAMED.get(e[-1], e[-1]) if isinstance(e[-1], str) else e[-1] for e in entries],
                              dtype=dtype)
    return arr


def inputs_from_json(obj: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The counterexample's inputs, by name in argument order, from the parsed `--json`
    object (or its "counterexample"): feed them to both programs to see the difference."""
    c = obj.get("counterexample", obj) if "verdict" in obj else obj
    if not isinstance(c, Mapping) or "inputs" not in c:
        raise ValueError("no counterexample in this JSON object")
    return {name: decode_array(vals) for name, vals in c["inputs"].items()}


def _fmt_array(values: Any) -> str:
    return json.dumps(values, default=_default)


def _fmt_input(values: Any) -> str:
    """An input array; mostly-zero ones (minimised witnesses) as their non-zero entries, at
    most MAX_LISTED of them (a witness replayed at the original sizes has millions)."""
    try:
        arr = _as_array(values)  # "inf"/"nan" among numbers read as floats
    except ValueError:  # ragged, or not numbers: shown as given
        return _fmt_array(values)
    if arr.ndim == 0 or arr.size <= 8:
        return _fmt_array(values)
    nonzero = np.argwhere(arr != 0)  # numpy's own loop: a Python one took 27 s at 25M entries
    if len(nonzero) * 4 > arr.size:
        return _fmt_array(values)
    shape = "x".join(str(d) for d in arr.shape)
    if not len(nonzero):
        return f"zeros({shape})"
    listed = [tuple(int(i) for i in idx) for idx in nonzero[:MAX_LISTED]]
    entries = ", ".join(f"[{', '.join(map(str, idx))}] = {_fmt_array(_json_value(np.asarray(arr[idx])))}"
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
        lines.insert(3, "assume:  " + ", ".join(describe_assume(v.assume)))
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
            notes.append("other inputs show it too")
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
