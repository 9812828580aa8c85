"""The check's reference build (:mod:`tvm_partition.build.reference`) against TVM's default CPU
pipeline it replaced: compile and run seconds of each, and whether their outputs are the same to the bit.

    TVM_NUM_THREADS=2 python benchmarks/reference_build.py MODEL [MODEL ...]

MODEL: a zoo name or an .onnx file, at its default settings. Four builds of each, in one process,
in turn: TVM's default pipeline at LLVM level 0 (the reference before 2026-12-06), and the
reordered kernels at level 0, at level 2 and at the level the reference picks
(:data:`~tvm_partition.build.reference.LARGE_FLOPS`); each compiled, then run once.
"""

from __future__ import annotations

import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy


def main(argv=None) -> int:
    import numpy as np
    import tvm
    from tvm import relax

    from tvm_partition import frontend
    from tvm_partition.build import reference
    from tvm_partition.devices import cpu_target

    models = (argv if argv is not None else sys.argv[1:])
    if not models or models[0].startswith("-"):
        print(__doc__)
        return 0 if models else 2
    chosen = reference.LARGE_FLOPS
    for source in models:
        model = frontend.load(source)
        args = [tvm.runtime.tensor(v) for v in [*model.inputs.values(), *model.params]]
        builds = {
            "default, level 0": lambda: tvm.compile(model.mod, target=tvm.target.Target(
                dict(cpu_target(), **{"opt-level": 0}))),
            "reordered, level 0": lambda: _forced(reference, float("inf"), model.mod),
            "reordered, level 2": lambda: _forced(reference, 0.0, model.mod),
            "reordered, as picked": lambda: _forced(reference, chosen, model.mod),
        }
        outputs = {}
        for name, build in builds.items():
            start = time.perf_counter()
            vm = relax.VirtualMachine(build(), tvm.cpu())
            compiled = time.perf_counter()
            out = vm["main"](*args)
            ran = time.perf_counter()
            outputs[name] = [o.numpy() for o in (out if not hasattr(out, "numpy") else [out])]
            print(f"{source}: {name}: compile {compiled - start:.2f} s, run {ran - compiled:.2f} s", flush=True)
        first = next(iter(outputs.values()))
        same = all(all(np.array_equal(a, b) for a, b in zip(first, o)) for o in outputs.values())
        print(f"{source}: outputs the same to the bit: {same}")
    return 0


def _forced(reference, large_flops: float, mod):
    """``reference.reference_executable(mod)`` with :data:`LARGE_FLOPS` at ``large_flops``."""
    from unittest import mock

    with mock.patch.object(reference, "LARGE_FLOPS", large_flops):
        return reference.reference_executable(mod)


if __name__ == "__main__":
    sys.exit(main())
