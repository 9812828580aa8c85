"""``python -m tvm_partition.compile``: the compile command (:mod:`tvm_partition.cli.compile`),
still runnable where it was before the commands moved into ``cli/``."""

import sys

from .cli.compile import main

if __name__ == "__main__":
    sys.exit(main())
