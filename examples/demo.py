"""A first look at an rma job: run with `rmarun -n 4 examples/demo.py`.

Every rank joins the job, the ranks pass a token around a ring, split into two halves,
and time a barrier.
"""

import time

import rma

comm = rma.init()
rank, size = comm.rank, comm.size

# Everyone learns everyone's host and process id.
peers = comm.allgather({"rank": rank, "pid": __import__("os").getpid()})
if rank == 0:
    print(f"a job of {size} ranks: pids {[p['pid'] for p in peers]}")

# A token travels once around the ring; each rank adds its rank number.
if rank == 0:
    comm.send([0], dest=(rank + 1) % size)
    token = comm.recv(source=(rank - 1) % size)
    print(f"the token came back: {token}")
else:
    token = comm.recv(source=rank - 1)
    comm.send(token + [rank], dest=(rank + 1) % size)

# Two halves, each with its own communicator.
half = comm.split(color=rank % 2, key=rank)
members = half.allgather(rank)
print(f"rank {rank} is rank {half.rank} of the {'even' if rank % 2 == 0 else 'odd'} half {members}")

# How long does a barrier take?
comm.barrier()
rounds = 200
start = time.perf_counter()
for _ in range(rounds):
    comm.barrier()
elapsed = (time.perf_counter() - start) / rounds
slowest = max(comm.allgather(elapsed))
if rank == 0:
    print(f"barrier across {size} ranks: {slowest * 1e6:.1f} us")
