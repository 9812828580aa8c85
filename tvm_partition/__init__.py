"""tvm_partition: split one inference over CPU and GPU with TVM."""
