"""The dims rule table (tv_mlir/shrink/dim_rules.py): every op the semantics table knows has
a decided effect on dimension classes, either a rule or a deliberate pin with its reason,
so that a new op cannot reach shape shrinking undecided."""
from __future__ import annotations

from tv_mlir.api import prepare
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.semantics import TABLE
from tv_mlir.semantics.ops import SPMD_OPS
from tv_mlir.shrink.dim_rules import PINNING, RULES
from tv_mlir.shrink.dims import analyse
from tv_mlir.shrink.unionfind import UnionFind


def test_every_semantics_op_has_a_dims_rule_or_pins_on_purpose() -> None:
    undecided = sorted(set(TABLE) - set(RULES) - set(PINNING))
    assert not undecided, f"decide the dims rule (shrink/dim_rules.py) of: {undecided}"


def test_spmd_ops_have_dims_rules() -> None:
    # The SPMD executor runs these, not the semantics table; shrinking still meets them.
    assert not sorted(SPMD_OPS - set(RULES))


def test_an_op_is_either_analysed_or_pinned() -> None:
    assert not set(RULES) & set(PINNING)
    for name, reason in PINNING.items():
        assert reason.strip() and "\n" not in reason, name


def test_pinning_op_pins_with_its_reason_and_rules_join() -> None:
    text = """module {
 func.func public @main(%x: tensor<8x4xf32>, %v: tensor<6xf32>) -> (tensor<8x4xf32>, tensor<6xf32>) {
  %r = stablehlo.reverse %v, dims = [0] : tensor<6xf32>
  %y = stablehlo.add %x, %x : tensor<8x4xf32>
  return %y, %r : tensor<8x4xf32>, tensor<6xf32>
 }
}
"""
    ref, other = prepare(text, Options()), prepare(text, Options())
    check_signatures(ref, other)
    a = analyse(ref, other)
    (x, v), (y, _) = ref.main.body.args, ref.main.body.returns
    pins = a.classes[a.class_of[("ref", v, 0)]].pins
    assert any("stablehlo.reverse" in p and p.endswith(PINNING["stablehlo.reverse"]) for p in pins), pins
    # add's rule joins its operands' and result's dims; the signature joins both programs.
    for axis in (0, 1):
        c = a.class_of[("ref", x, axis)]
        assert c == a.class_of[("ref", y, axis)] == a.class_of[("other", x, axis)]
        assert not a.classes[c].pins


def test_union_find_keeps_the_first_root() -> None:
    uf = UnionFind.of(range(4), [(0, 1), (2, 3)])
    assert uf.find(1) == 0 and uf.find(3) == 2
    assert uf.union(3, 1) == 0 and uf.find(0) == 2
    assert uf.union(0, 3) is None


def test_identity_custom_calls_join_their_operand_and_result() -> None:
    """MoveToHost / annotate_device_placement / LayoutConstraint / InspectSharding are
    identities in the semantics (semantics/control.py): their results' dims are their
    operands', not pinned (they pinned every dim of a memory-offloaded activation)."""
    from tv_mlir.semantics.ops import NOOP_CUSTOM_CALLS

    for target in sorted(NOOP_CUSTOM_CALLS):
        text = f"""module {{
 func.func public @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {{
  %h = stablehlo.custom_call @{target}(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = stablehlo.add %h, %h : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
 }}
}}
"""
        ref, other = prepare(text, Options()), prepare(text, Options())
        a = analyse(ref, other)
        (x,), (y,) = ref.main.body.args, ref.main.body.returns
        for axis in (0, 1):
            c = a.class_of[("ref", x, axis)]
            assert c == a.class_of[("ref", y, axis)], target
            assert not any("custom_call" in p for p in a.classes[c].pins), (target, a.classes[c].pins)
