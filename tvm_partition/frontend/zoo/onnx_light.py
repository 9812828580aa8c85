"""Seeded random weights for the light ONNX models the ``onnx`` package ships, so a wrong split shows.

``onnx`` ships nine ImageNet CNNs as ``onnx/backend/test/data/light/light_<name>.onnx`` (see
:data:`NAMES`). Their weights are ``ConstantOfShape`` nodes that fill every conv and Gemm weight
with 0.02 (plus a few real BatchNorm and bias initializers): every output channel of a layer then
computes the same thing and the output is constant, so a partition that mixes up channels, halo
rows or part order would still give the right answer. :func:`reseed` writes a copy in which every
float weight (those nodes and every float initializer) holds seeded random values of its shape,
scaled by what the weight is used for so that activations stay finite and varied through 100+
layers:

* Conv / Gemm / MatMul weights: He normal, std ``sqrt(2 / fan_in)`` (the fan-in read where the
  weight is used: a classifier weight may be reshaped first); a classifier feeding a Softmax gets
  std ``sqrt(CLASSIFIER_GAIN / fan_in)``, so its probabilities are neither one-hot nor uniform;
* biases (Conv and Gemm C, BatchNorm B, a weight added): normal, std 0.01;
* scales (BatchNorm scale, a weight multiplied): uniform 0.8..1.2, except the BatchNorm that ends
  a residual branch summed with an identity shortcut: uniform 0.1..0.3 (as zero-gamma
  initialisation does), else ResNet-50 and ShuffleNet double their activations at every block;
* BatchNorm mean: normal, std 0.1; BatchNorm var: uniform 0.5..1.5 (positive);
* any other float weight: normal, std 0.01.

A tensor's values depend on the seed and its name only. The rest of the graph is kept; the copy
passes ``onnx.checker``. ``benchmarks/onnx_light.py`` is the command line.
"""

from __future__ import annotations

import math
import os
import zlib

import numpy as np

from ..onnx_graph import readers

NAMES = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet",
         "vgg19", "zfnet512")
#: The gain of a classifier feeding a Softmax (He's is 2). With He's, ResNet-50's and
#: ShuffleNet's softmax was one-hot; with 0.1 the logits of the nine models on a seeded normal
#: input have std 0.4..6 and the top probability is 0.003..0.6 (seed 0).
CLASSIFIER_GAIN = 0.1
#: Ops a weight passes through unchanged in meaning (its role is that of the consumer after them).
PASS_THROUGH = ("Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity")
#: Ops between a classifier and its Softmax (a layer with a ReLU or a pooling between is not one).
TO_LOGITS = ("Dropout", *PASS_THROUGH)


def light_dir() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def light_path(name: str) -> str:
    return os.path.join(light_dir(), f"light_{name}.onnx")


def available() -> list[str]:
    """The names of :data:`NAMES` whose file this onnx install has."""
    return [n for n in NAMES if os.path.exists(light_path(n))]


class _Uses:
    """Who reads and who writes each tensor of a graph, and the static shapes shape inference finds."""

    def __init__(self, proto):
        import onnx

        graph = proto.graph
        self.consumers = readers(graph)
        self.producers = {out: node for node in graph.node for out in node.output}
        inferred = onnx.shape_inference.infer_shapes(proto).graph
        self.shapes = {}
        for v in [*inferred.input, *inferred.value_info, *inferred.output]:
            dims = v.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                self.shapes[v.name] = tuple(int(d.dim_value) for d in dims)

    def role(self, name: str, shape: tuple) -> tuple[str, int]:
        """``(role, fan_in)`` of a weight from its first consumer past :data:`PASS_THROUGH` ops."""
        from onnx import helper

        for _ in range(8):
            uses = self.consumers.get(name, [])
            if not uses:
                return "other", 1
            node, k = uses[0]
            if node.op_type in PASS_THROUGH and k == 0:
                name = node.output[0]
                shape = self.shapes.get(name, shape)
                continue
            op = node.op_type
            weight = "classifier" if self.feeds_softmax(node) else "weight"
            if k == 1 and op in ("Conv", "ConvTranspose"):
                return weight, max(1, math.prod(shape[1:]))
            if k == 1 and op == "Gemm":
                trans_b = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "transB"), 0)
                return weight, int(shape[1] if trans_b else shape[0])
            if k == 1 and op == "MatMul":
                return weight, int(shape[-2] if len(shape) > 1 else shape[0])
            if op == "BatchNormalization" and k == 1 and self.ends_residual_branch(node):
                return "residual", 1
            if op == "BatchNormalization" and 1 <= k <= 4:
                return ("scale", "bias", "mean", "var")[k - 1], 1
            if (k == 2 and op in ("Conv", "Gemm")) or op in ("Add", "Sub"):
                return "bias", 1
            return ("scale" if op == "Mul" else "other"), 1
        return "other", 1

    def feeds_softmax(self, node) -> bool:
        """Whether ``node``'s output reaches a Softmax through :data:`TO_LOGITS` ops only."""
        for _ in range(8):
            uses = self.consumers.get(node.output[0], [])
            if any(n.op_type == "Softmax" for n, _ in uses):
                return True
            if len(uses) != 1 or uses[0][0].op_type not in TO_LOGITS:
                return False
            node = uses[0][0]
        return False

    def ends_residual_branch(self, node) -> bool:
        """Whether ``node``'s output is summed with a shortcut that is not itself a BatchNormalization
        (an identity shortcut, not a projection)."""
        for add, _ in self.consumers.get(node.output[0], []):
            if add.op_type in ("Add", "Sum"):
                others = [x for x in add.input if x != node.output[0]]
                return all(getattr(self.producers.get(x), "op_type", None) != "BatchNormalization" for x in others)
        return False

    def seeded(self, name: str, shape: tuple, dtype, seed: int):
        """The initializer ``name``: seeded values of ``shape`` for its role."""
        from onnx import numpy_helper

        role, fan_in = self.role(name, tuple(shape))
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        return numpy_helper.from_array(_values(role, fan_in, tuple(shape), rng).astype(dtype), name)


def _values(role: str, fan_in: int, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    if role in ("weight", "classifier"):
        return rng.normal(0.0, math.sqrt((2.0 if role == "weight" else CLASSIFIER_GAIN) / fan_in), shape)
    low_high = {"residual": (0.1, 0.3), "scale": (0.8, 1.2), "var": (0.5, 1.5)}.get(role)
    if low_high:
        return rng.uniform(*low_high, shape)
    return rng.normal(0.0, 0.1 if role == "mean" else 0.01, shape)  # mean; bias and other


def reseed(src: str, dst: str, seed: int = 0) -> str:
    """Write ``src`` to ``dst`` with every float weight replaced by seeded values (see the module)."""
    import onnx
    from onnx import helper, numpy_helper

    proto = onnx.load(src)
    graph, uses = proto.graph, _Uses(proto)
    inits = {i.name: i for i in graph.initializer}
    for init in graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype.kind == "f":
            init.CopyFrom(uses.seeded(init.name, a.shape, a.dtype, seed))
    made, shapes_read = [], set()
    for node in list(graph.node):  # a float ConstantOfShape of a fixed shape becomes a seeded initializer
        value = next((numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value"), np.zeros(1, "float32"))
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits or value.dtype.kind != "f":
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
        made.append(uses.seeded(node.output[0], shape, value.dtype, seed))
        shapes_read.add(node.input[0])
        graph.node.remove(node)
    _drop_unread(graph, shapes_read)
    graph.initializer.extend(made)
    if proto.ir_version < 4:  # before IR 4 every initializer is also a graph input
        graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in made)
    onnx.checker.check_model(proto)
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    onnx.save(proto, dst)
    return dst


def _drop_unread(graph, names: set) -> None:
    """Remove the initializers (and their graph inputs) of ``names`` that no node reads any more."""
    read = {x for node in graph.node for x in node.input}
    gone = names - read
    keep = [i for i in graph.initializer if i.name not in gone]
    inputs = [i for i in graph.input if i.name not in gone]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    del graph.input[:]
    graph.input.extend(inputs)


def ort_outputs(path: str, seed: int = 0, threads: int = 1) -> list[np.ndarray]:
    """onnxruntime's outputs on seeded standard-normal float inputs (batch 1 where it is free)."""
    import onnxruntime as ort

    from ...inputs import graph_input_names

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    data = set(graph_input_names(path))  # not the weights a model also lists as inputs
    feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype("float32")
             for i in sess.get_inputs() if i.name in data}
    return [np.asarray(o) for o in sess.run(None, feeds)]


def problem(outputs: list[np.ndarray]) -> str | None:
    """Why outputs look like a broken model (non-finite, constant), or None."""
    for k, o in enumerate(outputs):
        if not np.all(np.isfinite(o)):
            return f"output {k} has NaN or inf"
        if o.size > 1 and float(np.std(o)) <= 1e-6 * max(1.0, float(np.max(np.abs(o)))):
            return f"output {k} is constant ({float(o.ravel()[0]):.3g})"
    return None
