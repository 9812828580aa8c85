"""Write a hand-made plan for the LSTM and compile it with the CLI.

    python examples/custom_plan.py [--seq-len 4] [--out build/custom]

Every dense (matmul) kernel is split on its batch dimension, 70 % of the rows on the GPU and
30 % on the CPU; every other kernel runs whole on the GPU. The plan is saved as plan.json and
compiled with ``tvm-partition compile lstm --plan plan.json --check``.
"""

import argparse
import os
import subprocess
import sys

from tvm_partition import frontend
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.plan import OnDevice, Plan, Split


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq-len", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--out", default="build/custom")
    args = ap.parse_args()

    model = frontend.load("lstm", seq_len=args.seq_len, batch=args.batch)
    graph = OpGraph(model.mod)
    ops = {}
    for op_id, op in graph.ops.items():
        if op.is_view:
            continue  # reshapes follow their producer
        if op.kind == "matmul" and 0 in op.split_dims:
            ops[op_id] = Split(0, (0.7, 0.3), ("gpu", "cpu"))
        else:
            ops[op_id] = OnDevice("gpu")
    plan = Plan(parse_devices("cpu,gpu"), ops, strategy="manual")
    plan.validate(graph)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "plan.json")
    plan.save(path)
    print(f"wrote {path}: {sum(isinstance(d, Split) for d in ops.values())} split ops, {len(ops)} decisions")
    cmd = [sys.executable, "-m", "tvm_partition", "compile", "lstm", "--seq-len", str(args.seq_len),
           "--batch", str(args.batch), "--plan", path, "--out", args.out, "--check"]
    print("$", " ".join(cmd[1:]))
    sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main()
