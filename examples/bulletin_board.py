"""A bulletin board spread over all ranks (spec/000: the passive-target "bulletin board").

Run: `rmarun -n 4 examples/bulletin_board.py [--rounds 60] [--slots 8]`

Every rank owns `slots` records of the board. At random times each rank either posts a record
into a random slot of a random rank, under an exclusive lock on that rank, or reads another
rank's whole part of the board under a shared lock. Nobody else takes part: the owner of a slot
may be computing or sleeping. At the end every rank checks the whole board:
- no record is torn: each record's payload is the one its writer computed for it;
- no post is lost: each slot's version counts every post made to it (the version is read and
  bumped under the exclusive lock, so two posts racing for one slot would show as a lost update).
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

import rma

PAYLOAD = 12
RECORD = np.dtype(
    [
        ("version", np.int32),
        ("writer", np.int32),
        ("seq", np.int32),
        ("payload", np.int32, PAYLOAD),
        ("check", np.int32),
    ]
)  # 64 bytes


def payload_of(writer: int, seq: int) -> np.ndarray:
    """The payload a writer puts in its seq-th post: every reader can recompute it."""
    return (np.arange(PAYLOAD, dtype=np.int64) * 7919 + writer * 104729 + seq * 1299709).astype(np.int32)


def checksum(writer: int, seq: int, payload: np.ndarray) -> int:
    return int((writer * 31 + seq * 17 + int(payload.astype(np.int64).sum())) % (2**31 - 1))


def torn(record: np.void) -> bool:
    """Return True if a record mixes two posts (or was never written consistently)."""
    if record["version"] == 0:
        return record["writer"] != 0 or record["seq"] != 0 or record["payload"].any()
    expected = payload_of(int(record["writer"]), int(record["seq"]))
    return not np.array_equal(record["payload"], expected) or record["check"] != checksum(
        int(record["writer"]), int(record["seq"]), expected
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=60, help="actions per rank")
    parser.add_argument("--slots", type=int, default=8, help="records each rank owns")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    comm = rma.init()
    rng = random.Random(args.seed * 1000 + comm.rank)
    board = rma.Window.allocate(comm, args.slots, RECORD)
    posts = np.zeros((comm.size, args.slots), np.int64)  # posts this rank made, per slot
    reads = torn_seen = 0
    began = time.perf_counter()
    comm.barrier()

    seq = 0
    for _ in range(args.rounds):
        time.sleep(rng.random() * 0.002)  # random times
        owner, slot = rng.randrange(comm.size), rng.randrange(args.slots)
        if rng.random() < 0.5:
            seq += 1
            with board.lock(owner, rma.LOCK_EXCLUSIVE):
                current = np.zeros(1, RECORD)
                board.get(current, owner, slot)
                board.flush(owner)
                record = np.zeros(1, RECORD)
                record["version"] = current["version"] + 1
                record["writer"], record["seq"] = comm.rank, seq
                record["payload"] = payload_of(comm.rank, seq)
                record["check"] = checksum(comm.rank, seq, record["payload"][0])
                board.put(record, owner, slot)
            posts[owner, slot] += 1
        else:
            part = np.zeros(board.target_shape(owner), RECORD)
            with board.lock(owner, rma.LOCK_SHARED):
                board.get(part, owner)
            reads += 1
            torn_seen += sum(torn(r) for r in part)

    comm.barrier()
    # Everyone checks the whole board, with everyone's post counts.
    total_posts = sum(comm.allgather(posts))
    lost = torn_final = 0
    for owner in range(comm.size):
        part = np.zeros(board.target_shape(owner), RECORD)
        with board.lock(owner, rma.LOCK_SHARED):
            board.get(part, owner)
        torn_final += sum(torn(r) for r in part)
        lost += int(np.abs(part["version"] - total_posts[owner]).sum())
    elapsed = time.perf_counter() - began
    results = comm.gather((int(posts.sum()), reads, torn_seen, torn_final, lost), root=0)
    board.free()
    if comm.rank == 0:
        posted = sum(r[0] for r in results)
        read = sum(r[1] for r in results)
        torn_total = sum(r[2] + r[3] for r in results)
        lost_total = results[0][4]
        print(
            f"bulletin board: {comm.size} ranks x {args.slots} slots, {posted} posts and {read} reads "
            f"in {elapsed:.2f} s; torn records: {torn_total}; lost posts: {lost_total}"
        )
        if torn_total or lost_total:
            raise SystemExit("bulletin board: FAILED")
        print("bulletin board: OK")


if __name__ == "__main__":
    main()
