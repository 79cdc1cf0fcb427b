"""Benchmarks: time to verdict for the bundled large pairs, the sharded plans and the
core programs (decoder stacks, a Llama training step), printed as tables.
Not a test: nothing here asserts on time."""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tv_mlir.api import verify  # noqa: E402
from tv_mlir.heap import peak_rss_mb  # noqa: E402


def rows() -> list[tuple[str, Path, Path, str]]:
    big = ROOT / "testdata/big"
    out = []
    for name, e in json.loads((big / "manifest.json").read_text()).items():
        out.append((name, big / e["a"], big / e["b"], e["expect"]))
    return out


def main() -> int:
    timeout = float(os.environ.get("BENCH_TIMEOUT", "60"))
    sections = os.environ.get("BENCH_SECTIONS",
                              "big,sharded,realistic,patterns,core,depth,cores,oldcore,flax8b,flaxstep,clients").split(",")
    if "big" in sections:
        big(timeout)
    if "sharded" in sections:
        sharded(timeout)
    if "realistic" in sections:
        realistic(timeout)
    if "patterns" in sections:
        patterns(timeout)
    if "core" in sections:
        core(timeout)
    if "depth" in sections:
        depth(timeout)
    if "cores" in sections:
        cores(timeout)
    if "oldcore" in sections:
        oldcore(timeout)
    if "flax8b" in sections:
        flax8b(timeout)
    if "flaxstep" in sections:
        flaxstep(timeout)
    if "clients" in sections:
        clients(timeout)
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


# The public bug patterns at realistic sizes (testdata/bug_patterns, issue 15): XLA's
# partitioned modules and their one-line bug twins, verified after shrinking (scatter and
# convolution rules, offset tables). Expected: the correct twin equivalent, every bug
# not-equivalent confirmed at the original sizes.
PATTERNS = [("shift_big", "partitioned", "equivalent"), ("shift_big", "reversed_halo.partitioned", "not-equivalent"),
            ("shift_big", "wrong_end.partitioned", "not-equivalent"), ("conv_big", "partitioned", "equivalent"),
            ("conv_big", "reversed_halo.partitioned", "not-equivalent"),
            ("conv_big", "window_offset.partitioned", "not-equivalent"),
            ("conv_big", "wrong_end.partitioned", "not-equivalent")]


def patterns(timeout: float) -> None:
    d = ROOT / "testdata/bug_patterns"
    print(f"\n{'bug pattern (realistic size)':<42} {'expect':<15} {'verdict':<15} {'time s':>7} {'confirmed':<15} "
          "shrink elements")
    for name, kind, expect in PATTERNS:
        t = time.perf_counter()
        v = verify(d / f"{name}.ref.mlir", d / f"{name}.{kind}.mlir", timeout_s=timeout)
        dt = time.perf_counter() - t
        c = v.counterexample
        mark = "" if v.verdict == expect else "  <- differs from expectation"
        print(f"{name + '.' + kind:<42} {expect:<15} {v.verdict:<15} {dt:>7.1f} "
              f"{(c.confirmed_at or '-') if c is not None else '-':<15} {(v.shrink or {}).get('elements', '-')}{mark}")


def core(timeout: float) -> None:
    """The programs of the fast symbolic core (testdata/core, issue 11): tensor-parallel
    decoder stacks of 1 to 16 layers and a dp x tp Llama training step, Shardy form against
    the reference. Each pair runs in a child process killed after BENCH_CORE_LIMIT seconds
    of wall-clock time (default 300), so a pair that does not finish prints "no verdict in
    N s"; BENCH_CORE_ONLY=name,name picks pairs (default: all). Every pair runs on each
    symbolic core of BENCH_CORES (default "z3,own": the z3 terms and the project's own)."""
    d = ROOT / "testdata/core"
    limit = float(os.environ.get("BENCH_CORE_LIMIT", "300"))
    only = [n for n in os.environ.get("BENCH_CORE_ONLY", "").split(",") if n]
    entries = [e for e in json.loads((d / "manifest.json").read_text()) if not only or e["name"] in only]
    cores = [c for c in os.environ.get("BENCH_CORES", "z3,own").split(",") if c]
    print(f"\n{'core program':<30} {'core':<4} {'ops ref/other':>13} {'expect':<15} {'verdict':<22} {'time s':>7} "
          f"{'numeric':>8} {'symbolic':>9} {'solve':>7} {'merged':>7} {'cut_points':>10} {'elem ops':>9} "
          f"{'ops/s':>7} {'peak MB':>8}")
    notes: list[str] = []
    runs = [(e["name"], e, None) for e in entries]
    # A pair with input assumptions in its manifest entry (a train step's optimizer state
    # v >= 0 and step count >= 0, as a user states them) runs once more with them.
    runs += [(e["name"] + " +assume", e, e["assume"]) for e in entries if e.get("assume")]
    for name, e, assume in runs:
        for core_name in cores:
            t = time.perf_counter()
            r = _core_child(d / e["ref"], d / e["shardy"], timeout, limit, core_name, assume)
            dt = time.perf_counter() - t
            ops = f"{r.get('ops_ref', '?')}/{r.get('ops_other', '?')}"
            s = r.get("stats", {})
            if "verdict" in r:
                mark = "" if r["verdict"] == e["expect"] else "  <- differs from expectation"
                print(f"{name:<30} {core_name:<4} {ops:>13} {e['expect']:<15} {r['verdict']:<22} {dt:>7.1f} "
                      f"{s.get('numeric_s', 0):>8.2f} {s.get('symbolic_s', 0):>9.2f} {s.get('solve_s', 0):>7.2f} "
                      f"{s.get('merged', 0):>7} {s.get('cut_points', 0):>10} {s.get('element_ops', 0):>9} "
                      f"{s.get('element_ops_per_s', 0):>7} {r.get('peak_mb', 0):>8.0f}{mark}")
            else:
                print(f"{name:<30} {core_name:<4} {ops:>13} {e['expect']:<15} {r['error']:<22} {dt:>7.1f}")
                notes.append(f"  {name} ({core_name}): last phase finished: {r.get('last_phase') or 'none'}")
    print("(elem ops: scalar operations of the symbolic execution, one per elementwise result, 2K - 1 per dot "
          "result over K, n - 1 per sum of n; ops/s: those per second of symbolic execution, sweep included; "
          "peak MB: the child's peak resident memory)")
    print(f"(ops of the programs as read, after the pass pipeline; per-query solver timeout {timeout:.0f} s "
          f"(BENCH_TIMEOUT), wall-clock limit {limit:.0f} s per pair (BENCH_CORE_LIMIT); {os.cpu_count()} cores)")
    print("\n".join(notes))


def depth(timeout: float) -> None:
    """Staged proofs against depth (issue 13): decoder stacks of 1 to 16 layers
    (testdata/core) and the Llama-shaped stacks of testdata/depth, Shardy form, each in a
    child process with a fresh proof cache (cold) and then again with that cache (warm).
    BENCH_DEPTH_ONLY=name,name picks pairs; BENCH_DEPTH_LIMIT (default 900) is the
    wall-clock limit per run; BENCH_DEPTH_JOBS (default 1) the stage workers."""
    import tempfile

    limit = float(os.environ.get("BENCH_DEPTH_LIMIT", "900"))
    jobs = os.environ.get("BENCH_DEPTH_JOBS", "1")
    only = [n for n in os.environ.get("BENCH_DEPTH_ONLY", "").split(",") if n]
    pairs: list[tuple[str, Path, Path, str]] = []
    for folder in ("core", "depth"):
        manifest = ROOT / "testdata" / folder / "manifest.json"
        if not manifest.exists():
            continue
        for e in json.loads(manifest.read_text()):
            if e.get("shardy") and (not only or e["name"] in only) and not e["name"].startswith("llama"):
                d = manifest.parent
                pairs.append((e["name"], d / e["ref"], d / e["shardy"], e["expect"]))
    print(f"\n{'depth pair':<34} {'expect':<15} {'verdict':<15} {'cold s':>7} {'cold cpu':>8} {'warm s':>7} "
          f"{'warm cpu':>8} {'stages':>7} {'proved':>7} {'reused':>7} {'cached':>7} {'peak MB':>8}")
    colds: dict[str, tuple[str, float]] = {}  # name -> (verdict, cold CPU s): the ratios below
    for name, ref, other, expect in pairs:
        with tempfile.TemporaryDirectory(prefix="tv-mlir-bench-cache-") as cache:
            cold = _depth_child(ref, other, cache, jobs, timeout, limit)
            warm = _depth_child(ref, other, cache, jobs, timeout, limit) if "verdict" in cold else cold
        if "verdict" not in cold:
            print(f"{name:<34} {expect:<15} {cold['error']:<15}")
            continue
        colds[name] = (cold["verdict"], cold["cpu_s"])
        st = cold.get("stages") or {}
        mark = "" if cold["verdict"] == expect else "  <- differs from expectation"
        print(f"{name:<34} {expect:<15} {cold['verdict']:<15} {cold['time_s']:>7.1f} {cold['cpu_s']:>8.1f} "
              f"{warm.get('time_s', float('nan')):>7.1f} {warm.get('cpu_s', float('nan')):>8.1f} "
              f"{st.get('count', '-'):>7} {st.get('proved', '-'):>7} "
              f"{st.get('reused', '-'):>7} {(warm.get('stages') or {}).get('cached', '-'):>7} "
              f"{cold['peak_mb']:>8.0f}{mark}")
    print(f"(time: the whole `verify` in a child process, parsing to verdict, wall s and CPU s (user + sys of the "
          f"child and its children: on shared cores the wall time stretches with the load, the CPU time much less); "
          f"warm: rerun with the cold run's proof cache; stages: proved / reused in the cold run, cached in the warm "
          f"one; {jobs} stage worker(s); {os.cpu_count()} cores)")
    # Issue 13's depth ratios, on CPU seconds: deeper stacks against the 2-layer one (L16 <= 1.5x,
    # L32 <= 2x), and the scan form against the unrolled one (same verdict, within 2x).
    for name, (verdict, t) in colds.items():
        stem, _, layers = name.rpartition("_L")
        if layers.isdigit() and int(layers) > 2 and f"{stem}_L2" in colds:
            target = "1.5x" if int(layers) <= 16 else "2x"
            print(f"{name} / {stem}_L2, cold CPU: {t / colds[f'{stem}_L2'][1]:.2f}x (target <= {target})")
        base = name.removesuffix("_scan")
        if name.endswith("_scan") and base in colds:
            same = "same verdict" if verdict == colds[base][0] else f"verdict {verdict} vs {colds[base][0]}"
            print(f"{name} / {base}, cold CPU: {t / colds[base][1]:.2f}x ({same}; target <= 2x, same verdict)")


def cores(timeout: float) -> None:
    """Old engine against new (issue 11: median speed-up >= 20x): every testdata/big pair and
    every sharded plan (reference against the forms of BENCH_CORES_FORMS, default "shardy";
    "shardy,gspmd" adds the GSPMD form) verified with core="z3" and then core="own", one after
    the other in this process, without the proof cache (a cached stage would time the disk).
    Untimed warm-up runs of both cores first, on an equivalent and a not-equivalent pair, so
    the first pairs do not pay imports, jit compilation and the XLA client for one core only."""
    forms = [f for f in os.environ.get("BENCH_CORES_FORMS", "shardy").split(",") if f]
    d = ROOT / "testdata/sharded"
    plans = json.loads((d / "manifest.json").read_text())
    pairs = list(rows())
    pairs += [(f"{e['name']}.{form}", d / e["ref"], d / e[form], e["expect"]) for e in plans for form in forms]
    warm = {expect: (a, b) for _, a, b, expect in reversed(pairs)}  # the first pair of each expectation
    for a, b in warm.values():
        for core_name in ("z3", "own"):
            verify(a, b, timeout_s=timeout, core=core_name, cache=False)
    print(f"\n{'cores pair':<42} {'expect':<15} {'verdict z3':<15} {'verdict own':<15} {'total z3':>9} "
          f"{'total own':>9} {'ratio':>7} {'sym z3':>8} {'sym own':>8} {'ratio':>7} {'core z3':>8} {'core own':>8} "
          f"{'ratio':>7}")
    ratios: dict[str, list[float]] = {"total": [], "symbolic": [], "core": []}
    for name, a, b, expect in pairs:
        (v_z3, t_z3), (v_own, t_own) = (_timed_verify(a, b, timeout, c) for c in ("z3", "own"))
        cells = []
        for k, key in enumerate(ratios):
            r = _ratio(t_z3[k], t_own[k])
            ratios[key] += [r] if r == r else []  # nan (no symbolic phase, or 0 s) is left out
            w = 9 if k == 0 else 8
            cells.append(f"{t_z3[k]:>{w}.2f} {t_own[k]:>{w}.2f} {r:>6.1f}x")
        print(f"{name:<42} {expect:<15} {v_z3:<15} {v_own:<15} " + " ".join(cells) + _verdict_mark(expect, v_z3, v_own))
    print(f"{len(pairs)} pairs; ratio z3 / own: " + "; ".join(
        f"{key} median {_median(xs):.1f}x, geometric mean {_geomean(xs):.1f}x over {len(xs)}"
        for key, xs in ratios.items()))
    print("(total: the whole `verify`, parse, numeric runs and XLA replay of counterexamples included, which both "
          "cores share; sym: stats['symbolic_cpu_s'], the CPU seconds of the symbolic execution the core changes; "
          "core: sym plus the checks that follow it on the core's terms (counterexample_cpu_s, local_cpu_s, "
          "solve_cpu_s); "
          f"per-query solver timeout {timeout:.0f} s (BENCH_TIMEOUT); {os.cpu_count()} cores)")


# The engine as it was when issue 11 was filed: the last commit before the own term store
# (c0c8653), i.e. the z3 core with the framework of that day. The `cores` section compares
# today's two cores, which share every framework change made since; this one compares what
# a user ran then with what a user runs now.
OLD_ENGINE = "c0c8653^"


def oldcore(timeout: float) -> None:
    """Issue 11's "old engine / new engine" read literally: every testdata/big pair and every
    sharded plan's Shardy form through the CLI of OLD_ENGINE (checked out from this clone's
    history into a temporary directory) and through today's, one process each, one after the
    other per pair (the proof cache off: a cached stage would time the disk). CPU is the
    child's user + sys (imports, parse, numeric runs, XLA replay: all a user waits for);
    sym is stats['symbolic_s'], the wall seconds of the symbolic execution, the only phase
    figure the old engine reports (so read it on a quiet machine)."""
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        for cmd in (["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(old)],
                    ["git", "-C", str(old), "checkout", "--quiet", OLD_ENGINE]):
            if subprocess.run(cmd, capture_output=True).returncode != 0:
                print(f"oldcore: {OLD_ENGINE} is not in this clone's history (a shallow clone?); section skipped\n")
                return
        d = ROOT / "testdata/sharded"
        pairs = list(rows()) + [(f"{e['name']}.shardy", d / e["ref"], d / e["shardy"], e["expect"])
                                for e in json.loads((d / "manifest.json").read_text())]
        print(f"{'old / new engine pair':<42} {'expect':<15} {'verdict old':<15} {'verdict new':<15} "
              f"{'cpu old':>8} {'cpu new':>8} {'ratio':>7} {'sym old':>8} {'sym new':>8} {'ratio':>7}")
        ratios: dict[str, list[float]] = {"cpu": [], "sym": []}
        for name, a, b, expect in pairs:
            (v_old, cpu_old, sym_old), (v_new, cpu_new, sym_new) = (
                _cli_verify(tree, a, b, timeout, Path(tmp)) for tree in (old, ROOT))
            r_cpu, r_sym = _ratio(cpu_old, cpu_new), _ratio(sym_old, sym_new)
            ratios["cpu"] += [r_cpu] if r_cpu == r_cpu else []
            ratios["sym"] += [r_sym] if r_sym == r_sym else []
            mark = "" if v_old == v_new == expect else "  <- " + ", ".join(
                f"{who} {v}" for who, v in (("old", v_old), ("new", v_new)) if v != expect)
            print(f"{name:<42} {expect:<15} {v_old:<15} {v_new:<15} {cpu_old:>8.2f} {cpu_new:>8.2f} {r_cpu:>6.1f}x "
                  f"{sym_old:>8.3f} {sym_new:>8.3f} {r_sym:>6.1f}x{mark}")
        print(f"{len(pairs)} pairs; old / new: " + "; ".join(
            f"{key} median {_median(xs):.1f}x, geometric mean {_geomean(xs):.1f}x over {len(xs)}"
            for key, xs in ratios.items()))
        print(f"(old engine: {OLD_ENGINE}; per-query solver timeout {timeout:.0f} s; {os.cpu_count()} cores)\n")


def _cli_verify(tree: Path, a: Path, b: Path, timeout: float, cwd: Path) -> tuple[str, float, float]:
    """(verdict, CPU s of the CLI process and its children, stats['symbolic_s']) of `tv-mlir verify
    --json` run from the package at `tree`; verdict "error" when it printed no JSON."""
    cmd = [sys.executable, "-m", "tv_mlir", "verify", "--json", "--timeout", str(timeout), str(a), str(b)]
    if tree == ROOT:
        cmd.insert(5, "--no-cache")  # the old engine has no proof cache
    env = {**os.environ, "PYTHONPATH": str(tree)}
    c = _children_cpu()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    cpu = _children_cpu() - c
    try:
        out = json.loads(p.stdout)
    except ValueError:
        return "error", cpu, float("nan")
    return str(out.get("verdict")), cpu, float(out.get("stats", {}).get("symbolic_s", float("nan")))


def _gen_flax(args: list[str], timeout: float) -> dict[str, Any] | None:
    """One `testdata/gen_flax.py` measure in a process of its own (its peak memory is its
    own): the JSON line it prints last, or None when it failed or ran out of time."""
    try:
        p = subprocess.run([sys.executable, str(ROOT / "testdata/gen_flax.py"), *args],
                           capture_output=True, text=True, timeout=max(600.0, 10 * timeout), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0 or not p.stdout.strip():
        return None
    out: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def flax8b(timeout: float) -> None:
    """Issue 14's measure: the flax Llama (testdata/gen_flax.py) at Llama-3-8B widths given as
    ShapeDtypeStructs through tv_mlir.jax.check's export and verify, one process per row
    (`gen_flax.py --measure-8b`): verdict, export and verify times, peak memory."""
    print(f"{'pair':<24} {'verdict':<15} {'export s':>8} {'verify s':>8} {'rss MB':>7}  kept classes")
    for variant in ("fwd", "fwdbwd", "step"):
        for form in ("partitioned", "shardy"):
            m = _gen_flax(["--measure-8b", variant, form], timeout)
            if m is None:
                print(f"{'8b ' + variant + ' ' + form:<24} no verdict")
                continue
            kept = ", ".join(sorted({str(k[0]) for k in m["kept"]}, key=int))
            print(f"{m['pair']:<24} {m['verdict']:<15} {m['export_s']:>8.1f} {m['verify_s']:>8.1f} "
                  f"{m['max_rss_mb']:>7}  {len(m['kept'])}: sizes {kept}")
    print()


def flaxstep(timeout: float) -> None:
    """Issue 14's measure: the flax train step at the issue's tiny dims (1 and 2 decoder
    layers, adamw, partitioned 2x4) through tv_mlir.jax.check, one process per row
    (`gen_flax.py --measure-step LAYERS`: tokens, targets, count and Adam's nu assumed, no
    proof cache). CPU s is check's own, export and verify (this process and its children);
    targets 15 s (1 layer) and 20 s (2 layers)."""
    print(f"{'step':<22} {'verdict':<15} {'cpu s':>6} {'export':>6} {'verify':>6} {'wall s':>6} {'rss MB':>7}  plan")
    for layers in (1, 2):
        m = _gen_flax(["--measure-step", str(layers)], timeout)
        if m is None:
            print(f"{'step L' + str(layers):<22} no verdict")
            continue
        plan = f"{len(m['stages'])} stages" if m["stages"] else "whole"
        print(f"{m['pair']:<22} {m['verdict']:<15} {m['cpu_s']:>6.1f} {m['export_cpu_s']:>6.1f} "
              f"{m['verify_cpu_s']:>6.1f} {m['wall_s']:>6.1f} {m['max_rss_mb']:>7}  {plan}")
    print()


# The real clients of testdata/gen_clients.py too slow for the tests (issue 14): each through
# tv_mlir.jax.check in both forms, one process per row (gen_clients.py --measure).
SLOW_CLIENTS = ("gpt2_fwd", "ln_tied_ce", "nnx_step", "dropout", "typed_key", "categorical", "cumsum_argmax",
                "scan_remat_grad", "optax_chain", "multisteps")


def clients(timeout: float) -> None:
    env = {**os.environ, "CLIENT_TIMEOUT": str(timeout)}
    subprocess.run([sys.executable, str(ROOT / "testdata/gen_clients.py"), "--measure", *SLOW_CLIENTS],
                   cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    print()


def _timed_verify(a: Path, b: Path, timeout: float, core_name: str) -> tuple[str, tuple[float, float, float]]:
    """(verdict, (wall-clock s, symbolic CPU s, core CPU s: symbolic and the checks after it)); a phase
    the run never reached (a verdict before the symbolic execution) counts as nan."""
    t = time.perf_counter()
    v = verify(a, b, timeout_s=timeout, core=core_name, cache=False)
    total = time.perf_counter() - t
    s = v.stats
    # CPU seconds of the verifying thread: the wall figures moved by 15-20% between rounds on
    # a shared machine (docs/architecture.md, round 9).
    symbolic = float(s.get("symbolic_cpu_s", float("nan")))
    after = sum(float(s.get(k, 0.0)) for k in ("counterexample_cpu_s", "local_cpu_s", "solve_cpu_s"))
    return v.verdict, (total, symbolic, symbolic + after)


def _ratio(old: float, new: float) -> float:
    return old / new if new > 0 else float("nan")


def _verdict_mark(expect: str, z3: str, own: str) -> str:
    notes = []
    if z3 != own:
        notes.append("cores disagree")
    notes += [f"{c} not expected" for c, v in (("z3", z3), ("own", own)) if v != expect]
    return "  <- " + ", ".join(notes) if notes else ""


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _geomean(xs: list[float]) -> float:
    return statistics.geometric_mean(xs) if xs and min(xs) > 0 else float("nan")


def _depth_child(ref: Path, other: Path, cache: str, jobs: str, timeout: float, limit: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--depth-pair", str(ref), str(other), cache, jobs,
           str(timeout)]
    t, c = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"no verdict in {limit:.0f} s"}
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": f"child exit {proc.returncode}"}
    result = json.loads(lines[-1])
    result["time_s"] = time.perf_counter() - t
    result["cpu_s"] = _children_cpu() - c
    return result


def _children_cpu() -> float:
    """User + sys seconds of this process's waited-for children (and theirs): the depth child
    waits for its own workers and XLA child before it exits."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def depth_pair(ref: str, other: str, cache: str, jobs: str, timeout: float) -> int:
    v = verify(Path(ref), Path(other), timeout_s=timeout, cache_dir=cache, jobs=int(jobs))
    peak_mb = peak_rss_mb()
    st = {k: val for k, val in (v.stages or {}).items() if k != "list"}
    print(json.dumps({"verdict": v.verdict, "stages": st, "peak_mb": peak_mb}), flush=True)
    return 0


def _core_child(ref: Path, other: Path, timeout: float, limit: float, core_name: str,
                assume: dict | None = None) -> dict:
    """Verify one pair in a child process (`run.py --core-pair`, its own process group) and
    read back its JSON lines: op counts first, then the verdict, and the last progress line
    of its stderr. Past `limit` seconds the group is killed and the result says "no verdict
    in N s"; the last progress line then tells the phase it was in (the one after it)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--core-pair", str(ref), str(other), str(timeout), core_name,
           json.dumps(assume or {})]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
        error = None if proc.returncode == 0 else f"child exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        error = f"no verdict in {limit:.0f} s"
    result: dict = {}
    for line in out.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    phases = [line.removeprefix("tv-mlir: ") for line in err.splitlines() if line.startswith("tv-mlir: ")]
    result["last_phase"] = phases[-1] if phases else None
    if error and "verdict" not in result:
        result["error"] = error
        if not error.startswith("no verdict"):
            print(err.strip().splitlines()[-1] if err.strip() else error, file=sys.stderr)
    return result


def core_pair(ref: str, other: str, timeout: float, core_name: str, assume_json: str = "{}") -> int:
    """Child of `core`: op counts of both programs as read, then verify (phase lines on
    stderr), one JSON line each on stdout. `assume_json`: the manifest's assumptions,
    {name: [lo, hi]} with "inf" for no upper bound."""
    from tv_mlir.api import prepare
    from tv_mlir.options import Options

    ops = [sum(1 for _ in prepare(Path(p), Options()).main.body.walk()) for p in (ref, other)]
    print(json.dumps({"ops_ref": ops[0], "ops_other": ops[1]}), flush=True)
    assume = {k: (lo, float(hi)) if hi == "inf" else (lo, hi) for k, (lo, hi) in json.loads(assume_json).items()}
    v = verify(Path(ref), Path(other), timeout_s=timeout, progress=True, core=core_name, assume=assume)
    keys = ("numeric_s", "symbolic_s", "solve_s", "merged", "cut_points", "element_ops", "element_ops_per_s")
    peak_mb = peak_rss_mb()
    print(json.dumps({"verdict": v.verdict, "stats": {k: v.stats[k] for k in keys if k in v.stats},
                      "peak_mb": peak_mb}), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--depth-pair"]:
        sys.exit(depth_pair(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6])))
    if sys.argv[1:2] == ["--core-pair"]:
        sys.exit(core_pair(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], *sys.argv[6:7]))
    sys.exit(main())
