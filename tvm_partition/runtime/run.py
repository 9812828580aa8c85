"""Run or time a compiled artifact on the devices it was built for, here or on an RPC server.

Inputs come from an npz keyed by input name (seeded random inputs when omitted); outputs are
written as an npz (``output0``, ``output1``, ...). With ``--repeat N`` it prints
``median_us=<v> p90_us=<v>`` over N timed runs after warm-up. Only the TVM runtime is used.
With ``--rpc`` / ``--tracker`` the artifact is checked here, its library uploaded to a plain
``python -m tvm.exec.rpc_server`` and run there; ``median_us`` is then the end-to-end time seen
here, and a second line gives ``device_median_us`` (TVM's time evaluator on the server) and
``rpc_overhead_us`` (the difference).
"""

from __future__ import annotations

import sys

import numpy as np

from .. import flags
from .remote import Endpoint, RemoteRunner
from .runner import Runner, kernel_table, latency_line, read_inputs, write_outputs


def _runner(args) -> Runner:
    if not (args.rpc or args.tracker or args.key):
        return Runner(args.artifact)
    return RemoteRunner(args.artifact, Endpoint(args.rpc, args.tracker, args.key))


def parser():
    ap = flags.parser("run", __doc__)
    ap.add_argument("artifact", help="directory written by `tvm-partition compile --out`")
    flags.add_io(ap)
    flags.add_repeat(ap, "time N runs and print median_us / p90_us")
    ap.add_argument("--kernels", action="store_true", help="time every kernel, copy and VM builtin a run calls "
                                                           "(each at its median over --repeat runs, default 10), "
                                                           "heaviest first")
    flags.add_rpc(ap)
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.kernels and (args.rpc or args.tracker or args.key):
        raise flags.UsageError("--kernels times the VM's calls on this machine, not over RPC")
    try:
        runner = _runner(args)
        if getattr(runner, "stand_in", False):
            print("note: no GPU here, and the artifact launches no kernel on its GPU (its plan keeps every op on "
                  "the CPU): it runs with the CPU in the GPU's place", file=sys.stderr)
        built, threads = runner.manifest.get("num_threads"), getattr(runner, "threads", None)  # local runs only
        if built and threads and threads < built:
            print(f"note: running with {runner.threads} CPU thread(s), fewer than the {built} the artifact was "
                  "built and priced for (this process may use no more CPUs: affinity, cgroup quota or "
                  "TVM_NUM_THREADS)", file=sys.stderr)
        inputs = read_inputs(args.input) if args.input else runner.example_inputs(args.seed)
        outs = runner.run(inputs)
        write_outputs(args.output, outs)
        times = None
        if args.repeat > 0:
            times = runner.time(inputs, args.repeat)
            print(latency_line(times))
            if hasattr(runner, "device_times"):
                device = float(np.median(runner.device_times(inputs, args.repeat)))
                print(f"device_median_us={device:.1f} rpc_overhead_us={np.median(times) - device:.1f}")
        if args.kernels:
            if times is None:
                times = runner.time(inputs, 10)
            print(kernel_table(*runner.kernel_times(inputs, args.repeat or 10), float(np.median(times))), end="")
    except ValueError as e:  # an unreadable --input file (numpy's), a shape it does not fit
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
