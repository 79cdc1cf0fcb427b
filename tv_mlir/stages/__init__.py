"""Regions: staged proofs of a pair cut at matched values, memoized, cached on disk, solved in parallel."""
