"""The one base class of the errors a user can act on.

Every error the package raises for bad input or an unusable environment (a model it cannot read,
a plan that does not fit the graph, a corrupt tuning database, a server that went away...)
derives from :class:`TvmPartitionError`; every command prints it as one line, ``error: ...``,
and exits with status 2 (:mod:`tvm_partition.cli`). Anything else that escapes is a bug and keeps
its traceback. Each subclass also keeps the builtin base it had (``ValueError``,
``RuntimeError``...), so callers that caught those still do. Imports nothing: the runtime half
uses it too.
"""


class TvmPartitionError(Exception):
    """Bad input, or an environment the command cannot work in; the message says which and what to do."""
