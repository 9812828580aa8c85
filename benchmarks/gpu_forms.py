"""Which form of the GPU's missing time fits a GPU machine's measured rows: an analysis, not a model.

    python benchmarks/gpu_proof/kit.py pack                      # the kit's artifacts (.gpu-kit/stage/export)
    python benchmarks/gpu_forms.py RESULTS.json [--kit .gpu-kit]

Each ``bench`` row of ``RESULTS.json`` (a GPU machine's ``benchmarks/results/<machine>/bench``)
whose artifact the packed kit holds (model rows and ``--split-ops`` op rows, ``cpu``, ``gpu``,
``equal`` and ``fixed``) is simulated again with today's cost model of the machine it names, then
with a time once a run uses the GPU (``use``) and a time on the GPU's stream after each kernel
(``gap``: :meth:`tvm_partition.cost_models.CostModel.use_time`, ``gap_time``), and, for
comparison, with that time on the host at each launch instead (``--form host``). Printed: each
row's error as the model prices it, and the pair of each form that puts the rows' median error
lowest, with each row's error under it. Why: the H200 host's ``gpu`` rows ran 10-21% over their
predictions; which form fits says what the profile's GPU contexts
(:func:`tvm_partition.profiling.context.gpu_context`) are to measure. The pair is fitted to the
rows themselves: it says the form, not the figures a prediction may use (those are the contexts').
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))

STRATEGIES = ("cpu", "gpu", "equal", "fixed")
USES = [u * 2.0 for u in range(16)]  # us once a run uses the GPU
GAPS = [g * 0.25 for g in range(13)]  # us a GPU kernel (stream) or launch (host)


class Extra:
    """``inner`` with ``use`` once a run uses a GPU and ``gap`` after each GPU kernel on its stream
    (``form`` ``stream``) or at each GPU launch on the host (``host``)."""

    def __init__(self, inner, use: float, gap: float, form: str):
        self.inner, self.use, self.gap, self.form = inner, use, gap, form

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def use_time(self, device: str) -> float:
        return self.inner.use_time(device) + (self.use if device.startswith("gpu") else 0.0)

    def gap_time(self, device: str) -> float:
        extra = self.gap if self.form == "stream" and device.startswith("gpu") else 0.0
        return self.inner.gap_time(device) + extra

    def launch_time(self, device: str) -> float:
        extra = self.gap if self.form == "host" and device.startswith("gpu") else 0.0
        return self.inner.launch_time(device) + extra


def rows_of(results: str, kit: str) -> list[tuple]:
    """``(label, graph, plan, cost model, measured us)`` of each row the kit has an artifact of."""
    import predict_again as again

    from tvm_partition.bench import ops as bench_ops
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import DeviceSpec
    from tvm_partition.plan import Plan
    from tvm_partition.runtime.artifact import read_manifest

    with open(results, encoding="utf-8") as f:
        measured = {again._key(r["model"], r["config"], r["strategy"]): r["measured_median_us"]
                    for r in json.load(f) if r.get("measured_median_us")}
    models, costs, rows = {}, {}, []
    for art in sorted(glob.glob(os.path.join(kit, "stage", "export", "*", "artifacts", "*"))):
        m = read_manifest(art)
        key = again._key(m["model"], m["config"], m["strategy"])
        if m["strategy"] not in STRATEGIES or key not in measured or not os.path.exists(os.path.join(art, "plan.json")):
            continue
        where = json.dumps(m["devices"], sort_keys=True)
        if where not in costs:
            costs[where] = default_cost_model([DeviceSpec.from_json(d) for d in m["devices"]])[0]
        cost = costs[where]
        name, _, kernel = m["model"].partition("/")
        if kernel:  # a --split-ops row: the op of its model whose kernel it is, priced as that op
            _, parent = again.load_model(models, name, m["config"])
            op_id = next((i for i, op in parent.ops.items() if i.endswith(kernel)), None)
            if op_id is None:
                continue
            _, graph, _, parent = again.load_model(models, name, m["config"], op_id)
            cost = bench_ops.as_parent(cost, parent, op_id, graph)
        else:
            graph = again.load_model(models, name, m["config"])[1]
        seq = f" seq_len={m['config']['seq_len']}" if "seq_len" in m["config"] else ""
        label = f"{m['model']}{seq} {m['strategy']}"
        rows.append((label, graph, Plan.load(os.path.join(art, "plan.json")), cost.for_graph(graph), measured[key]))
    return rows


def errors(rows: list[tuple], use: float, gap: float, form: str) -> list[float]:
    from tvm_partition.planners.simulate import simulate

    return [simulate(g, plan, Extra(cost, use, gap, form)).latency_us / us - 1 for _, g, plan, cost, us in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a GPU machine's bench results.json")
    ap.add_argument("--kit", default=os.path.join(REPO, ".gpu-kit"), help="the packed kit (default .gpu-kit)")
    args = ap.parse_args(argv)
    rows = rows_of(args.results, args.kit)
    if not rows:
        print(f"error: no row of {args.results} has an artifact in {args.kit}/stage/export", file=sys.stderr)
        return 2
    base = errors(rows, 0.0, 0.0, "stream")
    fits = {}
    for form in ("stream", "host"):
        scored = [(statistics.median(abs(e) for e in errs), use, gap, errs)
                  for use in USES for gap in GAPS for errs in [errors(rows, use, gap, form)]]
        fits[form] = min(scored, key=lambda s: s[0])
    print(f"{'row':52s} {'priced':>8s} " + " ".join(f"{form:>8s}" for form in fits))
    for i, (label, *_) in enumerate(rows):
        print(f"{label[:52]:52s} {base[i]:+8.1%} " + " ".join(f"{fit[3][i]:+8.1%}" for fit in fits.values()))
    for form, (med, use, gap, errs) in fits.items():
        within = sum(abs(e) <= 0.10 for e in errs)
        print(f"{form}: use {use:.1f} us a run, gap {gap:.2f} us a kernel: median |error| {med:.1%}, "
              f"{within} of {len(rows)} rows within 10% (priced: {sum(abs(e) <= 0.10 for e in base)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
