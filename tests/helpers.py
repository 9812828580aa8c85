"""Shared small configurations and builders for the tests (small models keep the suite fast)."""

from __future__ import annotations

import functools

import numpy as np
import tvm
from tvm import relax
from tvm.relax.frontend import nn

from tvm_partition import frontend
from tvm_partition.cli.compile import check, compile_model
from tvm_partition.cost_models import AnalyticCostModel, DeviceRoofline
from tvm_partition.devices import parse_devices

# Small settings so every zoo model compiles and runs in a few seconds.
SMALL = {
    "lstm": dict(seq_len=4, batch=2),
    "gru": dict(seq_len=4, batch=2),
    "bert": dict(layers=1, seq_len=8, batch=1),
    "bert-tiny": dict(seq_len=16, batch=2),
    "mobilenetv2": dict(image_size=32),
    "resnet18": dict(image_size=32),
    "resnet50": dict(image_size=32),
    "inception_v3": dict(image_size=75),
}

CPU2 = "cpu,cpu"


def comparable() -> AnalyticCostModel:
    """A GPU a little faster than the CPU and cheap links: EOP splits ops of every zoo model."""
    return AnalyticCostModel({"cpu": DeviceRoofline(100.0, 20.0, 0.1), "gpu": DeviceRoofline(120.0, 24.0, 0.1)},
                             default_link=(50.0, 0.2))


@functools.lru_cache(maxsize=None)
def cpu_gpu_build(name: str, strategy: str, gpu_arch: str = "sm_90"):
    """Zoo model ``name`` (its :data:`SMALL` setting) cross-compiled for ``cpu,gpu`` with
    ``strategy`` (``eop`` plans on :func:`comparable`, where it splits), once per test session:
    the CUDA-kernel, program-order and zoo tests share these builds (2-15 s each)."""
    planning = {"cost_model": comparable()} if strategy == "eop" else {}
    model = frontend.load(name, **SMALL[name])
    return compile_model(model, parse_devices("cpu,gpu", gpu_arch=gpu_arch), strategy, **planning)


class MLP(nn.Module):
    """dense+tanh -> reshape -> dense -> softmax: every kind of fused group in four kernels."""

    def __init__(self, d_in=8, d_hidden=16, d_out=4):
        self.l1 = nn.Linear(d_in, d_hidden)
        self.l2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        h = nn.op.tanh(self.l1(x))
        h = nn.op.reshape(h, [x.shape[0], self.l1.out_features])
        return nn.op.softmax(self.l2(h), axis=-1)


def nn_model(module: nn.Module, shape: list[int]) -> frontend.Model:
    """``module`` (its ``forward`` of one float32 input of ``shape``) as a model, seeded weights."""
    mod, _ = module.export_tvm(spec={"forward": {"x": nn.spec.Tensor(shape, "float32")}})
    return frontend.load(mod, seed=1)


def mlp_model(batch=4, d_in=8, d_hidden=16, d_out=4) -> frontend.Model:
    return nn_model(MLP(d_in, d_hidden, d_out), [batch, d_in])


def equal_check(model, devices=CPU2, strategy="equal", plan_file=None):
    """Compile with a strategy and return (compiled, max_abs_err, tolerance) on this machine."""
    compiled = compile_model(model, parse_devices(devices), strategy, plan_file)
    err, tol = check(compiled)
    return compiled, err, tol


def run_relax(mod, inputs, params, target="llvm"):
    ex = tvm.compile(mod, target=target)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(v) for v in inputs], *[tvm.runtime.tensor(p) for p in params])
    return out.numpy()


def max_err(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def run_plan(model, plan):
    """Build ``plan`` for ``model`` and run it in-process on the plan's devices."""
    from tvm_partition.build.executable import build

    res = build(model.mod, plan)
    vm = relax.VirtualMachine(res.executable, [d.tvm_device() for d in plan.devices])
    weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
    args = [tvm.runtime.tensor(v) for v in model.inputs.values()]
    return vm["main"](*args, *weights).numpy()
