"""One rank of a pool of test workers of the rma pytest plugin (see rma.pytest_plugin).

The plugin starts N of these with ``python -m rma.pytest_plugin.worker`` (MODULE) and the
usual rank environment (RMA_RANK, RMA_SIZE, RMA_STORE, RMA_SECRET, RMA_PROVIDER) plus:

* ``RMA_TEST_CONTROL_FD``: this worker's end of a socketpair to the plugin.  Frames
  both ways are a 4-byte big-endian length and a pickle of a dict (rma._job.frames).
* ``RMA_TEST_LIFELINE_FD``: the read end of a pipe whose write end only the plugin
  holds (rma._job.lifeline).  End of file means the plugin's process is gone: the worker
  then kills its own process group, so that no worker outlives a pytest killed by SIGKILL.
* ``RMA_TEST_FILES``: a path prefix for the worker's files: ``.stacks`` (faulthandler
  dumps on SIGUSR1), ``.out`` / ``.err`` (file descriptors 1 and 2 during a test).

The worker joins the job once (``rma.init()``), says ``ready``, and then serves
``run`` commands until ``exit`` (then ``rma.finalize()``) or the end of the socket.

__main__.py  joining, serving commands, leaving with the plugin
run.py       running one test as pytest would in its own process
modules.py   importing test modules (with pytest's assertion rewriting)
capture.py   capturing a test's output

This module itself is imported by the plugin too: it holds only the names both sides use.
"""

#: What the plugin runs with ``python -m``.
MODULE = __name__
#: The variables the plugin passes (see above).
CONTROL_FD = "RMA_TEST_CONTROL_FD"
LIFELINE_FD = "RMA_TEST_LIFELINE_FD"
FILES = "RMA_TEST_FILES"
