"""ONNX nodes TVM's importer converts against the specification, rewritten into a form it converts
as the specification means, before it reads the graph.

Found by running ONNX's own test cases (``benchmarks/onnx_node_cases.py``), where TVM 0.27's flow
gave outputs of the wrong shape without a word:

* ``ConvTranspose`` with ``output_shape``: the importer ignores the attribute, so the output had
  the shape the pads give (ONNX's case: 9 x 7 where 10 x 8 was asked; TensorFlow's converters
  write ``output_shape`` for every transposed convolution of a ``SAME`` padding). The
  specification derives the pads from it: ``total = stride * (in - 1) + output_padding +
  (kernel - 1) * dilation + 1 - output_shape``, split ``total - total // 2`` before and ``total //
  2`` after (the other way round for ``SAME_UPPER``); a negative pad after is more output padding.
  They are written as ``pads`` and ``output_padding``, which the importer reads.
* ``Expand`` whose shape is an initializer: the importer reads it as a constant only if it is a
  ``relax.Constant``, and this tool imports initializers as weights (``keep_params_in_input``), so
  it took the path of a shape computed at run time, which broadcasts to the shape as written:
  ``[3, 1]`` expanded by ``[2, 1, 6]`` came out ``[2, 1, 6]``, not ``[2, 3, 6]``, without a word
  (exporters and simplifiers such as onnxsim write shapes as initializers). The shape is made a
  ``Constant`` node.
* ``Tile``: the kernel TVM writes for it (each output element reads ``x[i % n]``) comes out of LLVM
  wrong for every AVX-512 target (``rocketlake``, ``skylake-avx512``, ``icelake-server``,
  ``znver4``; right with ``-avx512f``, for ``skylake`` and a plain ``llvm``): ONNX's case,
  ``[2, 3, 4, 5]`` tiled ``[7, 6, 4, 2]``, read garbage in half its outputs, through TVM's own
  ``relax.build`` too. Written as a broadcast (reshape, ``broadcast_to``, reshape) it fused into one
  kernel of the same modulo indices, as wrong. With constant repeats, it is written as ``Concat``
  of copies along each tiled axis (a balanced tree), whose kernels select by comparisons, where
  there are at most :data:`CONCAT_COPIES` copies in all; as one ``Gather`` an axis of constant
  indices (``0 .. n-1`` repeated; the kernel loads each index) where there are more
  (``[2, 3, 4, 5]`` tiled ``[30, 30, 4, 2]``, 66 copies, was as wrong in TVM's kernel). Repeats
  of more than one dimension that hold one repeat an axis (PyTorch's TorchScript export of Hugging
  Face's Mamba tiles a ``(1,)`` tensor by ``[[64]]``; onnxruntime refuses the file) are read as the
  1-D repeats they mean: they had stopped ``compile`` with a traceback.
* ``IsInf`` with ``detect_positive`` or ``detect_negative`` off: the importer detects both signs
  without a word (ONNX's two cases wrong); written as ``IsInf`` and the sign's comparison.
* ``LayerNormalization``'s second and third outputs, the mean and the inverse standard deviation
  (training exports write them): the importer gives two scalar placeholders (shape ``[]`` where
  ONNX's 19 cases want ``[2, 3, 1, 1]``), without a word. Where they are read they are computed
  beside the node as the specification defines them: ``ReduceMean`` over the normalised axes in
  ``stash_type`` (float32 for a float16 model), dimensions kept.
* ``Pow`` of a float base and an exponent of another type (``float ** int``: refused, "Binary
  operators must have the same datatype") has the exponent cast to the base's type; of an integer
  base (refused: "power only applies to float"), the power is taken in float64 and cast back.
* ``EyeLike`` whose ``dtype`` is not its input's (refused: "dtype mismatch") is the ``EyeLike`` in
  the input's type, cast.
* ``Compress`` whose condition is a constant: imported as a ``nonzero`` of a weight, a shape the
  data decides, and the build died in TVM's passes with a segmentation fault (ONNX's four cases
  with their condition an initializer; as a graph input they pass). It is a ``Gather`` of the
  constant indices the condition selects, of the input flattened where no ``axis`` is given.
"""

from __future__ import annotations

from .onnx_graph import Emitter, Lookup, attrs, replace_attributes, rewrite_nodes, static_types


def conform(proto, input_shapes: dict[str, list[int]]) -> int:
    """Rewrite, in place, the nodes of ``proto``'s main graph listed in the module docstring whose
    inputs' shapes are static. Returns how many."""
    graph = proto.graph
    count = _expand_shapes_constant(graph) + rewrite_nodes(
        proto, {"Compress": _compress_as_gather}, "spec", Lookup.of(graph))
    targets = [n for n in graph.node if n.domain in ("", "ai.onnx") and (n.op_type in _TYPED or (
        n.op_type == "ConvTranspose" and any(a.name == "output_shape" for a in n.attribute)))]
    if not targets:
        return count  # the shape inference below copies the model
    types = static_types(proto, input_shapes)
    count += sum(_conv_transpose(node, types) for node in targets if node.op_type == "ConvTranspose")
    return count + rewrite_nodes(proto, _TYPED, "spec", Lookup.of(graph), types)


#: Most copies (the sum of a ``Tile``'s repeats over its tiled axes) written as ``Concat``\ s of
#: copies; more as ``Gather``\ s. Measured in our build (``tvm-partition bench``, ``cpu``, this
#: module's docstring): 64 x 32 x 32 tiled 2 x 2 (4 copies) 11.9 us as concatenations, 37.7 as
#: gathers; ONNX's case (19) 147 against 13.7; 8 x 256 tiled 16 times 29.3 against 17.3.
CONCAT_COPIES = 8


def _tile(node, emit: Emitter, lookup: Lookup, types: dict) -> bool:
    """A ``Tile`` of constant repeats as ``Concat``\ s of copies along each tiled axis (at most
    :data:`CONCAT_COPIES` copies), else, where its input's shape is static, one ``Gather`` along
    each tiled axis of the indices ``0 .. n-1`` repeated."""
    import numpy as np

    repeats = lookup.array(node.input[1]) if len(node.input) > 1 else None
    if repeats is None or (repeats < 1).any():
        return False
    shape = types.get(node.input[0], (0, None))[1]
    if repeats.ndim != 1:  # out of ONNX's spec (onnxruntime refuses the file), but one repeat an axis
        # all the same: PyTorch's TorchScript exporter writes [[64]] for a (1,)-shaped input in Hugging
        # Face's Mamba; any other shape is left to TVM's importer
        if not shape or repeats.size != len(shape):
            return False
        repeats = repeats.reshape(-1)
    concat = sum(int(r) for r in repeats if r > 1) <= CONCAT_COPIES
    if not concat and (not shape or len(shape) != len(repeats)):
        return False
    value = node.input[0]
    for axis, r in enumerate(int(r) for r in repeats):
        if r > 1 and concat:
            value = emit.concat([value] * r, axis)
        elif r > 1:
            value = emit.op("Gather", [value, emit.ints(np.tile(np.arange(shape[axis]), r))], axis=axis)
    emit.op("Identity", [value], node.output[0])
    return True


def _scalar(emit: Emitter, value: float, elem_type: int) -> str:
    """A scalar ``Constant`` node of ``value`` in ONNX element type ``elem_type``."""
    import numpy as np
    from onnx import helper

    return emit.constant(np.asarray(value, helper.tensor_dtype_to_np_dtype(elem_type)))


def _is_inf_of_one_sign(node, emit: Emitter, lookup: Lookup, types: dict) -> bool:
    """``IsInf`` with ``detect_positive`` or ``detect_negative`` off as ``IsInf`` and the sign kept."""
    given = attrs(node)
    positive, negative = given.get("detect_positive", 1), given.get("detect_negative", 1)
    x = node.input[0]
    if (positive and negative) or x not in types:
        return False
    inf = emit.op("IsInf", [x])
    if positive or negative:
        side = emit.op("Greater" if positive else "Less", [x, _scalar(emit, 0.0, types[x][0])])
    else:
        side = emit.op("Not", [inf])  # neither sign: nothing is detected
    emit.op("And", [inf, side], node.output[0])
    return True


def _layer_norm_statistics(node, emit: Emitter, lookup: Lookup, types: dict) -> bool:
    """A ``LayerNormalization`` whose mean or inverse standard deviation is read: those computed
    beside it (``ReduceMean``\\ s in its ``stash_type``, kept dimensions), the node left one output."""
    from onnx import TensorProto

    outputs = list(node.output) + [""] * (3 - len(node.output))
    x = node.input[0]
    if not (outputs[1] or outputs[2]) or x not in types:
        return False
    given = attrs(node)
    rank = len(types[x][1])
    axes = list(range(given.get("axis", -1) % rank, rank))
    stash = given.get("stash_type", TensorProto.FLOAT)
    emit.op("LayerNormalization", list(node.input), outputs[0], **given)
    wide = x if types[x][0] == stash else emit.op("Cast", [x], to=stash)

    def mean(value: str, out: str | None = None) -> str:
        if emit.opset >= 18:
            return emit.op("ReduceMean", [value, emit.ints(axes)], out, keepdims=1)
        return emit.op("ReduceMean", [value], out, axes=axes, keepdims=1)

    mu = mean(wide, outputs[1] or None)
    centred = emit.op("Sub", [wide, mu])
    variance = mean(emit.op("Mul", [centred, centred]))
    deviation = emit.op("Sqrt", [emit.op("Add", [variance, _scalar(emit, given.get("epsilon", 1e-5), stash)])])
    if outputs[2]:
        emit.op("Reciprocal", [deviation], outputs[2])
    return True


def _pow_of_one_type(node, emit: Emitter, lookup: Lookup, types: dict) -> bool:
    """A ``Pow`` whose exponent's type is not its base's, or of an integer base: the exponent cast
    to a float base's type; an integer base's power taken in float64 and cast back."""
    from onnx import TensorProto, helper

    base, exponent = node.input[:2]
    if base not in types or exponent not in types:
        return False
    base_type, exponent_type = types[base][0], types[exponent][0]
    if helper.tensor_dtype_to_np_dtype(base_type).kind == "f":
        if exponent_type == base_type:
            return False
        emit.op("Pow", [base, emit.op("Cast", [exponent], to=base_type)], node.output[0])
        return True
    wide = [emit.op("Cast", [name], to=TensorProto.DOUBLE) for name in (base, exponent)]
    emit.op("Cast", [emit.op("Pow", wide)], node.output[0], to=base_type)
    return True


def _eye_like_cast(node, emit: Emitter, lookup: Lookup, types: dict) -> bool:
    """An ``EyeLike`` whose ``dtype`` is not its input's (TVM's importer refuses it) as the
    ``EyeLike`` in the input's type, cast."""
    given = attrs(node)
    x = node.input[0]
    if "dtype" not in given or x not in types or given["dtype"] == types[x][0]:
        return False
    eye = emit.op("EyeLike", [x], **{k: v for k, v in given.items() if k != "dtype"})
    emit.op("Cast", [eye], node.output[0], to=given["dtype"])
    return True


def _compress_as_gather(node, emit: Emitter, lookup: Lookup) -> bool:
    """A ``Compress`` of a constant condition selecting at least one element as a ``Gather`` of
    the indices it selects."""
    import numpy as np

    condition = lookup.array(node.input[1]) if len(node.input) > 1 else None
    if condition is None or not np.any(condition):
        return False
    axis = attrs(node).get("axis")
    x = node.input[0] if axis is not None else emit.reshape(node.input[0], [-1])
    emit.op("Gather", [x, emit.ints(np.flatnonzero(condition))], node.output[0], axis=axis or 0)
    return True


def _expand_shapes_constant(graph) -> int:
    """Each ``Expand``'s shape that is an initializer read as a ``Constant`` node of its value."""
    from onnx import helper

    inits = {i.name: i for i in graph.initializer}
    shapes = {n.input[1] for n in graph.node if n.op_type == "Expand" and n.domain in ("", "ai.onnx")
              and len(n.input) > 1 and n.input[1] in inits}
    if not shapes:
        return 0
    constants = [helper.make_node("Constant", [], [name], name=f"{name}#constant", value=inits[name]) for name in sorted(shapes)]
    nodes = constants + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [i for i in graph.initializer if i.name not in shapes]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return len(shapes)


def _conv_transpose(node, types: dict) -> bool:
    x, w = (types.get(name, (0, None))[1] for name in node.input[:2])
    if not x or not w:
        return False
    given = attrs(node)
    spatial = len(x) - 2
    out = list(given["output_shape"])[-spatial:]
    strides = list(given.get("strides", [1] * spatial))
    dilations = list(given.get("dilations", [1] * spatial))
    kernel = list(given.get("kernel_shape", w[2:]))
    padding = list(given.get("output_padding", [0] * spatial))
    upper = given.get("auto_pad", b"NOTSET") in (b"SAME_UPPER", "SAME_UPPER")
    before, after = [], []
    for i in range(spatial):
        total = strides[i] * (x[i + 2] - 1) + padding[i] + (kernel[i] - 1) * dilations[i] + 1 - out[i]
        first, last = (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)
        if first < 0:
            return False  # more output before the first input row: no pads say that
        if last < 0:
            padding[i], last = padding[i] - last, 0
        before.append(first)
        after.append(last)
    replace_attributes(node, ("output_shape", "auto_pad"), pads=before + after, output_padding=padding)
    return True


#: The rewrites that read their inputs' types and shapes (module docstring).
_TYPED = {"Tile": _tile, "IsInf": _is_inf_of_one_sign, "LayerNormalization": _layer_norm_statistics,
          "Pow": _pow_of_one_type, "EyeLike": _eye_like_cast}
