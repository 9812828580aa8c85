"""Model sources other than the zoo and ONNX: Relax IRModules and PyTorch exported programs."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

from helpers import equal_check, run_relax
from tvm_partition import frontend
from tvm_partition.cli.compile import reference_outputs


def test_relax_irmodule_source_with_constants():
    """A user's IRModule whose entry is not called main and that embeds constants: the
    constants become weights, so every device gets its copy once at load time."""
    T = relax.TensorType
    x = relax.Var("x", T((4, 6), "float32"))
    bb = relax.BlockBuilder()
    w = np.random.default_rng(0).standard_normal((6, 5)).astype("float32")
    with bb.function("forward", [x], attrs={"num_input": 1}):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, relax.const(w)))
            out = bb.emit_output(relax.op.multiply(relax.op.sigmoid(y), relax.const(0.5, "float32")))
        bb.emit_func_output(out)
    model = frontend.load(bb.get())
    assert [p.shape for p in model.params] == [(6, 5), ()]
    _, err, tol = equal_check(model)
    assert err <= tol
    ref = 0.5 / (1 + np.exp(-(model.inputs["x"] @ w)))
    np.testing.assert_allclose(run_relax(model.mod, list(model.inputs.values()), model.params), ref, rtol=1e-5)



def test_relax_irmodule_whose_entry_calls_subroutines():
    """A module whose entry calls other Relax functions (Relax's ``nn.SubroutineMixin`` writes one
    per layer): they are inlined, so the graph, the plans and the build see one ``main``. Before,
    such a module was refused for its several functions (and with its entry named main, the
    graph's fusion walk stopped with a NameError). A recursive one is refused in one line."""
    T = relax.TensorType
    bb = relax.BlockBuilder()
    x, w = relax.Var("x", T((4, 16), "float32")), relax.Var("w", T((16, 16), "float32"))
    with bb.function("layer", [x, w], private=True):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.matmul(x, w))))
        bb.emit_func_output(out)
    x = relax.Var("x", T((4, 16), "float32"))
    with bb.function("head", [x]):  # a public one too
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.sigmoid(x)))
        bb.emit_func_output(out)
    layer, head = bb.get().get_global_var("layer"), bb.get().get_global_var("head")
    x, w = relax.Var("x", T((4, 16), "float32")), relax.Var("w", T((16, 16), "float32"))
    with bb.function("forward", [x, w], attrs={"num_input": 1}):
        y = bb.emit(relax.Call(layer, [x, w]))
        bb.emit_func_output(bb.emit(relax.Call(head, [bb.emit(relax.Call(layer, [y, w]))])))
    w = np.random.default_rng(1).standard_normal((16, 16)).astype("float32") / 4
    model = frontend.load(bb.get(), params=[w])
    assert [gv.name_hint for gv, f in model.mod.functions_items() if isinstance(f, relax.Function)] == ["main"]
    _, err, tol = equal_check(model)
    assert err <= tol
    x = model.inputs["x"]
    ref = 1 / (1 + np.exp(-np.maximum(np.maximum(x @ w, 0) @ w, 0)))
    np.testing.assert_allclose(run_relax(model.mod, [x], model.params), ref, rtol=1e-5)

    main = relax.GlobalVar("main")
    x = relax.Var("x", T((4,), "float32"))
    recursive = tvm.IRModule({main: relax.Function([x], relax.Call(main, [x]), T((4,), "float32"))})
    with pytest.raises(frontend.ModelError, match="'main' calls itself"):
        frontend.load(recursive)


def test_torch_exported_program():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 8 * 8, 10)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).flatten(1))

    torch.manual_seed(0)
    net = Net().eval()
    example = torch.randn(2, 3, 8, 8)
    ep = torch.export.export(net, (example,))
    model = frontend.load(ep)
    model.inputs = {next(iter(model.inputs)): example.numpy()}
    _, err, tol = equal_check(model)
    assert err <= tol
    (out,) = reference_outputs(model)  # torch's exporter returns a 1-tuple
    np.testing.assert_allclose(out, net(example).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_token_ids_of_an_onnx_model_span_their_embedding(tmp_path):
    """An integer input read only as the indices of constant tables draws over the smallest
    table's rows, through a QDQ model's dequantized table (too large to fold); one read otherwise
    (a mask) keeps 0 and 1; a token type's two-row table, two values."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    table = rng.standard_normal((500, 4)).astype(np.float32)
    inits = [numpy_helper.from_array(table, "words"), numpy_helper.from_array(table[:300], "more"),
             numpy_helper.from_array(rng.integers(-128, 128, (20_000, 4), dtype=np.int8), "q_words"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(table[:2], "types")]
    n = helper.make_node
    nodes = [n("Gather", ["words", "ids"], ["a"]), n("Gather", ["more", "ids"], ["b"]),
             n("DequantizeLinear", ["q_words", "s"], ["dq"]), n("Gather", ["dq", "qids"], ["c"]),
             n("Gather", ["types", "tids"], ["d"]), n("Cast", ["mask"], ["m"], to=TensorProto.FLOAT),
             n("Unsqueeze", ["m", "last"], ["m2"]), n("Gather", ["words", "mask"], ["e"]),
             n("Sum", ["a", "b", "c", "d", "e"], ["s1"]), n("Mul", ["s1", "m2"], ["y"])]
    inits.append(numpy_helper.from_array(np.array([-1], np.int64), "last"))
    ints = [helper.make_tensor_value_info(name, TensorProto.INT64, [1, 64]) for name in ("ids", "qids", "tids", "mask")]
    graph = helper.make_graph(nodes, "tokens", ints, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "tokens.onnx"))
    inputs = frontend.load(str(tmp_path / "tokens.onnx")).inputs
    assert 50 < inputs["ids"].max() < 300 and 500 < inputs["qids"].max() < 20_000
    assert set(np.unique(inputs["tids"])) == {0, 1} and set(np.unique(inputs["mask"])) == {0, 1}
