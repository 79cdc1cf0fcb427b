"""The input domain (issue 16): a verdict is about finite float inputs unless `--inputs ieee`
asks about every IEEE value. Identities that hold for finite reals only (x * 0 = 0,
x - x = 0) are equivalent under the first and refuted under the second with an infinite
or NaN input that XLA confirms; identities that hold for every IEEE value stay equivalent."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tv_mlir
from tv_mlir.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]


def _fn(body: str, args: int = 1) -> str:
    params = ", ".join(f"%a{i}: tensor<4xf32>" for i in range(args))
    lines = "\n".join("  " + ln.strip() for ln in body.strip().splitlines())
    return f"func.func @main({params}) -> tensor<4xf32> {{\n{lines}\n}}\n"


ZERO = _fn("""%z = stablehlo.constant dense<0.0> : tensor<4xf32>
return %z : tensor<4xf32>""")
TIMES_ZERO = _fn("""%z = stablehlo.constant dense<0.0> : tensor<4xf32>
%r = stablehlo.multiply %a0, %z : tensor<4xf32>
return %r : tensor<4xf32>""")
MINUS_SELF = _fn("""%r = stablehlo.subtract %a0, %a0 : tensor<4xf32>
return %r : tensor<4xf32>""")
IDENTITY = _fn("return %a0 : tensor<4xf32>")
MAX_SELF = _fn("""%r = stablehlo.maximum %a0, %a0 : tensor<4xf32>
return %r : tensor<4xf32>""")
ADD = _fn("""%r = stablehlo.add %a0, %a1 : tensor<4xf32>
return %r : tensor<4xf32>""", 2)
ADD_SWAPPED = _fn("""%r = stablehlo.add %a1, %a0 : tensor<4xf32>
return %r : tensor<4xf32>""", 2)
# relu(x) = max(x, 0) against select(x > 0, x, 0): NaN > 0 is false, so the select gives 0
# where max propagates the NaN.
RELU_MAX = _fn("""%z = stablehlo.constant dense<0.0> : tensor<4xf32>
%r = stablehlo.maximum %a0, %z : tensor<4xf32>
return %r : tensor<4xf32>""")
RELU_SELECT = _fn("""%z = stablehlo.constant dense<0.0> : tensor<4xf32>
%p = stablehlo.compare GT, %a0, %z, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
%r = stablehlo.select %p, %a0, %z : tensor<4xi1>, tensor<4xf32>
return %r : tensor<4xf32>""")

CASES = [
    # (name, a, b, verdict for finite inputs, verdict for IEEE inputs)
    ("times_zero", TIMES_ZERO, ZERO, "equivalent", "not-equivalent"),
    ("minus_self", MINUS_SELF, ZERO, "equivalent", "not-equivalent"),
    ("relu_forms", RELU_MAX, RELU_SELECT, "equivalent", "not-equivalent"),
    ("max_self", MAX_SELF, IDENTITY, "equivalent", "equivalent"),
    ("add_commutes", ADD, ADD_SWAPPED, "equivalent", "equivalent"),
]


@pytest.mark.parametrize("core", ["own", "z3"])
@pytest.mark.parametrize("name,a,b,finite,ieee", CASES, ids=[c[0] for c in CASES])
def test_verdict_per_input_domain(name: str, a: str, b: str, finite: str, ieee: str, core: str) -> None:
    v = tv_mlir.verify(a, b, core=core)
    assert (v.verdict, v.inputs) == (finite, "finite")
    w = tv_mlir.verify(a, b, core=core, inputs="ieee")
    assert (w.verdict, w.inputs) == (ieee, "ieee")
    if ieee == "not-equivalent":
        c = w.counterexample
        assert c is not None
        bad = [x for vals in c.inputs.values() for x in vals if x in ("inf", "-inf", "nan")]
        assert bad, f"an infinite or NaN input shows the difference: {c.inputs}"
        assert any(r.backend == "xla" and r.confirmed for r in c.replay), "XLA confirms the witness"


def test_cli_states_the_domain(tmp_path: Path) -> None:
    pa, pb = tmp_path / "a.mlir", tmp_path / "b.mlir"
    pa.write_text(TIMES_ZERO)
    pb.write_text(ZERO)
    cmd = [sys.executable, "-m", "tv_mlir", "verify"]
    text = subprocess.run(cmd + [str(pa), str(pb)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert text.returncode == 0 and "inputs:  finite float inputs" in text.stdout
    js = subprocess.run(cmd + ["--json", "--inputs", "ieee", str(pa), str(pb)], capture_output=True, text=True,
                        timeout=120, cwd=ROOT)
    out = json.loads(js.stdout)
    assert js.returncode == 1 and out["verdict"] == "not-equivalent" and out["inputs"] == "ieee"
    bad = subprocess.run(cmd + ["--inputs", "reals", str(pa), str(pb)], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert bad.returncode == 3 and "--inputs" in bad.stderr


def test_api_rejects_an_unknown_domain() -> None:
    with pytest.raises(UsageError, match="inputs"):
        tv_mlir.verify(IDENTITY, IDENTITY, inputs="reals")
