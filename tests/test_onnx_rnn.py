"""ONNX LSTM / GRU / RNN nodes unrolled (``frontend.onnx_rnn``), against onnxruntime's own kernels.

The oracle is onnxruntime running the same ONNX file before and after the rewrite (its LSTM, GRU
and RNN are native kernels), over the specification's options: directions, layouts, initial
states given or absent (zero), peepholes, GRU's ``linear_before_reset``, which outputs are used.
Then one model end to end through our build, against onnxruntime on the original file.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_partition.frontend.onnx_rnn import RecurrentError, unroll_recurrent

ort = pytest.importorskip("onnxruntime")

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_model(kind="LSTM", *, seq=5, batch=3, inp=6, hidden=4, direction="forward", layout=0,
                    initial=False, peepholes=False, outputs=(0, 1, 2), seed=0, opset=14, **attrs):
    """A graph of one ``kind`` node (weights seeded initializers) and the inputs to run it on."""
    rng = np.random.default_rng(seed)
    dirs, g = (2 if direction == "bidirectional" else 1), GATES[kind]
    inits = [numpy_helper.from_array((rng.standard_normal((dirs, g * hidden, inp)) * 0.5).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((dirs, g * hidden, hidden)) * 0.5).astype(np.float32), "R"),
             numpy_helper.from_array((rng.standard_normal((dirs, 2 * g * hidden)) * 0.2).astype(np.float32), "B")]
    x_shape = [batch, seq, inp] if layout else [seq, batch, inp]
    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    node_inputs = ["X", "W", "R", "B", ""]
    if initial:
        for name in ("h0", "c0") if kind == "LSTM" else ("h0",):
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state))
            feeds[name] = (rng.standard_normal(state) * 0.5).astype(np.float32)
            node_inputs.append(name)
    elif kind == "LSTM" and peepholes:
        node_inputs += ["", ""]
    if peepholes:
        inits.append(numpy_helper.from_array((rng.standard_normal((dirs, 3 * hidden)) * 0.3).astype(np.float32), "P"))
        node_inputs.append("P")
    names = ["Y", "Y_h", "Y_c"][:3 if kind == "LSTM" else 2]
    node_outputs = [n if i in outputs else "" for i, n in enumerate(names)]
    while node_outputs and not node_outputs[-1]:
        node_outputs.pop()
    node = helper.make_node(kind, node_inputs, node_outputs, name="rec", hidden_size=hidden, direction=direction,
                            **({"layout": layout} if layout else {}), **attrs)
    # a consumer of each output, as a model has (an output may be used inside the graph only)
    y_shape = [batch, seq, dirs, hidden] if layout else [seq, dirs, batch, hidden]
    nodes, graph_outputs = [node], []
    for out in node_outputs:
        if out:
            nodes.append(helper.make_node("Relu", [out], [out + "_relu"]))
            graph_outputs.append(helper.make_tensor_value_info(out + "_relu", TensorProto.FLOAT,
                                                               y_shape if out == "Y" else state))
    graph = helper.make_graph(nodes, "g", graph_inputs, graph_outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), feeds


def run_ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def unrolled(model, feeds):
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    assert unroll_recurrent(copy, {k: list(v.shape) for k, v in feeds.items()}) == 1
    assert not any(n.op_type in GATES for n in copy.graph.node)
    onnx.checker.check_model(copy)
    return copy


def assert_same(model, feeds):
    want, got = run_ort(model, feeds), run_ort(unrolled(model, feeds), feeds)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_unrolled_directions_match_onnxruntime(kind, direction):
    assert_same(*recurrent_model(kind, direction=direction))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_unrolled_with_initial_states_match_onnxruntime(kind):
    assert_same(*recurrent_model(kind, initial=True, direction="bidirectional"))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_unrolled_batch_first_matches_onnxruntime_on_the_sequence_first_node(kind):
    """``layout=1`` (batch first; onnxruntime refuses it) against the same node at ``layout=0`` on
    the transposed inputs, its outputs transposed back."""
    model, feeds = recurrent_model(kind, layout=1, initial=True, direction="bidirectional")
    reference, _ = recurrent_model(kind, layout=0, initial=True, direction="bidirectional")
    want = run_ort(reference, {k: v.transpose(1, 0, 2) for k, v in feeds.items()})
    got = run_ort(unrolled(model, feeds), feeds)
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-5)  # Y
    for g, w in zip(got[1:], want[1:]):  # Y_h, Y_c
        np.testing.assert_allclose(g, w.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [9, 11])
def test_older_opsets_take_the_slice_and_split_of_their_time(opset):
    """Before opset 10 ``Slice`` takes its bounds as attributes, before 13 ``Split`` its sizes."""
    assert_same(*recurrent_model("LSTM", opset=opset, direction="bidirectional"))


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("initial", [False, True])
def test_unrolled_gru_reset_forms_match_onnxruntime(linear_before_reset, initial):
    """The two places ONNX's GRU may apply the reset gate (PyTorch exports ``linear_before_reset=1``)."""
    assert_same(*recurrent_model("GRU", initial=initial, linear_before_reset=linear_before_reset))


@pytest.mark.parametrize("initial", [False, True])
def test_unrolled_lstm_peepholes_match_onnxruntime(initial):
    assert_same(*recurrent_model("LSTM", peepholes=True, initial=initial))


@pytest.mark.parametrize("outputs", [(1,), (0,), (2,)])
def test_only_the_outputs_a_model_uses_are_built(outputs):
    model, feeds = recurrent_model("LSTM", outputs=outputs)
    assert_same(model, feeds)
    ops = [n.op_type for n in unrolled(model, feeds).graph.node]
    # Y stacks every step (a Concat of the 5 steps); Y_h and Y_c only reshape the last state
    assert (ops.count("Concat") > 0) == (outputs == (0,))


def test_activations_given_explicitly_match_onnxruntime():
    assert_same(*recurrent_model("GRU", activations=["Relu", "Softsign"]))


@pytest.mark.parametrize("attrs, message", [({"clip": 1.0}, "clip"), ({"input_forget": 1}, "input_forget"),
                                            ({"activations": ["HardSigmoid", "Tanh", "Tanh"]}, "activations")])
def test_what_is_not_unrolled_is_refused_with_the_node_named(attrs, message):
    model, feeds = recurrent_model("LSTM", **attrs)
    with pytest.raises(RecurrentError, match=f"LSTM node 'rec'.*{message}"):
        unroll_recurrent(model, {k: list(v.shape) for k, v in feeds.items()})


def test_an_onnx_lstm_builds_and_matches_onnxruntime(tmp_path):
    """The EOP-style stack as PyTorch exports it (two layers, batch first through a Transpose, the
    last step's hidden state out), loaded by our frontend (TVM alone cannot: no LSTM converter),
    planned ``equal`` over two CPUs, built, and run against onnxruntime on the original file."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.plan import Split
    from tvm_partition.runtime.runner import Runner

    rng = np.random.default_rng(1)
    seq, batch, inp, hid = 4, 4, 8, 8
    inits, nodes, x = [], [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2])], "xt"
    for layer in range(2):
        size = inp if layer == 0 else hid
        for name, shape in (("W", (1, 4 * hid, size)), ("R", (1, 4 * hid, hid)), ("B", (1, 8 * hid))):
            inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.4).astype(np.float32), f"{name}{layer}"))
        nodes.append(helper.make_node("LSTM", [x, f"W{layer}", f"R{layer}", f"B{layer}"], [f"Y{layer}", f"h{layer}"],
                                      hidden_size=hid))
        nodes.append(helper.make_node("Squeeze", [f"Y{layer}", "one"], [f"s{layer}"]))
        x = f"s{layer}"
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "one"))
    nodes.append(helper.make_node("Squeeze", ["h1", "zero"], ["out"]))
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "zero"))
    graph = helper.make_graph(nodes, "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, inp])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, hid])], inits)
    path = str(tmp_path / "lstm.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)

    model = frontend.load(path)
    compiled = compile_model(model, parse_devices("cpu,cpu"), "equal")
    assert sum(isinstance(d, Split) for d in compiled.plan.ops.values()) >= 8  # the steps' matmuls and gates
    runner = Runner(compiled.save(str(tmp_path / "art")))
    x_in = rng.standard_normal((batch, seq, inp)).astype(np.float32)
    (got,) = runner.run({runner.input_info[0]["name"]: x_in})
    (want,) = run_ort(onnx.load(path), {"x": x_in})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("producer", ["Expand", "ConstantOfShape"])
def test_a_zero_initial_state_skips_the_first_recurrent_matmul(producer):
    """PyTorch exports its default (zero) initial state as an ``Expand`` of a zero constant: at a
    zero state the first step has no recurrent product to compute, as in the zoo's RNNs."""
    model, feeds = recurrent_model("LSTM", seq=5, outputs=(1,))
    shape = numpy_helper.from_array(np.array([1, 3, 4], np.int64), "state_shape")
    if producer == "Expand":
        zero = helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.zeros((1, 1, 1), np.float32), "z"))
        made = [zero, helper.make_node("Expand", ["zero", "state_shape"], ["h0"])]
    else:
        made = [helper.make_node("ConstantOfShape", ["state_shape"], ["h0"])]
    model.graph.initializer.append(shape)
    node = model.graph.node[0]
    node.input[:] = list(node.input) + ["h0", "h0"]
    nodes = made + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    assert_same(model, feeds)
    matmuls = [n for n in unrolled(model, feeds).graph.node if n.op_type == "MatMul"]
    assert len(matmuls) == 1 + 4  # the input's product (all steps at once), the recurrent one of steps 1-4


def test_two_nodes_of_one_name_are_unrolled_under_names_of_their_own():
    """ONNX's checker allows two nodes of one name (onnxruntime does not); the tensors their steps
    make must have names of their own anyway."""
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.4).astype(np.float32), n) for n, s in
             (("W0", (1, 12, 5)), ("R0", (1, 12, 4)), ("W1", (1, 12, 4)), ("R1", (1, 12, 4)))]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "one"))
    nodes = [helper.make_node("GRU", ["X", "W0", "R0"], ["Y0"], name="same", hidden_size=4),
             helper.make_node("Squeeze", ["Y0", "one"], ["X1"]),
             helper.make_node("GRU", ["X1", "W1", "R1"], ["", "H"], name="same", hidden_size=4)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2, 5])],
                              [helper.make_tensor_value_info("H", TensorProto.FLOAT, [1, 2, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {"X": rng.standard_normal((3, 2, 5)).astype(np.float32)}
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    assert unroll_recurrent(copy, {"X": [3, 2, 5]}) == 2
    onnx.checker.check_model(copy, full_check=True)
    model.graph.node[2].name = "other"  # onnxruntime refuses two nodes of one name: the reference has two
    np.testing.assert_allclose(run_ort(copy, feeds)[0], run_ort(model, feeds)[0], rtol=1e-5, atol=1e-5)
