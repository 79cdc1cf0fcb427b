"""Element algebras. The op semantics (`tv_mlir.semantics`) is written once against the
`Algebra` protocol; `NumericAlgebra` runs it on numpy arrays (float64 IEEE, int64, bool)
and `SymbolicAlgebra` on numpy object arrays of terms. The prover types against the
`Symbolic` protocol and works on terms through `tv_mlir.algebra.terms`."""
from tv_mlir.algebra.base import Algebra, Kind, Symbolic
from tv_mlir.algebra.numeric import NumericAlgebra
from tv_mlir.algebra.symbolic import SymbolicAlgebra

__all__ = ["Algebra", "Kind", "NumericAlgebra", "Symbolic", "SymbolicAlgebra"]
