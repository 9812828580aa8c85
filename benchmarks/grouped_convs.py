"""One-convolution ONNX models of grouped 1x1 convolutions (a bias, then Relu), to time a grouped
convolution alone the way a model runs it: compiled, in the VM, one fresh process per run.

    python benchmarks/grouped_convs.py [CHANNELS:SIZE:GROUPS ...] [--out build/grouped]

The default shapes are ShuffleNet's (the onnx package's light model): 4 groups of 34, 68 and 136
channels at 28 x 28, 14 x 14 and 7 x 7. BENCHMARKS.md, "Grouped convolutions padded to whole
vectors a group", compiles each file at two commits and pairs them (``benchmarks/paired.py``).
"""

from __future__ import annotations

import argparse
import os
import sys

DEFAULT = ("136:28:4", "272:14:4", "544:7:4")


def grouped_1x1(path: str, channels: int, size: int, groups: int, seed: int = 0) -> None:
    """A model of ``x`` (1 x channels x size x size) -> grouped 1x1 Conv with a bias -> Relu, saved at ``path``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights = [numpy_helper.from_array((rng.standard_normal((channels, channels // groups, 1, 1)) * 0.1).astype(np.float32), "W"),
               numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), "B")]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[1, 1], group=groups),
             helper.make_node("Relu", ["c"], ["y"])]
    shape = [1, channels, size, size]
    graph = helper.make_graph(nodes, "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="*", default=list(DEFAULT), help="CHANNELS:SIZE:GROUPS (default: ShuffleNet's)")
    ap.add_argument("--out", default="build/grouped", help="folder of the .onnx files (default build/grouped)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for shape in args.shapes:
        try:
            channels, size, groups = (int(v) for v in shape.split(":"))
        except ValueError:
            ap.error(f"{shape}: expected CHANNELS:SIZE:GROUPS, e.g. 272:14:4")
        if channels % groups:
            ap.error(f"{shape}: {groups} groups do not divide {channels} channels")
        path = os.path.join(args.out, f"grouped_{channels}_{size}x{size}_g{groups}.onnx")
        grouped_1x1(path, channels, size, groups)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
