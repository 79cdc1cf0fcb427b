"""The shrink plan of every program pair in testdata/, as JSON: per pair the map's classes
(original size, verified size, where) and the rewritten constants. A new shrinking rule
must leave the plans it is not about as they were; this is how that is checked (issue 12:
"every testdata plan's shrink map is unchanged where it should be").

    .venv/bin/python testdata/shrink_rules/plan_snapshot.py OUT.json [DIR ...]
    .venv/bin/python testdata/shrink_rules/plan_snapshot.py --diff A.json B.json

Pairs: every manifest's entries with a `ref` and one or more of `shardy`, `gspmd`,
`partitioned`, `ok`, `bug*` files, or `a` and `b`; and in folders without a manifest,
`P.ref.mlir` with every `P.*.mlir` (and `*.partitioned.mlir` of a `mut_` prefix with
`fwdbwd.ref.mlir`'s folder siblings is left out: their reference is not named). Programs
over MAX_BYTES of text (the 32- and 126-layer depth stacks) are skipped and listed.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))  # PYTHONPATH first: a baseline tree's tv_mlir

MAX_BYTES = 20_000_000
_OTHER_KEYS = ("shardy", "gspmd", "partitioned", "ok", "b", "other", "sharded")


def _from_manifest(folder: Path, data: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    entries = data if isinstance(data, list) else list(data.values()) if isinstance(data, dict) else []
    for e in entries:
        if not isinstance(e, dict):
            continue
        files = e.get("files") if isinstance(e.get("files"), dict) else e
        ref = files.get("ref") or files.get("a")
        if not isinstance(ref, str):
            continue
        for k, v in files.items():
            if isinstance(v, str) and v.endswith(".mlir") and v != ref \
                    and (k in _OTHER_KEYS or k.startswith("bug")):
                out.append((str(folder / ref), str(folder / v)))
    return out


def pairs(dirs: list[Path]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for folder in dirs:
        manifests = sorted(folder.glob("manifest*.json"))
        for m in manifests:
            out.extend(_from_manifest(folder, json.loads(m.read_text())))
        if not manifests:
            for ref in sorted(folder.glob("*.ref.mlir")):
                stem = ref.name[: -len(".ref.mlir")]
                for other in sorted(folder.glob(f"{stem}.*.mlir")):
                    if other != ref:
                        out.append((str(ref), str(other)))
    return list(dict.fromkeys(p for p in out if Path(p[0]).exists() and Path(p[1]).exists()))


def snapshot(dirs: list[Path]) -> dict[str, Any]:
    from tv_mlir.api import prepare
    from tv_mlir.frontend.classify import check_signatures
    from tv_mlir.options import Options
    from tv_mlir.shrink.pair import _raw
    from tv_mlir.shrink.plan import plan

    out: dict[str, Any] = {}
    for ref, other in pairs(dirs):
        key = f"{Path(ref).relative_to(ROOT)} | {Path(other).name}"
        if max(Path(ref).stat().st_size, Path(other).stat().st_size) > MAX_BYTES:
            out[key] = "skipped: too large"
            continue
        t0 = time.perf_counter()
        try:
            r, o = prepare(ref, Options()), prepare(other, Options())
            check_signatures(r, o)
            p = plan(_raw(ref, r).module, _raw(other, o).module)
            out[key] = {"classes": [[e.original, e.verified, e.where] for e in p.entries],
                        "constants": sorted(f"{k[0]} {k[1]} = {v}" for k, v in p.constants.items())}
        except Exception as e:  # noqa: BLE001 - a pair that does not plan is recorded, not fatal
            out[key] = f"error: {type(e).__name__}: {str(e)[:200]}"
        print(f"{time.perf_counter() - t0:6.2f}s {key}", file=sys.stderr, flush=True)
    return out


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            lines.append(f"{key}:\n  before {json.dumps(a.get(key))}\n  after  {json.dumps(b.get(key))}")
    return lines


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--diff":
        a, b = (json.loads(Path(p).read_text()) for p in argv[1:3])
        lines = diff(a, b)
        print("\n".join(lines) or f"no plan changed ({len(a)} pairs)")
        return 1 if lines else 0
    dirs = [Path(d).resolve() for d in argv[1:]] or sorted(p for p in (ROOT / "testdata").iterdir() if p.is_dir())
    snap = snapshot(dirs)
    Path(argv[0]).write_text(json.dumps(snap, indent=0, sort_keys=True) + "\n")
    print(f"{len(snap)} pairs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
