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
