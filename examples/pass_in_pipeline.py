"""Use tvm_partition's pass inside your own TVM build pipeline.

    python examples/pass_in_pipeline.py

Loads ResNet-18 (small input), plans the Equal split for cpu,cpu (two CPU virtual devices, so
this runs anywhere; use "cpu,gpu" on a GPU server), applies the plan with ``ApplyPlan`` inside a
``tvm.transform.Sequential`` next to TVM's own passes, builds, runs, and compares with the
unpartitioned model.
"""

import numpy as np
import tvm
from tvm import relax

from tvm_partition import frontend, planners
from tvm_partition.build.executable import attach_targets, vm_pipeline
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.passes import ApplyPlan, PropagateVDevice
from tvm_partition.build.gpu_schedules import schedule_gpu


def main():
    model = frontend.load("resnet18", image_size=32)
    devices = parse_devices("cpu,cpu")
    plan = planners.plan_with("equal", OpGraph(model.mod), devices)

    # your pipeline, with the partitioning pass first
    pipeline = tvm.transform.Sequential(
        [
            ApplyPlan(plan),
            relax.transform.RealizeVDevice(),
            relax.transform.LiftTransformParams(),  # weight slices and copies: once, at load time
            relax.transform.LegalizeOps(),
            PropagateVDevice(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
        ]
    )
    mod = pipeline(model.mod)
    mod, kernel_devices = attach_targets(mod, devices)  # fused kernels get their device's target
    mod = schedule_gpu(mod, kernel_devices, devices)  # dlight schedules for GPU kernels, if any
    ex = tvm.compile(mod, relax_pipeline=vm_pipeline(off_host=True))

    vm = relax.VirtualMachine(ex, [d.tvm_device() for d in devices])
    weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
    out = vm["main"](*[tvm.runtime.tensor(x) for x in model.inputs.values()], *weights).numpy()

    ref_ex = tvm.compile(model.mod, target=tvm.target.Target(devices[0].target))
    ref = relax.VirtualMachine(ref_ex, tvm.cpu())["main"](
        *[tvm.runtime.tensor(x) for x in model.inputs.values()], *[tvm.runtime.tensor(p) for p in model.params]
    ).numpy()
    print(f"{sum(1 for v in kernel_devices.values() if v == 'cpu1')} kernels on cpu1, "
          f"{sum(1 for v in kernel_devices.values() if v == 'cpu')} on cpu; max_abs_err={np.max(np.abs(out - ref)):.3g}")
    assert np.allclose(out, ref, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
