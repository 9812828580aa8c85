"""``python -m tvm_partition COMMAND``: the same as the ``tvm-partition`` console script."""

import sys

from .cli import main

sys.exit(main())
