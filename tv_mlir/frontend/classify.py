"""Which form a module is in (a global program, or XLA's per-device program) and the
shardings of its entry's arguments and results; whether two programs take the same global
inputs."""
from __future__ import annotations

from typing import Any

from tv_mlir.errors import Unsupported, UsageError
from tv_mlir.frontend import gspmd
from tv_mlir.ir import Module, Sharding, TensorType
from tv_mlir.passes.legalize_chlo import align_pair
from tv_mlir.semantics.ops import COLLECTIVES, DEVICE_IDS, SHARD_CALLS


def parse_gspmd(text: str, rank: int, n: int, loc: str) -> Sharding | str:
    try:
        s = gspmd.parse(text, rank, n)
    except gspmd.ShardingSyntaxError as exc:
        raise Unsupported(str(exc), loc, "mhlo.sharding") from None
    if isinstance(s, gspmd.Maximal):
        raise Unsupported(f"sharding {text} (one device holds everything)", loc, "mhlo.sharding")
    return s


def classify(module: Module, expected: tuple[TensorType, ...] | None = None) -> None:
    """Decide whether the entry function is a per-device program and read its argument
    and result shardings. A module with collectives or device ids outside any manual
    region is per-device; one without either is per-device only if its signature makes
    sense that way and not as a global program (`expected`: the reference's)."""
    n = module.num_devices
    main = module.main
    module.arg_shardings = tuple(attr_sharding(a, t, n, main.loc)
                                 for a, t in zip(main.arg_attrs or ({},) * len(main.arg_types), main.arg_types))
    module.result_shardings = tuple(attr_sharding(a, t, n, main.loc)
                                    for a, t in zip(main.result_attrs or ({},) * len(main.result_types),
                                                    main.result_types))
    if n <= 1:
        module.per_device = False
        return
    ops = [op for f in module.funcs.values() for op in f.body.walk()]
    manual = any(op.name == "sdy.manual_computation" or
                 (op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in SHARD_CALLS)
                 for op in ops)
    if manual:
        module.per_device = False
    elif any(op.name in COLLECTIVES or op.name in DEVICE_IDS for op in ops):
        module.per_device = True
    elif expected is not None and main.arg_types != expected:
        module.per_device = True
        if module.global_arg_types() != expected:
            module.per_device = False


def attr_sharding(attrs: dict[str, Any], t: TensorType, n: int, loc: str) -> Sharding | None:
    s = attrs.get("mhlo.sharding")
    if isinstance(s, str):
        parsed = parse_gspmd(s, len(t.shape), n, loc)
        return parsed if isinstance(parsed, Sharding) else None  # MANUAL: no sharding to read
    return None




def classify_pair(ref: Module, other: Module) -> None:
    """Both entries classified (`classify`), each against the other's signature."""
    classify(ref)
    classify(other, ref.global_arg_types())
    if not ref.per_device and other.per_device is False:
        classify(ref, other.global_arg_types())


def is_classified(module: Module) -> bool:
    """Whether `classify` has run on the module: it gives every argument and result a
    sharding entry (None when it has none). Before it, `per_device` is only its default."""
    main = module.main
    return len(module.arg_shardings) == len(main.arg_types) and len(module.result_shardings) == len(main.result_types)


def check_signatures(ref: Module, other: Module) -> None:
    """Both as functions of global arrays (a per-device program's arguments are shards).
    This is also where the pair first meets (before the proof, and again at the shrunk
    sizes), so chlo ops one side holds and XLA rewrote away in the other are expanded here
    the way XLA expands them (`passes.legalize_chlo`)."""
    align_pair(ref, other)
    classify_pair(ref, other)
    if ref.global_arg_types() != other.global_arg_types():
        raise UsageError(f"input signatures differ: {ref.source} takes {ref.signature()}, "
                         f"{other.source} takes {other.signature()}")
