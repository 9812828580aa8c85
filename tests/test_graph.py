"""OpGraph: the fused kernels TVM launches, mapped back to Relax operators."""

from __future__ import annotations

from helpers import mlp_model
from tvm_partition import frontend
from tvm_partition.ir.graph import OpGraph, op_signature


def test_mlp_groups_follow_tvm_fusion():
    g = OpGraph(mlp_model(batch=4).mod)
    ops = [g.ops[i] for i in g.topo_order()]
    assert [op.kind for op in ops] == ["matmul", "reshape", "matmul", "softmax"]
    # matmul + bias add + tanh is one kernel: three Relax operators
    assert len(ops[0].members) == 3
    assert ops[0].output_shapes == [(4, 16)]
    assert ops[0].flops == 2 * 4 * 16 * 8 + 2 * 4 * 16
    # the weight transposes depend only on weights: lifted to load time, not ops
    assert all(g.bindings[i].value.op.name == "relax.permute_dims" for i in g.static)
    assert len(g.static) == 2


def test_edges_carry_tensor_bytes():
    g = OpGraph(mlp_model(batch=4).mod)
    ids = g.topo_order()
    assert list(g.graph.edges) == [(ids[0], ids[1]), (ids[1], ids[2]), (ids[2], ids[3])]
    assert g.graph[ids[0]][ids[1]]["bytes"] == 4 * 16 * 4
    assert g.graph[ids[2]][ids[3]]["bytes"] == 4 * 4 * 4


def test_legal_dims_and_refusals():
    g = OpGraph(mlp_model(batch=4).mod)
    ops = {op.kind: op for op in g.ops.values()}
    assert ops["matmul"].split_dims == {0: "batch", 1: "N"}
    assert 1 not in ops["softmax"].split_dims and "normalises" in ops["softmax"].refusals[1]
    assert ops["reshape"].is_view and not ops["reshape"].split_dims


def test_op_signatures_name_the_computation_and_are_made_once():
    """Two imports of one model give each op the same signature, another batch another one; an
    op keeps its signature once made (planning asks for it tens of thousands of times)."""
    a, b, c = (OpGraph(mlp_model(batch=n).mod) for n in (4, 4, 8))
    sigs = [[op_signature(g.ops[i]) for i in g.topo_order()] for g in (a, b, c)]
    assert sigs[0] == sigs[1] and sigs[0][0] != sigs[2][0]
    assert sigs[0][0].startswith("matmul-")
    assert a.ops[a.topo_order()[0]].__dict__["signature"] == sigs[0][0]


def test_op_ids_are_stable_across_imports():
    a = OpGraph(frontend.load("gru", seq_len=3, batch=2).mod)
    b = OpGraph(frontend.load("gru", seq_len=3, batch=2, seed=7).mod)
    assert list(a.ops) == list(b.ops)
    assert len(a.ops) > 10


def test_conv_dims_named():
    g = OpGraph(frontend.load("resnet18", image_size=32).mod)
    conv = next(op for op in g.ops.values() if op.kind == "conv2d")
    assert conv.split_dims == {1: "channel", 2: "H", 3: "W"}  # batch 1: axis 0 has size 1
    assert "size 1" in conv.refusals[0]


def test_an_op_reading_through_a_tuple_of_two_ops_has_an_edge_from_the_one_it_reads():
    """exp and tanh of x bound as one tuple (glue: no kernel); a sigmoid reads item 0, exp's. The
    graph looks through the glue to both ops the tuple holds, so the sigmoid's edge from exp is
    there (the walk that stopped at the first op it met found tanh only). Built as a Relax module,
    not imported: the frontend folds the tuple away."""
    from tvm import relax

    x = relax.Var("x", relax.TensorType((4, 6), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], attrs={"num_input": 1}):
        with bb.dataflow():
            pair = bb.emit(relax.Tuple([bb.emit(relax.op.exp(x)), bb.emit(relax.op.tanh(x))]))
            s = bb.emit(relax.op.sigmoid(bb.emit(relax.TupleGetItem(pair, 0))))
            out = bb.emit_output(relax.Tuple([s, relax.TupleGetItem(pair, 1)]))
        bb.emit_func_output(out)
    g = OpGraph(bb.get())
    [e] = [i for i, op in g.ops.items() if op.kind == "exp"]
    [s] = [i for i, op in g.ops.items() if op.kind == "sigmoid"]
    assert e in set(g.graph.predecessors(s))


def test_an_equal_module_is_not_fused_again_and_another_one_is(monkeypatch):
    """OpGraph runs TVM's fusion once per module structure (:data:`tvm_partition.ir.graph._FUSED`)."""
    from tvm_partition.ir import graph as graph_module
    from tvm_partition.ir.relax_utils import ByStructure

    fused, fuse = [], OpGraph._fuse_afresh
    monkeypatch.setattr(OpGraph, "_fuse_afresh", lambda self: fused.append(1) or fuse(self))
    monkeypatch.setattr(graph_module, "_FUSED", ByStructure(kept=32))
    first = OpGraph(frontend.load("lstm", seq_len=2, batch=2).mod)
    again = OpGraph(frontend.load("lstm", seq_len=2, batch=2).mod)  # another object, the same module
    assert len(fused) == 1 and list(again.ops) == list(first.ops)
    assert [op.members for op in again.ops.values()] == [op.members for op in first.ops.values()]
    longer = OpGraph(frontend.load("lstm", seq_len=3, batch=2).mod)
    assert len(fused) == 2 and len(longer.ops) > len(first.ops)


def test_answers_by_structure_match_a_module_built_again_and_drop_the_oldest_past_kept():
    from tvm_partition.ir.relax_utils import ByStructure

    computed = []
    cache = ByStructure(kept=1)

    def get(seq_len, extra=()):
        return cache.get(frontend.load("lstm", seq_len=seq_len, batch=2).mod, extra,
                         lambda: computed.append(seq_len) or len(computed))

    assert get(2) == 1 and get(2) == 1 and computed == [2]  # another object, the same structure
    assert get(2, ("other",)) == 2  # what else the answer depends on tells answers apart
    assert get(3) == 3 and get(2) == 4 and computed == [2, 2, 3, 2]  # one key kept: the oldest went
