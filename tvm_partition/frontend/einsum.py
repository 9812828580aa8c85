"""Two-operand ``einsum``s that are batched matrix products, as ``matmul``s.

PyTorch models write attention with ``torch.einsum`` (torchvision's MaxViT: ``"B G H I D, B G H J
D -> B G H I J"`` for ``q k^T`` and ``"B G H I J, B G H J D -> B G H I D"`` for ``softmax v``).
The exporters keep it an ONNX ``Einsum``, which TVM's importer emits as TOPI's ``einsum`` kernel
(``bb.emit_te``), and ``from_exported_program`` as a ``relax.einsum``; no template, record or split
rule knows that computation: MaxViT-T's 44 ran TVM's default schedule, 70 of the model's 143 ms
(5 GFLOP/s: ``run --kernels``, 2 Zen 4 threads, 2026-12-01), where onnxruntime ran the whole
model in 91.

Such an ``einsum`` is written as the ``matmul`` that computes it (a ``tensordot`` with batch labels,
:func:`product`):

- each label is a *batch* label (in both operands and the output), a *contracted* one (in both
  operands, not the output) or a *free* one (in one operand and the output);
- the left operand is laid out ``[batch..., free..., contracted...]`` and the right one
  ``[batch..., contracted..., free...]`` (a transpose only where the order differs), its free and
  its contracted axes each reshaped into one (only where there are several, or none), so that the
  product is ``matmul([*batch, M, K], [*batch, K, N])``;
- its output reshaped to the labels' sizes where that changes it, and transposed into the
  output's order where that differs.

An ONNX ``Einsum`` becomes those ONNX nodes before TVM's importer reads the graph
(:func:`einsums_as_matmuls`), a ``relax.einsum`` those Relax calls (:func:`einsum_as_matmul`).
Equations with one operand or more than two, ellipses, a label repeated in one operand (a
diagonal) or summed within one operand alone, broadcast labels and operands of unknown shapes
are left to TVM.
"""

from __future__ import annotations

import dataclasses
import math

import tvm
from tvm import relax

from ..ir.relax_utils import calls_op, rewrite_functions
from ..ir.split_rules import static_shape
from .onnx_graph import Emitter, default_opset, static_shapes

_EINSUM = tvm.ir.Op.get("relax.einsum")


def parse(equation: str) -> tuple[str, str, str] | None:
    """``(left, right, output)`` labels of a two-operand equation with an explicit output, each
    label once per operand and every label in two of the three; None for any other."""
    text = equation.replace(" ", "")
    if "..." in text or "->" not in text:
        return None
    inputs, out = text.split("->")
    operands = inputs.split(",")
    if len(operands) != 2:
        return None
    a, b = operands
    if not all(s.isalpha() and len(set(s)) == len(s) for s in (a, b)) or (out and not out.isalpha()):
        return None
    if len(set(out)) != len(out) or set(out) - set(a) - set(b) or (set(a) ^ set(b)) - set(out):
        return None  # a label of the output in no operand, or one summed within one operand alone
    return a, b, out


@dataclasses.dataclass(frozen=True)
class Product:
    """How a ``matmul`` computes an ``einsum``: each operand transposed by ``*_perm`` (None: as it
    is) and reshaped to ``*_shape`` (None: as it is), the product reshaped to ``out_shape`` and
    transposed by ``out_perm`` (None: neither)."""

    left_perm: tuple[int, ...] | None
    left_shape: tuple[int, ...] | None
    right_perm: tuple[int, ...] | None
    right_shape: tuple[int, ...] | None
    out_shape: tuple[int, ...] | None
    out_perm: tuple[int, ...] | None


def product(equation: str, left: list[int], right: list[int]) -> Product | None:
    """The :class:`Product` of a batched-matrix-product ``equation`` on operands of these shapes
    (module docstring); None where it is none."""
    labels = parse(equation)
    if labels is None or len(labels[0]) != len(left) or len(labels[1]) != len(right):
        return None
    a, b, out = labels
    sizes = dict(zip(a, left))
    if any(sizes.setdefault(c, n) != n for c, n in zip(b, right)):
        return None  # a label of two sizes (one broadcast): not a plain product
    batch = [c for c in out if c in a and c in b]
    contracted = [c for c in a if c in b and c not in out]
    free_a = [c for c in out if c in a and c not in b]
    free_b = [c for c in out if c in b and c not in a]

    def laid_out(labels: str, order: list[str], groups: list[list[str]]):
        perm = tuple(labels.index(c) for c in order)
        shape = tuple(math.prod(sizes[c] for c in g) for g in groups)
        return (None if perm == tuple(range(len(perm))) else perm), (None if all(len(g) == 1 for g in groups) else shape)

    batches = [[c] for c in batch]
    left_perm, left_shape = laid_out(a, batch + free_a + contracted, batches + [free_a, contracted])
    right_perm, right_shape = laid_out(b, batch + contracted + free_b, batches + [contracted, free_b])
    natural = batch + free_a + free_b
    out_shape = None if len(free_a) == 1 and len(free_b) == 1 else tuple(sizes[c] for c in natural)
    out_perm = tuple(natural.index(c) for c in out)
    return Product(left_perm, left_shape, right_perm, right_shape, out_shape,
                   None if out_perm == tuple(range(len(out_perm))) else out_perm)


@relax.expr_functor.mutator
class _EinsumAsMatmul(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not calls_op(call, _EINSUM) or not isinstance(call.args[0], relax.Tuple) or len(call.args[0].fields) != 2:
            return call
        x, y = call.args[0].fields
        shapes = static_shape(x), static_shape(y)
        how = None if None in shapes else product(str(call.attrs.subscripts), *shapes)
        if how is None:
            return call
        emit = self.builder_.emit

        def laid_out(v, perm, shape):
            v = v if perm is None else emit(relax.op.permute_dims(v, list(perm)))
            return v if shape is None else emit(relax.op.reshape(v, list(shape)))

        out = emit(relax.op.matmul(laid_out(x, how.left_perm, how.left_shape),
                                   laid_out(y, how.right_perm, how.right_shape), out_dtype=call.ty.dtype.dtype))
        out = out if how.out_shape is None else emit(relax.op.reshape(out, list(how.out_shape)))
        return out if how.out_perm is None else relax.op.permute_dims(out, list(how.out_perm))


@tvm.transform.module_pass(opt_level=0, name="EinsumAsMatmul")
def einsum_as_matmul(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every two-operand ``relax.einsum`` of static shapes that is a batched matrix product as a
    ``matmul`` (module docstring)."""
    return rewrite_functions(mod, lambda mod, _func: _EinsumAsMatmul(mod))


def einsums_as_matmuls(proto, input_shapes: dict[str, list[int]]) -> int:
    """Every two-operand ``Einsum`` node of ``proto``'s main graph whose operands' shapes are known
    (once the inputs are bound to ``input_shapes``) and that is a batched matrix product, as
    ``Transpose``, ``Reshape`` and ``MatMul`` nodes (module docstring), in place. Returns how many."""
    if not any(n.op_type == "Einsum" for n in proto.graph.node):
        return 0
    shapes = static_shapes(proto, input_shapes)
    graph, opset, nodes, count = proto.graph, default_opset(proto), [], 0
    for k, node in enumerate(list(graph.node)):
        how = None
        if node.op_type == "Einsum" and len(node.input) == 2 and all(i in shapes for i in node.input):
            equation = next(a.s.decode() for a in node.attribute if a.name == "equation")
            how = product(equation, shapes[node.input[0]], shapes[node.input[1]])
        if how is None:
            nodes.append(node)
            continue
        emit = Emitter(graph, f"{node.name or 'Einsum'}#{k}", opset)

        def laid_out(x, perm, shape):
            x = x if perm is None else emit.op("Transpose", [x], perm=list(perm))
            return x if shape is None else emit.reshape(x, list(shape))

        out = emit.op("MatMul", [laid_out(node.input[0], how.left_perm, how.left_shape),
                                 laid_out(node.input[1], how.right_perm, how.right_shape)])
        out = out if how.out_shape is None else emit.reshape(out, list(how.out_shape))
        if how.out_perm is None:
            emit.op("Identity", [out], node.output[0])
        else:
            emit.op("Transpose", [out], node.output[0], perm=list(how.out_perm))
        nodes.extend(emit.nodes)
        count += 1
    del graph.node[:]
    graph.node.extend(nodes)
    return count
