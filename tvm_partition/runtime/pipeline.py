"""Run a multi-server pipeline (written by ``tvm-partition stages``) on a Ray cluster.

``tvm-partition pipeline DIR --ray HOST:PORT [--servers A,B,...]``: one actor per edge server
(:mod:`tvm_partition.runtime.cluster`), stage outputs handed on through Ray's object store.
``split``: every server runs the part of its slice of the batch at once, outputs concatenated;
``stages``: stage i on its server (a server may hold several). ``--repeat N`` prints
``median_us= p90_us=`` of N requests one at a time; ``--stream N --window W`` sends N requests
with up to W in flight (stages pipeline across servers) and prints the throughput and the
latency p50/p90 beside the single-request latency. Everything is bounded (``--timeout``: the
connect and each request); a server that dies mid-request is retried or replaced
(:class:`~tvm_partition.runtime.cluster.RayPipeline`).

Trust: anyone who can reach the Ray cluster's ports can run code on its nodes; keep it on
loopback or a private network (README).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .. import flags
from .cluster import RayPipeline, connect, read_spec
from .runner import latency_line, read_inputs, write_outputs


def parser():
    ap = flags.parser("pipeline", __doc__)
    ap.add_argument("pipeline", help="directory written by `tvm-partition stages --out`")
    ap.add_argument("--ray", metavar="HOST:PORT", required=True, help="the Ray cluster's head (GCS) address")
    ap.add_argument("--servers", metavar="A,B,...",
                    help="the servers (Ray nodes with resource server:NAME), one per pipeline server in order "
                         "(default: the live ones by name)")
    ap.add_argument("--timeout", type=flags.positive(), default=120.0, metavar="S",
                    help="seconds for the connect and for each request (default 120)")
    flags.add_io(ap)
    flags.add_repeat(ap, "time N requests one at a time: median_us / p90_us")
    ap.add_argument("--stream", type=flags.at_least(1), metavar="N", help="send N requests, --window at a time")
    ap.add_argument("--window", type=flags.at_least(1), default=4, metavar="W",
                    help="requests in flight in --stream mode (default 4)")
    return ap


def stream_lines(pipe: RayPipeline, inputs: dict, count: int, window: int, single_ms: float) -> list[str]:
    answers, latency, wall = pipe.stream([inputs] * count, window)
    p50, p90 = np.percentile(latency, [50, 90])
    return [f"stream requests={count} window={window} throughput_per_s={count / wall:.2f} "
            f"p50_ms={p50:.2f} p90_ms={p90:.2f} single_ms={single_ms:.2f}"]


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        read_spec(args.pipeline)  # a wrong folder says so before any wait for the cluster
        connect(args.ray, timeout=args.timeout)
        servers = [s.strip() for s in args.servers.split(",") if s.strip()] if args.servers else None
        pipe = RayPipeline(args.pipeline, servers, timeout=args.timeout)
        inputs = read_inputs(args.input) if args.input else pipe.example_inputs(args.seed)
        t0 = time.perf_counter()
        outs = pipe.run(inputs)
        single_ms = (time.perf_counter() - t0) * 1e3
        write_outputs(args.output, outs)
        print("servers=" + ",".join(pipe.servers))
        if args.repeat > 0:
            total = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                pipe.run(inputs)
                total.append((time.perf_counter() - t0) * 1e6)
            print(latency_line(total))
            single_ms = float(np.median(total)) / 1e3
        if args.stream:
            for line in stream_lines(pipe, inputs, args.stream, args.window, single_ms):
                print(line)
    except ValueError as e:  # an unreadable --input file (numpy's), a shape it does not fit
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
