"""Element algebras. The op semantics (`tv_mlir.semantics`) is written once against the
`Algebra` protocol; `NumericAlgebra` runs it on numpy arrays (float64 IEEE, int64, bool)
and `SymbolicAlgebra` on numpy object arrays of z3 terms."""
from tv_mlir.algebra.base import Algebra, Kind
from tv_mlir.algebra.numeric import NumericAlgebra
from tv_mlir.algebra.symbolic import SymbolicAlgebra

__all__ = ["Algebra", "Kind", "NumericAlgebra", "SymbolicAlgebra"]
