"""One straight list of ops per program, the form stages are cut from.

The reference is its entry block. A sharded program is brought to the form of XLA's
partitioner output, a per-device entry function whose arguments and results carry their
shardings, when its manual region covers the whole function: a Shardy
`sdy.manual_computation` over every mesh axis whose operands are the entry's arguments and
whose results are its returns, or a GSPMD manual section between `@SPMDFullToShardShape` of
the arguments and `@SPMDShardToFullShape` of the returns. Both are the same function as the
program (the interpreter scatters and gathers exactly so), and in that form every value of
the section is a per-device value a stage can take or give under a sharding. A program
without any manual region stays global. Anything else (a manual region over some axes, ops
on global values around the section) is not cut: the pair is proved whole."""
from __future__ import annotations

from dataclasses import dataclass, replace

from tv_mlir.errors import TvError
from tv_mlir.frontend import gspmd
from tv_mlir.frontend.classify import parse_gspmd
from tv_mlir.ir import Block, Func, Module, Op, Sharding
from tv_mlir.semantics.ops import COLLECTIVES, DEVICE_IDS, SHARD_CALLS


@dataclass(frozen=True)
class Flat:
    module: Module  # per_device, or global
    reason: str = ""  # why the program could not be brought to this form ("" when it was)

    @property
    def ok(self) -> bool:
        return not self.reason


def flatten(module: Module) -> Flat:
    """`module` as a per-device entry or a global program with no manual region."""
    if module.per_device:
        return Flat(module)
    ops = module.main.body.ops
    if any(op.name == "sdy.manual_computation" for op in ops):
        return _from_manual_computation(module)
    if any(op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in SHARD_CALLS for op in ops):
        return _from_gspmd(module)
    if any(op.name in COLLECTIVES or op.name in DEVICE_IDS for op in module.main.body.walk()):
        return Flat(module, "collectives outside a manual region")
    return Flat(module)


def _per_device(module: Module, body: Block, arg_shardings: tuple[Sharding | None, ...],
                result_shardings: tuple[Sharding | None, ...]) -> Module:
    main = module.main
    func = Func(main.name, body, _result_types(body), main.public,
                arg_names=main.arg_names)
    return replace(module, funcs={main.name: func}, entry=main.name, per_device=True,
                   arg_shardings=arg_shardings, result_shardings=result_shardings)


def _result_types(body: Block) -> tuple:
    types = dict(zip(body.args, body.arg_types))
    for op in body.ops:
        types.update(zip(op.results, op.result_types))
    return tuple(types[r] for r in body.returns)


def _from_manual_computation(module: Module) -> Flat:
    main = module.main
    ops = main.body.ops
    if len(ops) != 1:
        return Flat(module, "ops outside the manual computation")
    op = ops[0]
    mesh_axes = {a for s in op.attrs.get("in_shardings", ()) for a, _ in s.mesh.axes}
    if set(op.attrs.get("manual_axes", ())) != mesh_axes:
        return Flat(module, "a manual computation over some of the mesh axes")
    if tuple(op.operands) != tuple(main.body.args) or tuple(op.results) != tuple(main.body.returns):
        return Flat(module, "the manual computation does not take the arguments and give the results")
    body = op.regions[0]
    return Flat(_per_device(module, body, tuple(op.attrs["in_shardings"]), tuple(op.attrs["out_shardings"])))


def _from_gspmd(module: Module) -> Flat:
    main = module.main
    n = module.num_devices
    args = {a: k for k, a in enumerate(main.body.args)}
    ins: dict[int, tuple[str, Sharding]] = {}
    outs: dict[str, tuple[str, Sharding]] = {}  # full value -> (manual value, sharding)
    section: list[Op] = []
    try:
        for op in main.body.ops:
            target = op.attrs.get("call_target_name") if op.name == "stablehlo.custom_call" else None
            if target == "SPMDFullToShardShape":
                text = op.attrs.get("tv.full_sharding")
                k = args.get(op.operands[0])
                if text is None or k is None or k in ins:
                    return Flat(module, "@SPMDFullToShardShape of a value other than an argument")
                s = parse_gspmd(text, len(op.result_types[0].shape), n, op.loc)
                if s == gspmd.MANUAL or not isinstance(s, Sharding):
                    return Flat(module, "@SPMDFullToShardShape of a manual value")
                ins[k] = (op.results[0], s)
            elif target == "SPMDShardToFullShape":
                s = parse_gspmd(op.attrs.get("mhlo.sharding", "{replicated}"), len(op.result_types[0].shape), n,
                                op.loc)
                if not isinstance(s, Sharding):
                    return Flat(module, "@SPMDShardToFullShape to a manual sharding")
                outs[op.results[0]] = (op.operands[0], s)
            else:
                section.append(op)
    except TvError as exc:
        return Flat(module, exc.one_line())
    if len(ins) != len(args) or any(r not in outs for r in main.body.returns):
        return Flat(module, "arguments or results outside the manual section")
    body_args = tuple(ins[k][0] for k in range(len(args)))
    arg_types = [ins[k][1].local_type(main.body.arg_types[k]) for k in range(len(args))]
    full_names = set(args) | set(outs)
    for op in section:
        if any(o in full_names for o in op.operands):
            return Flat(module, f"{op.name} at {op.loc} works on a global value outside the manual section")
    body = Block(body_args, tuple(arg_types), section, tuple(outs[r][0] for r in main.body.returns))
    return Flat(_per_device(module, body, tuple(ins[k][1] for k in range(len(args))),
                            tuple(outs[r][1] for r in main.body.returns)))
