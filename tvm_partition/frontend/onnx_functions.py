"""ONNX operators TVM's importer has no converter for, written out by ONNX's own definitions of them.

TVM 0.27's Relax ONNX importer converts 164 of the 203 operators of the standard (onnx 1.23's
schemas against the importer's converter map). Fourteen of those it lacks the standard itself
defines as functions of other operators, a body in the operator's schema or one built for the
node's attributes and input types: ``Celu``, ``Swish``, ``SwiGLU``, ``RotaryEmbedding``,
``LinearAttention``, ``CausalConvWithState``, ``CenterCropPad``, the Hann, Hamming and Blackman
windows, ``Bernoulli``, ``SequenceMap`` and the two training losses. ONNX's inliner
(``onnx.inliner.inline_selected_functions`` with ``inline_schema_functions``) replaces each such
node by that body for the model's opset, before TVM reads the graph; what the importer then meets
are operators it converts. PyTorch's ``F.celu`` is exported as ``Celu``: such a model was refused
("OpNotImplemented: The following operators are not supported for frontend ONNX: Celu").

The operators the importer converts are read from its converter map
(``onnx_frontend._get_convert_map``, private in TVM 0.27), so an operator a later TVM converts
itself is left to it; except those :data:`MISREAD`: the map is keyed by name alone, and its
``Attention`` converts onnxruntime's ``com.microsoft`` operator of that name, so the standard's
``Attention`` (opset 23, what PyTorch's exporter writes for ``scaled_dot_product_attention`` at
that opset) failed in it (``KeyError: 'num_heads'``: all 88 of ONNX's own test cases of the
operator, ``benchmarks/onnx_node_cases.py``).
"""

from __future__ import annotations

from .onnx_graph import default_opset, subgraphs

#: Operators of the standard whose name the importer's converter map holds for another domain's
#: operator of different meaning (module docstring): written out by ONNX's definition all the same.
MISREAD = frozenset({"Attention"})

#: Rounds of inlining: a body may use another operator that is itself a function the importer lacks.
MAX_ROUNDS = 4


def inline_unconverted_functions(proto) -> int:
    """Replace, in place, every node of ``proto`` (a ModelProto, subgraphs included) whose operator
    TVM's importer cannot convert and ONNX defines as a function, by that function's body.
    Returns how many kinds of operator were written out."""
    import onnx.inliner

    done: set[str] = set()
    for _ in range(MAX_ROUNDS):
        kinds = sorted(_unconverted_functions(proto) - done)
        if not kinds:
            break
        _set_defaults(proto, kinds)
        inlined = onnx.inliner.inline_selected_functions(_typed(proto), [("", k) for k in kinds],
                                                         inline_schema_functions=True)
        del inlined.graph.value_info[:]  # the types were for the inliner: the graph keeps its own
        inlined.graph.value_info.extend(proto.graph.value_info)
        proto.CopyFrom(inlined)
        done.update(kinds)
    return len(done)


def _set_defaults(proto, kinds) -> None:
    """Every attribute a node of ``kinds`` leaves unset, set to its schema's default: the inliner
    drops an attribute that refers to one the node did not set, where the schema means its
    default (a HannWindow without ``periodic`` became a ``Constant`` of no value)."""
    import onnx.defs

    opset = default_opset(proto)
    for node in _nodes(proto.graph):
        if node.op_type not in kinds or node.domain not in ("", "ai.onnx"):
            continue
        given = {a.name for a in node.attribute}
        for name, attr in onnx.defs.get_schema(node.op_type, opset).attributes.items():
            if name not in given and attr.default_value.type != onnx.AttributeProto.UNDEFINED:
                node.attribute.append(attr.default_value)
                node.attribute[-1].name = name


def _typed(proto):
    """A copy of ``proto`` with every tensor's type: a context-dependent function is built for its
    node's input types, which the inliner looks up among the graph's inputs and ``value_info``
    only ("Type unknown for cos": a RotaryEmbedding's cache, an initializer). And a type for the
    empty name: the inliner (onnx 1.23) asks for the type of an omitted optional input too ("Type
    unknown for ": an ``Attention`` given ``past_key`` without ``attn_mask``); the function's
    builder still sees the input omitted (its outputs equal ONNX's reference outputs)."""
    import onnx

    typed = onnx.ModelProto()
    typed.CopyFrom(proto)
    known = {v.name for v in typed.graph.value_info} | {i.name for i in typed.graph.input}
    typed.graph.value_info.extend(onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                                  for i in typed.graph.initializer if i.name not in known)
    typed.graph.value_info.append(onnx.helper.make_tensor_value_info("", onnx.TensorProto.FLOAT, None))
    return onnx.shape_inference.infer_shapes(typed)


def _unconverted_functions(proto) -> set[str]:
    """The operators of ``proto``'s default domain that the importer lacks and ONNX defines as functions."""
    import onnx.defs

    converted = _converted() - MISREAD
    opset = default_opset(proto)
    kinds = set()
    for op in {n.op_type for n in _nodes(proto.graph) if n.domain in ("", "ai.onnx")} - converted:
        try:
            schema = onnx.defs.get_schema(op, opset)
        except onnx.defs.SchemaError:  # not an operator of this opset: the importer names it
            continue
        if schema.has_function or schema.has_context_dependent_function:
            kinds.add(op)
    return kinds


def _nodes(graph):
    """Every node of ``graph`` and of the subgraphs its nodes hold (a Loop's body, an If's branches)."""
    for node in graph.node:
        yield node
        for sub in subgraphs(node):
            yield from _nodes(sub)


def _converted() -> set[str]:
    from tvm.relax.frontend.onnx import onnx_frontend

    return set(onnx_frontend._get_convert_map())
