"""The model as the partitioner sees it: Relax helpers (:mod:`.relax_utils`), the split rules of
every operator kind (:mod:`.split_rules`), the graph of fused kernels with each one's legal split
axes (:mod:`.graph`) and the data-movement walk both ApplyPlan and the simulator follow
(:mod:`.emission`)."""
