"""Gantt chart of a simulated plan (:class:`tvm_partition.planners.simulate.Simulation`) as a PNG.

One row per device (the VM thread's CPU devices, each GPU stream) and per link; kernels are
coloured by kind (whole op, split part, slice, concat, copy), so idle gaps and copies show.
"""

from __future__ import annotations

COLORS = {"op": "#4c72b0", "part": "#55a868", "slice": "#c44e52", "concat": "#8172b2", "copy": "#dd8452"}


def draw(sim, path: str, title: str = "") -> str:
    """Write the chart of ``sim`` to ``path`` and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = sorted({t.resource for t in sim.tasks}, key=lambda r: ("->" in r, r))
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.6 * len(rows)))
    scale, unit = (1e3, "ms") if sim.latency_us >= 1e4 else (1.0, "us")
    for y, res in enumerate(rows):
        bars = [(t.start_us / scale, (t.end_us - t.start_us) / scale, COLORS[t.kind])
                for t in sim.tasks if t.resource == res and t.end_us > t.start_us]
        if bars:
            ax.broken_barh([b[:2] for b in bars], (y - 0.4, 0.8), facecolors=[b[2] for b in bars], linewidth=0)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.set_xlim(0, max(sim.latency_us / scale, 1e-9))
    ax.set_title(title or f"predicted latency {sim.latency_us / scale:.3g} {unit} "
                          f"(sum of op times AT(G,R) {sim.sum_us / scale:.3g} {unit})")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()], loc="upper right", fontsize=8, ncol=5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
