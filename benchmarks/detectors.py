"""Detectors whose last ops' output sizes depend on the data, written with ``onnx.helper``.

    python benchmarks/detectors.py [--out build/detectors] [--size 320]

Writes ``OUT/detector_nms.onnx`` and ``OUT/detector_nonzero.onnx``: a YOLO-like backbone (five 3x3
convolutions with LeakyReLU, four of stride 2, 16 to 128 channels), two 1x1 heads (4 box
coordinates and 80 class scores at each place of the last map: 400 places at 320 px), then a
tail as detectors end: ``nms``, ONNX ``NonMaxSuppression`` (at most 100 boxes a class, IoU 0.45,
score 0.25) and the kept boxes gathered and scaled to pixels; ``nonzero``, the places whose best
score passes 0.25 (``ReduceMax``, ``Greater``, ``NonZero``) gathered. Seeded weights. Then
``tvm-partition bench --models OUT/detector_nms.onnx,OUT/detector_nonzero.onnx --strategies
cpu,equal,onnxruntime`` measures them beside onnxruntime and checks their outputs against it
(BENCHMARKS.md, "Detectors: outputs the data sizes"); ``tests/test_data_dependent.py`` builds them
small.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

#: Output channels of the backbone's convolutions (3x3; all but the last of stride 2).
BACKBONE = (16, 32, 64, 128, 128)


def detector(path, tail: str, size: int = 320, classes: int = 80, channels=BACKBONE, per_class: int = 100,
             threshold: float = 0.25, score_bias: float = -4.0):
    """Write the detector of the module docstring with ``tail`` (``nms`` or ``nonzero``) to
    ``path``; returns its ``onnx.ModelProto``. The class scores' logits are about a standard
    normal draw plus ``score_bias`` on an image of uniform pixels in [0, 1] (the backbone's
    initialisation keeps its activations' scale): at -4 about 0.2% of the places and classes
    pass 0.25, as a trained detector's few objects do."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, x, cin = {}, [], "image", 3
    for k, cout in enumerate(channels):
        stride = 2 if k < len(channels) - 1 else 1
        inits[f"weight{k}"] = (rng.standard_normal((cout, cin, 3, 3)) * (2.0 / (9 * cin)) ** 0.5).astype(np.float32)
        inits[f"bias{k}"] = np.zeros(cout, np.float32)
        nodes += [helper.make_node("Conv", [x, f"weight{k}", f"bias{k}"], [f"conv{k}"], pads=[1, 1, 1, 1],
                                   strides=[stride] * 2),
                  helper.make_node("LeakyRelu", [f"conv{k}"], [f"act{k}"], alpha=0.1)]
        x, cin = f"act{k}", cout
    places = (size // 2 ** (len(channels) - 1)) ** 2
    inits.update(wb=(rng.standard_normal((4, cin, 1, 1)) * 0.1).astype(np.float32), bb=np.zeros(4, np.float32),
                 ws=(rng.standard_normal((classes, cin, 1, 1)) * 2 / cin ** 0.5).astype(np.float32),
                 bs=np.full(classes, score_bias, np.float32), box_shape=np.array([1, 4, places], np.int64),
                 score_shape=np.array([1, classes, places], np.int64), zero=np.array([0], np.int64))
    nodes += [
        helper.make_node("Conv", [x, "wb", "bb"], ["box_map"]),
        helper.make_node("Conv", [x, "ws", "bs"], ["score_map"]),
        helper.make_node("Reshape", ["box_map", "box_shape"], ["b3"]),
        helper.make_node("Sigmoid", ["b3"], ["b3s"]),
        helper.make_node("Transpose", ["b3s"], ["boxes"], perm=[0, 2, 1]),  # 1 x places x 4
        helper.make_node("Reshape", ["score_map", "score_shape"], ["s3"]),
        helper.make_node("Sigmoid", ["s3"], ["scores"]),  # 1 x classes x places
        helper.make_node("Squeeze", ["boxes", "zero"], ["boxes2"]),  # places x 4
    ]
    if tail == "nms":
        nodes += [
            helper.make_node("NonMaxSuppression", ["boxes", "scores", "per_class", "iou", "threshold"], ["selected"]),
            helper.make_node("Gather", ["selected", "two"], ["box_index"], axis=1),
            helper.make_node("Gather", ["boxes2", "box_index"], ["picked"], axis=0),
            helper.make_node("Mul", ["picked", "scale"], ["detections"]),
        ]
        inits.update(per_class=np.array([per_class], np.int64), iou=np.array([0.45], np.float32),
                     threshold=np.array([threshold], np.float32), two=np.array(2, np.int64),
                     scale=np.full(4, size, np.float32))
        outputs = [helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3]),
                   helper.make_tensor_value_info("detections", TensorProto.FLOAT, ["n", 4])]
    elif tail == "nonzero":
        nodes += [
            helper.make_node("ReduceMax", ["scores", "one"], ["best"], keepdims=0),  # 1 x places
            helper.make_node("Greater", ["best", "threshold"], ["mask"]),
            helper.make_node("NonZero", ["mask"], ["where"]),  # 2 x n
            helper.make_node("Gather", ["where", "one"], ["rows"], axis=0),  # 1 x n
            helper.make_node("Squeeze", ["rows", "zero"], ["place"]),
            helper.make_node("Gather", ["boxes2", "place"], ["detections"], axis=0),
        ]
        inits.update(one=np.array([1], np.int64), threshold=np.array(threshold, np.float32))
        outputs = [helper.make_tensor_value_info("detections", TensorProto.FLOAT, ["n", 4])]
    else:
        raise ValueError(f"unknown tail {tail!r}: nms or nonzero")
    graph = helper.make_graph(nodes, f"detector_{tail}",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
                              outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return proto


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join("build", "detectors"), help="folder (default build/detectors)")
    ap.add_argument("--size", type=int, default=320, help="input height and width, a multiple of 16 (default 320)")
    args = ap.parse_args(argv)
    if args.size <= 0 or args.size % 16:
        print(f"error: --size {args.size}: a positive multiple of 16", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    for tail in ("nms", "nonzero"):
        path = os.path.join(args.out, f"detector_{tail}.onnx")
        detector(path, tail, args.size)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
