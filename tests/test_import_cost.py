"""Starting the tool does not import ml_dtypes (~1.4 s here, more than a small
verification's symbolic run): its types are looked up when a program has a bf16, f8 or
int4 value (`tv_mlir.dtypes`)."""
import subprocess
import sys

import numpy as np


def test_start_does_not_import_ml_dtypes() -> None:
    code = "import sys, tv_mlir.api, tv_mlir.cli; print('ml_dtypes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_start_does_not_import_scipy() -> None:
    # scipy.special (~0.3 s CPU with the numpy.testing and f2py it pulls in) is only for
    # chlo's special functions' numeric values: imported when one is first evaluated.
    code = "import sys, tv_mlir.api, tv_mlir.cli; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_lazy_special_functions_are_scipys() -> None:
    import scipy.special as sc  # type: ignore[import-untyped]

    from tv_mlir.algebra.special import FUNCS

    x = np.array([-0.9, -0.5, 0.0, 0.25, 0.999])
    assert np.array_equal(FUNCS["erfc"](x), sc.erfc(x)) and np.array_equal(FUNCS["erf_inv"](x), sc.erfinv(x))
    # lgamma keeps XLA's +inf at -inf (scipy: -inf) and scipy's values elsewhere.
    g = FUNCS["lgamma"](np.array([-np.inf, 0.5, 3.0]))
    assert g[0] == np.inf and g[1] == sc.gammaln(0.5) and g[2] == sc.gammaln(3.0)
    assert FUNCS["zeta"](np.array([2.0]), np.array([1.0]))[0] == sc.zeta(2.0, 1.0)


def test_lazy_tables_give_the_ml_dtypes_types() -> None:
    import ml_dtypes

    from tv_mlir.algebra.special import FLOAT_BITS, FUNCS
    from tv_mlir.frontend.read import NP_DTYPES

    assert NP_DTYPES["bf16"] == np.dtype(ml_dtypes.bfloat16) and NP_DTYPES["f32"] == np.dtype(np.float32)
    assert NP_DTYPES["f8E4M3FN"] == np.dtype(ml_dtypes.float8_e4m3fn) and "i4" in NP_DTYPES
    assert FLOAT_BITS["bf16"] == (ml_dtypes.bfloat16, np.uint16)
    # 1.0 in bf16 is 0x3F80; the next bf16 above 1.0 is 1 + 2**-7.
    assert FUNCS["bits_of_bf16"](np.array([1.0]))[0] == 0x3F80
    assert FUNCS["next_after_bf16"](np.array([1.0]), np.array([2.0]))[0] == 1.0 + 2.0 ** -7
