"""Every bundled testdata pair's verdict and time, one JSON object per line.

A restructuring or a new core must not change a verdict: run this before and after
(`python bench/verdicts.py > before.jsonl`, then again, then `--compare BEFORE AFTER`),
which prints the pairs whose verdict changed and the total times of both runs. `--core own`
runs the project's own symbolic core instead of the z3 one.
Not a test: nothing here asserts on time."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
ROOT = Path(__file__).resolve().parents[1]
TESTDATA = ROOT / "testdata"
FORMS = ("shardy", "gspmd", "partitioned")


def pairs(sections: list[str]) -> Iterator[tuple[str, Path, Path]]:
    """(name, ref path, other path) for every pair in the chosen testdata folders."""
    for folder in ("pairs", "hand"):
        if folder not in sections:
            continue
        for name in json.loads((TESTDATA / folder / "manifest.json").read_text()):
            yield f"{folder}/{name}", TESTDATA / folder / f"{name}.a.mlir", TESTDATA / folder / f"{name}.b.mlir"
    if "big" in sections:
        for name, e in json.loads((TESTDATA / "big/manifest.json").read_text()).items():
            yield f"big/{name}", TESTDATA / "big" / e["a"], TESTDATA / "big" / e["b"]
    for folder in ("sharded", "sharded_big"):
        if folder not in sections:
            continue
        for e in json.loads((TESTDATA / folder / "manifest.json").read_text()):
            for form in FORMS:
                yield f"{folder}/{e['name']}.{form}", TESTDATA / folder / e["ref"], TESTDATA / folder / e[form]


def run(sections: list[str], timeout: float, core: str) -> None:
    from tv_mlir import verify

    for name, ref, other in pairs(sections):
        t = time.perf_counter()
        v = verify(ref, other, timeout_s=timeout, core=core)
        print(json.dumps({"pair": name, "verdict": v.verdict, "time_s": round(time.perf_counter() - t, 2)}),
              flush=True)


def compare(before: Path, after: Path) -> int:
    def load(p: Path) -> dict[str, dict]:
        return {r["pair"]: r for r in map(json.loads, p.read_text().splitlines()) if r}

    a, b = load(before), load(after)
    changed = [k for k in a if k in b and a[k]["verdict"] != b[k]["verdict"]]
    for k in changed:
        print(f"{k}: {a[k]['verdict']} -> {b[k]['verdict']}")
    common = [k for k in a if k in b]
    ta, tb = sum(a[k]["time_s"] for k in common), sum(b[k]["time_s"] for k in common)
    print(f"{len(common)} pairs in both runs, {len(changed)} verdicts changed; total time {ta:.1f} s -> {tb:.1f} s")
    return 1 if changed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sections", default="pairs,hand,big,sharded,sharded_big")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--core", default="z3", choices=("z3", "own"), help="the symbolic core (Options.core)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    run(args.sections.split(","), args.timeout, args.core)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
