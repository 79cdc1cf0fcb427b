"""Op names that the stages other than the semantics table need to know by name: one place,
so that a new collective or device-id op is added once."""
from __future__ import annotations

COLLECTIVES = frozenset({"stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
                         "stablehlo.all_to_all", "stablehlo.collective_permute",
                         "stablehlo.collective_broadcast"})
DEVICE_IDS = frozenset({"stablehlo.partition_id", "stablehlo.replica_id"})
SPMD_OPS = COLLECTIVES | DEVICE_IDS | {"sdy.manual_computation"}
SHARD_CALLS = frozenset({"SPMDFullToShardShape", "SPMDShardToFullShape"})
