"""Human text and JSON renderings of a Verdict."""
from __future__ import annotations

import json
from typing import Any

from .verdict import Verdict


def to_json(v: Verdict) -> str:
    return json.dumps(v.to_dict(), default=_default, sort_keys=False)


def _default(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def _fmt_array(values: Any) -> str:
    return json.dumps(values, default=_default)


def to_text(v: Verdict) -> str:
    lines = [f"verdict: {v.verdict}", f"reason:  {v.reason}", f"time:    {v.time_s:.3f} s"]
    if v.outputs:
        lines.append("outputs:")
        for o in v.outputs:
            detail = f"  ({o.detail})" if o.detail else ""
            lines.append(f"  #{o.index}: {o.verdict:<15} {o.elements} elements, {o.syntactic} by simplification{detail}")
    c = v.counterexample
    if c is not None:
        lines.append("counterexample:")
        for name, vals in c.inputs.items():
            lines.append(f"  {name} = {_fmt_array(vals)}")
        lines.append(f"  output #{c.output}{c.index}: ref = {c.ref_value}, other = {c.other_value}")
        for r in c.replay:
            if r.error:
                lines.append(f"  replay ({r.backend}): failed: {r.error}")
            else:
                state = "confirmed" if r.confirmed else "NOT reproduced"
                lines.append(f"  replay ({r.backend}): ref = {r.ref_value}, other = {r.other_value}: {state}")
    for u in v.unsupported:
        lines.append(f"unsupported: {u['op']} at {u['loc']}: {u['message']}")
    if v.approximations:
        lines.append(f"approximations (uninterpreted): {', '.join(v.approximations)}")
    for p in v.precision:
        lines.append(f"precision: {p}")
    return "\n".join(lines)
