"""Generate the small staged-proof pairs of tests/test_stages.py in testdata/stages/.

Run from the repository root:

    .venv/bin/python testdata/gen_stages.py      # sets its own 8-device XLA flags

The decoder stack of testdata/gen_depth.py (pre-RMSNorm attention + SwiGLU, Megatron tp
over 4 devices, dp over 2) at small dims (hidden 16, 4 heads of 4, ffn 32, batch 4, seq 8),
4 layers, written with ``jax.lax.scan`` over the stacked layer weights in the reference and
in the sharded program (so both are one ``stablehlo.while``):

- ``scan_L4``: correct;
- ``scan_L4_bug_iter3``: the MLP's row-parallel psum is missing in iteration 3 only
  (1-based; the body tests the trip counter);
- ``grad_L4``: the 405B family's forward + backward stack (loss = mean of squares of the
  output, gradients of every stacked weight), 4 layers unrolled: the gradients of the
  row-parallel weights are dp partial sums until the final psum, so a cut between layers
  crosses partial sums (stages/lineage.py's unreduced layouts);
- ``grad_L4_bug_layer3``: its MLP's reduce_from_tp psum missing in layer 3 (1-based).

Each case is checked numerically first (gen_sharded.check); files are Shardy, GSPMD and
XLA-partitioned exports with a manifest.json like testdata/core's. Byte-identical on rerun.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_depth as gd  # noqa: E402  (imports gen_sharded, which sets the 8-device flags)
import gen_sharded as gs  # noqa: E402

OUT = gs.HERE / "stages"
SEED = 20261201
SPECS = [
    gd.Spec("scan_L4", "scan_L4", "8b", 4, scan=True),
    gd.Spec("scan_L4_bug_iter3", "scan_L4", "8b", 4, scan=True, bug_index=2),
    gd.Spec("grad_L4", "grad_L4", "405b", 4),
    gd.Spec("grad_L4_bug_layer3", "grad_L4", "405b", 4, bug_index=2),
]


def main() -> int:
    OUT.mkdir(exist_ok=True)
    entries = []
    for k, spec in enumerate(SPECS):
        case = spec.case({**gd.SMALL})
        print(f"{case.name}: {gs.check(case, SEED + k)}", flush=True)
        files = gs.export_case(case, OUT, SEED + k)
        entries.append({**gs.manifest_entry(case, files), "layers": spec.layers})
    (OUT / "manifest.json").write_text(json.dumps(entries, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
