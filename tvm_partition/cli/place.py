"""Place a task graph over several devices.

PROBLEM.json is networkx node-link JSON with devices, memory caps and links in ``graph`` (see
:mod:`tvm_partition.planners.problem`, or ``tvm-partition compile --export-problem``).
The result (``strategy, makespan_us, lower_bound_us, gap, solve_s, placement, schedule``) is
checked with the independent schedule checker before it is written; without ``--out`` a summary
is printed.
"""

from __future__ import annotations

import json
import sys

from .. import flags
from ..processes import running_as_command, seconds_since_start


def parser():
    ap = flags.parser("place", "Place the nodes of a task graph on devices and schedule them "
                               "(minimum makespan under memory caps and link bandwidths).")
    ap.add_argument("problem", help="problem file: networkx node-link JSON (format: README, 'Use')")
    ap.add_argument("--strategy", default="milp", choices=flags.PLACEMENT_STRATEGIES, help="planner (default: milp)")
    flags.add_time_limit(ap, "seconds the whole command may take with milp / dominators, from its start to the "
                             "result (default 10)")
    ap.add_argument("--coarsen-above", type=flags.at_least(1), default=400, metavar="N",
                    help="milp solves graphs up to this many nodes in one model (default 400)")
    ap.add_argument("--large", default="both", choices=["both", "decompose", "coarsen"],
                    help="milp on larger graphs: decompose at dominators, coarsen first (QuickP), or both "
                         "with half the time each (default)")
    ap.add_argument("--colocate", action="store_true", help="milp: add QuickP co-location groups (Eq. 7)")
    ap.add_argument("--out", metavar="FILE", help="write the result JSON here")
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)  # before OR-Tools is imported: --help answers at once

    from ..planners.placement import solve
    from ..planners.problem import Problem, ProblemError
    try:
        problem = Problem.load(args.problem)
        res = solve(problem, args.strategy, args.time_limit, args.coarsen_above, args.colocate, args.large,
                    spent=seconds_since_start() if running_as_command() else 0.0)
    except ProblemError as e:
        print(f"error: {args.problem}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # solve() checked the schedule and found it infeasible: a bug, say so plainly
        print(str(e), file=sys.stderr)
        return 1
    gap = "-" if res.gap is None else f"{100 * res.gap:.2f}%"
    print(f"{res.strategy}: makespan_us={res.makespan_us:.3f} lower_bound_us={res.lower_bound_us:.3f} gap={gap} "
          f"solve_s={res.solve_s:.2f} nodes={problem.graph.number_of_nodes()} devices={len(problem.devices)}")
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(res.to_json(), f, indent=1)
                f.write("\n")
        except OSError as e:
            print(f"error: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
