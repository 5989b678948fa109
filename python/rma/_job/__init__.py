"""The machinery of a job, shared by rmarun, the pytest plugin and rma.notebook.

frames.py          length-prefixed frames over a socket (JSON for the store, pickles for workers)
spawn.py           starting rank processes in their own process groups, stopping them, exit statuses
workers.py         worker ranks driven over a control socket (the pytest plugin's, the notebook's)
lifeline.py        a pipe whose end tells workers that the process that started them is gone
store_protocol.py  what the rendezvous store and its clients say, and store addresses
store_server.py    the rendezvous store one job's ranks meet at
store_gate.py      the store's door: accepting connections and awaiting their hello, one thread
store_client.py    a rank's connection to the store
pmix_client.py     a rank's connection to a PMIx launcher's server (mpirun, srun), in the store's stead
join.py            joining and leaving the job on a rank: rma.init() and rma.finalize()
info.py            rma.info(): what a job here would use (libfabric, provider, modes, shared memory, PMIx)
shm_files.py       removing the files dead ranks leave in /dev/shm
supervisor.py      a rank's supervisor on another host than rmarun's: runs it, then cleans /dev/shm after it

Nothing here is imported by ``import rma``: rmarun, the store and the pytest plugin's
controller start without loading the compiled core (see _native.py); only join.py and info.py load it.
"""
