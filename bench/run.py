"""Benchmarks: time to verdict for the bundled large pairs and the sharded plans, printed
as tables.
Not a test: nothing here asserts on time."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tv_mlir.api import verify  # noqa: E402


def rows() -> list[tuple[str, Path, Path, str]]:
    big = ROOT / "testdata/big"
    out = []
    for name, e in json.loads((big / "manifest.json").read_text()).items():
        out.append((name, big / e["a"], big / e["b"], e["expect"]))
    return out


def main() -> int:
    timeout = float(os.environ.get("BENCH_TIMEOUT", "60"))
    sections = os.environ.get("BENCH_SECTIONS", "big,sharded,realistic").split(",")
    if "big" in sections:
        big(timeout)
    if "sharded" in sections:
        sharded(timeout)
    if "realistic" in sections:
        realistic(timeout)
    return 0


def big(timeout: float) -> None:
    print(f"{'pair':<18} {'ops a/b':>9} {'expect':<15} {'verdict':<15} {'time s':>7} {'numeric':>8} "
          f"{'symbolic':>9} {'solve':>6} {'merged':>7} {'shared':>7}")
    for name, a, b, expect in rows():
        t = time.perf_counter()
        v = verify(a, b, timeout_s=timeout)
        dt = time.perf_counter() - t
        s = v.stats
        mark = "" if v.verdict == expect else "  <- differs from expectation"
        print(f"{name:<18} {s.get('ops_ref', 0):>4}/{s.get('ops_other', 0):<4} {expect:<15} {v.verdict:<15} {dt:>7.2f} "
              f"{s.get('numeric_s', 0):>8.2f} {s.get('symbolic_s', 0):>9.2f} {s.get('solve_s', 0):>6.2f} "
              f"{s.get('merged', 0):>7} {s.get('shared_ops', 0):>7}{mark}")
    print(f"\n{os.cpu_count()} cores; per-query solver timeout {timeout:.0f} s (BENCH_TIMEOUT)\n")


def sharded(timeout: float) -> None:
    """Time to verdict of every sharded plan and bug twin in each export form (small sizes:
    a few elements per device, 8 devices); counterexamples include their XLA replay."""
    d = ROOT / "testdata/sharded"
    forms = ("shardy", "gspmd", "partitioned")
    print(f"{'sharded plan':<34} {'expect':<15} " + " ".join(f"{f:>20}" for f in forms))
    totals = dict.fromkeys(forms, 0.0)
    for e in json.loads((d / "manifest.json").read_text()):
        cells = []
        for form in forms:
            t = time.perf_counter()
            v = verify(d / e["ref"], d / e[form], timeout_s=timeout)
            dt = time.perf_counter() - t
            totals[form] += dt
            mark = "" if v.verdict == e["expect"] else "!"
            cells.append(f"{v.verdict[:14] + mark:>14} {dt:5.1f}")
        print(f"{e['name']:<34} {e['expect']:<15} " + " ".join(f"{c:>20}" for c in cells))
    print(f"{'total s':<50} " + " ".join(f"{totals[f]:>20.1f}" for f in forms))
    print("(time s after each verdict, XLA replay of counterexamples included; '!' = not the expected verdict)")


def realistic(timeout: float) -> None:
    """Every plan and twin at Llama-3-8B-like sizes (testdata/sharded_big), verified after
    shape shrinking: time to verdict per form, and the shrink map of the Shardy form."""
    d = ROOT / "testdata/sharded_big"
    forms = ("shardy", "gspmd", "partitioned")
    print(f"\n{'realistic plan (shrunk)':<34} {'expect':<15} " + " ".join(f"{f:>20}" for f in forms)
          + "   shrink map (Shardy form: original->verified)")
    totals = dict.fromkeys(forms, 0.0)
    times: list[float] = []
    notes: list[str] = []
    for e in json.loads((d / "manifest.json").read_text()):
        cells, shrink = [], None
        for form in forms:
            t = time.perf_counter()
            v = verify(d / e["ref"], d / e[form], timeout_s=timeout)
            dt = time.perf_counter() - t
            totals[form] += dt
            times.append(dt)
            shrink = shrink or v.shrink
            mark = "" if v.verdict == e["expect"] else "!"
            cells.append(f"{v.verdict[:14] + mark:>14} {dt:5.1f}")
        smap = " ".join(f"{c['original']}->{c['verified']}" for c in (shrink or {}).get("shrunk", []))
        kept = (shrink or {}).get("kept", [])
        if kept:
            smap += f"; kept {len(kept)}: " + ", ".join(str(c["original"]) for c in kept)
            reasons = sorted({c.get("reason", "").split(" at ")[0] for c in kept})
            notes.append(f"  {e['name']}: kept because " + "; ".join(r for r in reasons if r))
        print(f"{e['name']:<34} {e['expect']:<15} " + " ".join(f"{c:>20}" for c in cells) + f"   {smap}")
    print(f"{'total s':<50} " + " ".join(f"{totals[f]:>20.1f}" for f in forms))
    under5 = sum(1 for t in times if t < 5)
    print(f"{len(times)} verdicts: {under5} under 5 s, {sum(1 for t in times if t < 30)} under 30 s, "
          f"slowest {max(times):.1f} s (shrinking, verification, counterexample minimisation and XLA replay)")
    print("\n".join(notes))


if __name__ == "__main__":
    sys.exit(main())
