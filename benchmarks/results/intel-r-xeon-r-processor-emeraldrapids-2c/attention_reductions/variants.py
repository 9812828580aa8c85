"""Batched computed-operand matmuls (q@k^T, softmax@v) under MIN_BATCHED_REDUCTION: record vs template variants."""
import dataclasses, os, sys
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path.insert(0, ROOT); sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from conv_kernels import alternated, kernels, model_graph
from tvm_partition.build.tuning import open_schedules, tuning_target
from tvm_partition.build.templates import matmul
from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads

use_cpu_threads()
target = tuning_target(parse_devices("cpu", cpu_mcpu=os.environ.get("TARGET_CPU"))[0])
rounds = int(os.environ.get("ROUNDS", 3))
variants = [tuple(int(x) for x in v.split("x")) for v in os.environ.get("VARIANTS", "4x2,7x2,8x2,4x1,7x1,16x1,8x1").split(",")]
for spec in sys.argv[1:]:
    _, graph = model_graph(spec)
    for op, kmod, blocks in kernels(graph, "matmul"):
        plan = matmul._matmul_plan(kmod, target, fallback=True)
        if plan is None or plan.packed:
            continue
        takes = matmul._matmul_plan(kmod, target) is not None
        if os.environ.get("ONLY_TAKEN") and not takes:
            continue
        saved, matmul.MIN_BATCHED_REDUCTION = matmul.MIN_BATCHED_REDUCTION, 1
        built = matmul._matmul_plan(kmod, target)
        matmul.MIN_BATCHED_REDUCTION = saved
        if built is not None:
            plan = built
        sch = open_schedules(database_dir(None)); sch.templates = False
        rec, label = sch.schedule(kmod, target)
        funcs, names = [rec or kmod["main"]], ["record" if rec else "default"]
        for rows, blk in variants:
            out = [b for b in blocks if b.name.startswith("matmul")][0].extents[:-1]
            r_ext, c_ext = out[plan.row_axis], out[-1]
            if r_ext % rows or c_ext % (blk * plan.lanes):
                continue
            p = dataclasses.replace(plan, rows=rows, blocks=blk)
            try:
                funcs.append(matmul._schedule_matmul(kmod, target, p)); names.append(f"{rows}x{blk}")
            except Exception as e:
                print("fail", rows, blk, e)
        times, _ = alternated(funcs, target, rounds)
        ext = "x".join(map(str, max(blocks, key=lambda b: len(b.extents)).extents))
        print(f"{os.path.basename(spec)[:20]:20} {op.fused_name[:18]:18} {ext:22} plan={plan.rows}x{plan.blocks} takes={int(takes)} " +
              " ".join(f"{n}={t:.1f}" for n, t in zip(names, times)), label.split(' (')[0][:60], flush=True)
