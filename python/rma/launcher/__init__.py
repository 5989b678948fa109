"""Start the ranks of an rma job on this machine or on other hosts: the ``rmarun`` command.

::

    rmarun -n N [--provider P] [--tag-output] [--timeout S] [--stdin all|none|RANK] [--trace FILE]
           [--store-host H] [--store-port P] [--host A:SLOTS,B:SLOTS | --hostfile FILE] [--rsh COMMAND]
           (script.py [args] | -m module [args] | -c code [args] | program [args...])
    rmarun --serve-store -n N [--store-host H] [--store-port P]
    rmarun --info [--json]

rmarun runs the job's rendezvous store (see rma._job.store_server), starts N ranks with
RMA_RANK/RMA_SIZE/RMA_STORE/RMA_SECRET in their environment, gives rank 0 its
standard input, relays their output, and makes sure that no process of the job outlives it: when one rank
fails, the others are stopped, and rmarun exits with the failed rank's status.

cli.py          the command line, and main(): the ``rmarun`` console script and ``python -m rma``
job.py          running the ranks of a job until they exit, and cleaning up after them
hosts.py        --host, --hostfile, --rsh: placing ranks on hosts and starting them there
output.py       relaying the ranks' output, and rmarun's own messages
stdin_relay.py  --stdin: rmarun's standard input for the ranks that read it
signals.py      signals as events while a job runs
serve_store.py  --serve-store: only a store, for ranks started by other means
info.py         --info: rma.info() printed, or as JSON
tracing.py      --trace: clearing old trace parts before the job, merging the ranks' after it
"""

from .cli import main

__all__ = ["main"]
