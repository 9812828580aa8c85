import sys
from unittest import mock
sys.path.insert(0, "/work/main")
from tvm_partition.frontend import inference
from tvm_partition.cli import main as cli
value = int(sys.argv[3])
with mock.patch.object(inference, "MAX_UNGROUPED_GROUPS", value):
    sys.exit(cli(["compile", sys.argv[1], "--devices", "cpu,cpu", "--strategy", "cpu", "--out", sys.argv[2]]))
