"""Model sources other than the zoo and ONNX: Relax IRModules and PyTorch exported programs."""

from __future__ import annotations

import numpy as np
import pytest
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
