"""Einsums that are batched matrix products, loaded as matmuls (tvm_partition.frontend.einsum):
the recipe checked against numpy's einsum on random equations (brute force), the models against
onnxruntime whole and split, and the matmul template that schedules their kernels where no record
does (tvm_partition.build.templates.fallback) against TVM's default schedule."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper
from tvm import relax

from test_onnx import ATOL, RTOL, ort_run, run_split
from test_transfer import TARGET, kernel, run
from tvm_partition import frontend
from tvm_partition.build import templates
from tvm_partition.frontend.einsum import einsum_as_matmul, parse, product


def applied(equation: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``equation`` computed as :func:`product` says: transposes, reshapes and one matmul."""
    how = product(equation, list(x.shape), list(y.shape))
    assert how is not None, equation

    def laid_out(v, perm, shape):
        v = v if perm is None else np.transpose(v, perm)
        return v if shape is None else v.reshape(shape)

    out = laid_out(x, how.left_perm, how.left_shape) @ laid_out(y, how.right_perm, how.right_shape)
    return laid_out(out.reshape(how.out_shape) if how.out_shape else out, how.out_perm, None)


def random_equation(rng: random.Random) -> tuple[str, dict[str, int]]:
    """A two-operand batched-matrix-product equation: 0-2 batch, contracted and free labels each
    (neither operand without one), every operand's and the output's labels in a random order, sizes 1-4."""
    letters = iter(rng.sample("abcdefghijklmnopqrstuvwxyz", 26))
    batch, contracted, free_a, free_b = ([next(letters) for _ in range(rng.randint(0, 2))] for _ in range(4))
    a, b, out = batch + free_a + contracted, batch + contracted + free_b, batch + free_a + free_b
    if not a or not b:  # a scalar operand: no matrix
        return random_equation(rng)
    for labels in (a, b, out):
        rng.shuffle(labels)
    return f"{''.join(a)},{''.join(b)}->{''.join(out)}", {c: rng.randint(1, 4) for c in a + b}


def test_the_recipe_computes_what_einsum_computes():
    rng, np_rng = random.Random(0), np.random.default_rng(0)
    for _ in range(300):
        equation, sizes = random_equation(rng)
        left, right = equation.split("->")[0].split(",")
        x = np_rng.standard_normal([sizes[c] for c in left])
        y = np_rng.standard_normal([sizes[c] for c in right])
        np.testing.assert_allclose(applied(equation, x, y), np.einsum(equation, x, y), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("equation", ["ii->i", "ij->ji", "ij,jk,kl->il", "...ij,...jk->...ik", "ij,jk->ijk2",
                                      "bij,bjk->b", "ij,jk"])
def test_equations_that_are_no_plain_product_are_left_alone(equation):
    """A diagonal, one operand or three, ellipses, a non-letter, labels summed within one operand
    (``i`` and ``k`` of ``bij,bjk->b``), an implicit output."""
    assert parse(equation) is None


def einsum_model(path, equation: str, left: list[int], right: list[int], out: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["x", "y"], ["e"], equation=equation), helper.make_node("Relu", ["e"], ["z"])],
        "einsum", [helper.make_tensor_value_info("x", TensorProto.FLOAT, left),
                   helper.make_tensor_value_info("y", TensorProto.FLOAT, right)],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, out)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    onnx.save(proto, str(path))
    return proto


@pytest.mark.parametrize("equation,left,right,out,rewritten", [
    ("B G H I D, B G H J D -> B G H I J", [1, 4, 2, 49, 32], [1, 4, 2, 49, 32], [1, 4, 2, 49, 49], True),  # MaxViT's q k^T
    ("B G H I J, B G H J D -> B G H I D", [1, 4, 2, 49, 49], [1, 4, 2, 49, 32], [1, 4, 2, 49, 32], True),  # its softmax v
    ("abc,cd->abd", [2, 6, 8], [8, 16], [2, 6, 16], True),  # two free labels on the left, no batch
    ("bik,bkj->bji", [2, 12, 8], [2, 8, 16], [2, 16, 12], True),  # the output transposed
    ("bij,bjk->b", [2, 3, 4], [2, 4, 5], [2], False),  # i and k summed within one operand: left to TVM
], ids=["maxvit-qk", "maxvit-av", "free-pair", "transposed-out", "left-alone"])
def test_einsum_models_match_onnxruntime_whole_and_split(equation, left, right, out, rewritten, tmp_path):
    path = tmp_path / "einsum.onnx"
    proto = einsum_model(path, equation, left, right, out)
    model = frontend.load(str(path))
    assert ("einsum" not in model.mod.script()) == rewritten
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in (left, right))
    (ref,) = ort_run(proto, [x, y])
    for strategy in ("cpu", "equal"):
        compiled, outs = run_split(model, tmp_path / strategy, [x, y], strategy=strategy, schedules=rewritten)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)
    if equation.startswith("B G H I J"):  # 49 rows, a reduction of 49: no record, so the template
        assert templates.FALLBACK_MATMUL_LABEL in compiled.kernel_schedules.values()


def test_a_relax_einsum_becomes_a_matmul():
    """PyTorch's exported programs carry ``relax.einsum`` (``from_exported_program``)."""
    x = relax.Var("x", relax.TensorType((2, 3, 4), "float32"))
    y = relax.Var("y", relax.TensorType((2, 5, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.einsum([x, y], "bik,bjk->bij")))
        bb.emit_func_output(out)
    before = bb.get()
    after = einsum_as_matmul(before)
    assert "einsum" not in after.script() and "R.matmul" in after.script()
    rng = np.random.default_rng(2)
    args = [tvm.runtime.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((2, 3, 4), (2, 5, 4))]
    results = []
    for mod in (before, after):
        vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
        results.append(vm["main"](*args).numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows,reduction,tile", [(49, 32, 7), (30, 20, 6), (13, 64, 1)])
def test_the_matmul_template_schedules_where_no_record_does(rows, reduction, tile):
    """A batched matmul of computed operands whose rows are no multiple of 4, or whose reduction
    is short, is left to records by the template; where none applies the build takes the template
    all the same (:func:`templates.fallback`), rows in tiles of their largest divisor up to 8."""
    def build():
        a = relax.Var("a", relax.TensorType((1, 4, rows, reduction), "float32"))
        b = relax.Var("b", relax.TensorType((1, 4, reduction, 16), "float32"))
        return [a, b], relax.op.matmul(a, b)

    kmod = kernel(build)
    assert templates.schedule(kmod, TARGET) is None
    func, label = templates.fallback(kmod, TARGET)
    assert label == templates.FALLBACK_MATMUL_LABEL and templates.matmul._matmul_plan(kmod, TARGET, fallback=True).rows == tile
    assert templates.inner_tiles(kmod, TARGET)[2] == tile
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)
