"""Each transpose kernel of MODEL the tiled schedule takes, against the element-wise template
(`_transposition` patched to None), alone in alternating rounds, cold and warm; err: the tiled
kernel against TVM's default schedule."""
import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..")); sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests"))
import numpy as np
from conv_kernels import model_graph, kernels, cold_and_warm, cold_and_warm_line, patched
from test_transfer import run
from tvm_partition.build import templates
from tvm_partition.build.tuning import tuning_target
from tvm_partition.devices import parse_devices, codegen_target
import tvm
target = tuning_target(parse_devices("cpu", cpu_mcpu=os.environ.get("TARGET_CPU"))[0])
for model in os.environ["MODEL"].split(","):
    label, graph = model_graph(model)
    for op, kmod, blocks in kernels(graph, "transpose"):
        g = templates.schedule(kmod, target)
        with patched(_transposition=lambda *a: None):
            f = templates.schedule(kmod, target)
        if f is None or g is None or f.script() == g.script():
            continue
        t = tvm.target.Target(codegen_target(dict(tvm.target.Target(target).export())))
        err = float(np.abs(run(g, target=t) - run(kmod["main"])).max())
        shape = [int(x) for x in kmod["main"].params[0].shape]
        print(f"{label} {op.fused_name} {shape} err={err}", cold_and_warm_line(cold_and_warm(f, g, target, int(os.environ.get("ROUNDS", 3)))), flush=True)
