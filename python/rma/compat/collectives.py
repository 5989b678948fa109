"""Collective calls of the mpi4py facade's communicators: the object collectives (bcast,
gather, reduce, scan...), the buffer collectives with mpi4py's buffer specifications
(vector_specs.py), and their nonblocking forms. MPI.Comm inherits them (comm.py).

Each buffer collective is made in two steps: the call parses and checks its buffers (errors
at the call, naming it and the rank) and returns `run`, the communication, over rma.Comm's
byte collectives (bcast, gather, allgather, scatter, alltoall) and its compiled array
reductions (Allreduce, Reduce) where the op and element type allow (reductions.fast_op);
otherwise every rank's contribution is gathered and folded in rank order in NumPy. A blocking
call runs `run` at once, after the communicator's started nonblocking collectives; an I-call
queues it in the communicator's worker (collective_worker.py) and returns an MPI.Request.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import rma as _rma

from . import collective_worker
from .buffers import plain_array
from .errors import ERR_OP, ERR_ROOT, ERR_TRUNCATE, TRANSLATED, ArgumentError, as_mpi, translated
from .errors import Exception as MPIException
from .memory import IN_PLACE
from .ops import SUM, Op
from .reductions import fast_op, fold
from .requests import Prequest, Request
from .vector_specs import Part, Spec, message, part_at, vector, vector_w

__all__ = ["_comm_lock", "_comm_lock_table"]  # (mpi4py's private names, that its tests use)

Run = Callable[[], Any]


class Collectives:
    """The collective calls of MPI.Comm, over `self._base` (the rma.Comm underneath)."""

    if TYPE_CHECKING:

        @property
        def _base(self) -> _rma.Comm: ...

    # ---- how a collective runs: now (after the started ones), or started in the worker ----

    def _now(self, run: Run) -> Any:
        collective_worker.drain(self._base)
        return run()

    def _object(self, name: str, run: Run) -> Any:
        """An object collective, under its lock of this communicator (as mpi4py's: threads of
        one rank making the same object collective take turns; MPI._comm_lock_table shows them)."""
        with _comm_lock(self, name):
            return self._now(run)

    def _start(self, run: Run, call: str) -> Request:
        return Request._of(collective_worker.start(self._base, run, call), message=False)

    def _persistent(self, run: Run, call: str) -> Prequest:
        """A persistent collective (MPI 4): its buffers parsed once; each Start() queues `run`."""
        base = self._base
        return Prequest._persistent(lambda: collective_worker.start(base, run, call))

    # ---- object calls (pickled Python objects) ----

    def Barrier(self) -> None:  # noqa: N802
        base = self._base
        try:
            collective_worker.drain(base)
            base.barrier()
        except TRANSLATED as exc:  # (in place, not through `translated`: a barrier is called in loops)
            raise as_mpi(exc) from None

    barrier = Barrier

    @translated
    def Ibarrier(self) -> Request:  # noqa: N802
        return self._start(self._base.barrier, "Comm.Ibarrier")

    @translated
    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        base = self._base
        root = _root(root, base, "Comm.bcast")
        return self._object("bcast", lambda: base.bcast(obj, root))

    @translated
    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        base = self._base
        root = _root(root, base, "Comm.gather")
        return self._object("gather", lambda: base.gather(sendobj, root))

    @translated
    def allgather(self, sendobj: Any) -> list[Any]:
        base = self._base
        return self._object("allgather", lambda: base.allgather(sendobj))

    @translated
    def scatter(self, sendobj: Any = None, root: int = 0) -> Any:
        base = self._base
        root = _root(root, base, "Comm.scatter")
        return self._object("scatter", lambda: base.scatter(sendobj, root))

    @translated
    def alltoall(self, sendobj: Any) -> list[Any]:
        base = self._base
        return self._object("alltoall", lambda: base.alltoall(sendobj))

    @translated
    def reduce(self, sendobj: Any, op: Op | Any = SUM, root: int = 0) -> Any:
        base = self._base
        root = _root(root, base, "Comm.reduce")
        combine = _combine(op)

        def run() -> Any:
            items = base.gather(sendobj, root)
            return _fold_objects(combine, items) if items is not None else None

        return self._object("reduce", run)

    @translated
    def allreduce(self, sendobj: Any, op: Op | Any = SUM) -> Any:
        base, combine = self._base, _combine(op)
        return self._object("allreduce", lambda: _fold_objects(combine, base.allgather(sendobj)))

    @translated
    def scan(self, sendobj: Any, op: Op | Any = SUM) -> Any:
        base, combine = self._base, _combine(op)
        return self._object("scan", lambda: _fold_objects(combine, base.allgather(sendobj)[: base.rank + 1]))

    @translated
    def exscan(self, sendobj: Any, op: Op | Any = SUM) -> Any:
        base, combine = self._base, _combine(op)
        items = self._object("exscan", lambda: base.allgather(sendobj))
        return _fold_objects(combine, items[: base.rank]) if base.rank > 0 else None

    # ---- buffer calls ----

    @translated
    def Bcast(self, buf: Any, root: int = 0) -> None:  # noqa: N802
        if plain_array(buf) and buf.flags.writeable:
            # The common case, a plain array: rma's own Bcast, without a specification to parse.
            base = self._base
            root = _root(root, base, "Comm.Bcast")
            collective_worker.drain(base)
            base.Bcast(buf, root)
            return
        self._now(self._bcast(buf, root, "Comm.Bcast"))

    @translated
    def Ibcast(self, buf: Any, root: int = 0) -> Request:  # noqa: N802
        return self._start(self._bcast(buf, root, "Comm.Ibcast"), "Comm.Ibcast")

    def _bcast(self, buf: Any, root: int, call: str) -> Run:
        base = self._base
        root, rank = _root(root, base, call), base.rank
        part = message(buf, writable=rank != root, call=call, rank=rank).part(0, call, rank)

        def run() -> None:
            data = part.read().tobytes() if rank == root else b""
            received = base._core.bcast(data, root, call)
            if rank != root:
                _store(part, received, call, rank, root)

        return run

    @translated
    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        self._now(self._gather(sendbuf, recvbuf, root, "Comm.Gather", vector_recv=False))

    @translated
    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:  # noqa: N802
        return self._start(self._gather(sendbuf, recvbuf, root, "Comm.Igather", vector_recv=False), "Comm.Igather")

    @translated
    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        self._now(self._gather(sendbuf, recvbuf, root, "Comm.Gatherv", vector_recv=True))

    @translated
    def Igatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:  # noqa: N802
        return self._start(self._gather(sendbuf, recvbuf, root, "Comm.Igatherv", vector_recv=True), "Comm.Igatherv")

    def _gather(self, sendbuf: Any, recvbuf: Any, root: int, call: str, *, vector_recv: bool) -> Run:
        base = self._base
        root, rank, size = _root(root, base, call), base.rank, base.size
        receives = None
        if rank == root:
            parse = vector if vector_recv else message
            spec = parse(recvbuf, writable=True, call=call, rank=rank, blocks=size)
            receives = [spec.part(i, call, rank) for i in range(size)]
        own = _own_part(sendbuf, receives[rank] if receives else None, call, rank)

        def run() -> None:
            items = base._core.gather(own.read().tobytes(), root, call)
            if receives is not None:
                for source, (part, item) in enumerate(zip(receives, items, strict=True)):
                    if part is not own:
                        _store(part, item, call, rank, source)

        return run

    @translated
    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        self._now(self._scatter(sendbuf, recvbuf, root, "Comm.Scatter", vector_send=False))

    @translated
    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:  # noqa: N802
        return self._start(self._scatter(sendbuf, recvbuf, root, "Comm.Iscatter", vector_send=False), "Comm.Iscatter")

    @translated
    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        self._now(self._scatter(sendbuf, recvbuf, root, "Comm.Scatterv", vector_send=True))

    @translated
    def Iscatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:  # noqa: N802
        run = self._scatter(sendbuf, recvbuf, root, "Comm.Iscatterv", vector_send=True)
        return self._start(run, "Comm.Iscatterv")

    def _scatter(self, sendbuf: Any, recvbuf: Any, root: int, call: str, *, vector_send: bool) -> Run:
        base = self._base
        root, rank, size = _root(root, base, call), base.rank, base.size
        sends = None
        if rank == root:
            parse = vector if vector_send else message
            spec = parse(sendbuf, writable=False, call=call, rank=rank, blocks=size)
            sends = [spec.part(i, call, rank) for i in range(size)]
        if rank == root and _in_place(recvbuf):
            receive = None  # (root's own block stays where it is)
        else:
            receive = message(recvbuf, writable=True, call=call, rank=rank).part(0, call, rank)

        def run() -> None:
            items = [part.read().tobytes() for part in sends] if sends is not None else None
            received = base._core.scatter(items, root)
            if receive is not None:
                _store(receive, received, call, rank, root)

        return run

    @translated
    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._now(self._allgather(sendbuf, recvbuf, "Comm.Allgather", vector_recv=False))

    @translated
    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        return self._start(self._allgather(sendbuf, recvbuf, "Comm.Iallgather", vector_recv=False), "Comm.Iallgather")

    @translated
    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._now(self._allgather(sendbuf, recvbuf, "Comm.Allgatherv", vector_recv=True))

    @translated
    def Iallgatherv(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        run = self._allgather(sendbuf, recvbuf, "Comm.Iallgatherv", vector_recv=True)
        return self._start(run, "Comm.Iallgatherv")

    def _allgather(self, sendbuf: Any, recvbuf: Any, call: str, *, vector_recv: bool) -> Run:
        base = self._base
        rank, size = base.rank, base.size
        parse = vector if vector_recv else message
        spec = parse(recvbuf, writable=True, call=call, rank=rank, blocks=size)
        receives = [spec.part(i, call, rank) for i in range(size)]
        own = _own_part(sendbuf, receives[rank], call, rank)

        def run() -> None:
            items = base._core.allgather(own.read().tobytes(), call)
            for source, (part, item) in enumerate(zip(receives, items, strict=True)):
                if part is not own:
                    _store(part, item, call, rank, source)

        return run

    @translated
    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._now(self._alltoall(sendbuf, recvbuf, "Comm.Alltoall", form=message))

    @translated
    def Ialltoall(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        return self._start(self._alltoall(sendbuf, recvbuf, "Comm.Ialltoall", form=message), "Comm.Ialltoall")

    @translated
    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._now(self._alltoall(sendbuf, recvbuf, "Comm.Alltoallv", form=vector))

    @translated
    def Ialltoallv(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        return self._start(self._alltoall(sendbuf, recvbuf, "Comm.Ialltoallv", form=vector), "Comm.Ialltoallv")

    @translated
    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._now(self._alltoall(sendbuf, recvbuf, "Comm.Alltoallw", form=vector_w))

    @translated
    def Ialltoallw(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        return self._start(self._alltoall(sendbuf, recvbuf, "Comm.Ialltoallw", form=vector_w), "Comm.Ialltoallw")

    def _alltoall(self, sendbuf: Any, recvbuf: Any, call: str, *, form: Callable[..., Any]) -> Run:
        base = self._base
        rank, size = base.rank, base.size
        receives = _parts(form(recvbuf, writable=True, call=call, rank=rank, blocks=size), size, call, rank)
        if _in_place(sendbuf):
            sends = receives  # (each block is read before any is written)
        else:
            sends = _parts(form(sendbuf, writable=False, call=call, rank=rank, blocks=size), size, call, rank)

        def run() -> None:
            items = base._core.alltoall([part.read().tobytes() for part in sends])
            for source, (part, item) in enumerate(zip(receives, items, strict=True)):
                _store(part, item, call, rank, source)

        return run

    # ---- reductions ----

    @translated
    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:  # noqa: N802
        self._now(self._reduce(sendbuf, recvbuf, op, root, "Comm.Reduce"))

    @translated
    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> Request:  # noqa: N802
        return self._start(self._reduce(sendbuf, recvbuf, op, root, "Comm.Ireduce"), "Comm.Ireduce")

    def _reduce(self, sendbuf: Any, recvbuf: Any, op: Op, root: int, call: str) -> Run:
        base = self._base
        root, rank = _root(root, base, call), base.rank
        op = _op(op, call)
        result = None
        if rank == root:
            result = message(recvbuf, writable=True, call=call, rank=rank).part(0, call, rank)
        send = _own_part(sendbuf, result, call, rank)
        _same_count(send, result, call, rank)

        def run() -> None:
            data = send.read()
            fast = fast_op(op, data.dtype)
            if fast is not None and data.size:
                out = np.empty_like(data) if result is not None else None
                base.Reduce(data, out, fast, root)
            else:
                items = base._core.gather(data.tobytes(), root, call)
                out = fold(op, _arrays(items, data, call, rank), send.datatype, call) if result is not None else None
            if result is not None:
                result.write(out)

        return run

    @translated
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:  # noqa: N802
        if (
            plain_array(sendbuf)
            and plain_array(recvbuf)
            and recvbuf.flags.writeable
            and sendbuf.dtype == recvbuf.dtype
            and sendbuf.size == recvbuf.size
        ):
            # The common case, plain arrays and a predefined op on an element type rma reduces:
            # rma's compiled Allreduce (in shared memory on one host), with nothing to parse.
            fast = fast_op(op, sendbuf.dtype) if type(op) is Op and sendbuf.size else None
            if fast is not None:
                base = self._base
                collective_worker.drain(base)
                base.Allreduce(sendbuf, recvbuf, fast)
                return
        self._now(self._allreduce(sendbuf, recvbuf, op, "Comm.Allreduce"))

    @translated
    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:  # noqa: N802
        return self._start(self._allreduce(sendbuf, recvbuf, op, "Comm.Iallreduce"), "Comm.Iallreduce")

    def _allreduce(self, sendbuf: Any, recvbuf: Any, op: Op, call: str) -> Run:
        base = self._base
        rank, op = base.rank, _op(op, call)
        result = message(recvbuf, writable=True, call=call, rank=rank).part(0, call, rank)
        send = _own_part(sendbuf, result, call, rank)
        _same_count(send, result, call, rank)
        return lambda: result.write(_allreduced(base, send.read(), op, send, call))

    @translated
    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:  # noqa: N802
        self._now(self._reduce_scatter(sendbuf, recvbuf, None, op, "Comm.Reduce_scatter_block", block=True))

    @translated
    def Ireduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:  # noqa: N802
        call = "Comm.Ireduce_scatter_block"
        return self._start(self._reduce_scatter(sendbuf, recvbuf, None, op, call, block=True), call)

    @translated
    def Reduce_scatter(  # noqa: N802
        self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM
    ) -> None:
        self._now(self._reduce_scatter(sendbuf, recvbuf, recvcounts, op, "Comm.Reduce_scatter", block=False))

    @translated
    def Ireduce_scatter(  # noqa: N802
        self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM
    ) -> Request:
        call = "Comm.Ireduce_scatter"
        return self._start(self._reduce_scatter(sendbuf, recvbuf, recvcounts, op, call, block=False), call)

    def _reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any, op: Op, call: str, *, block: bool) -> Run:
        """Every rank's elements reduced, and rank i keeps block i (recvcounts[i] elements, or
        the same count for each rank in the block form). In place, the data is the receive
        buffer and the result goes to its start."""
        base = self._base
        rank, size, op = base.rank, base.size, _op(op, call)
        in_place = _in_place(sendbuf)
        if block:
            spec = message(recvbuf, writable=True, call=call, rank=rank, blocks=size if in_place else 1)
            counts = [spec.counts[0]] * size
        else:
            spec = message(recvbuf, writable=True, call=call, rank=rank)
            counts = None if recvcounts is None else [_count(c, call, rank) for c in recvcounts]
            if counts is None and in_place:
                raise ArgumentError(f"rma.compat: {call}: in place, recvcounts must be given")
            if counts is not None and len(counts) != size:
                raise ArgumentError(f"rma.compat: {call}: rank {rank} gave {len(counts)} counts for {size} ranks")
        if in_place:
            # The data is the receive buffer's first entries: all its blocks, or sum(recvcounts)
            # (the buffer may be larger, as MPI allows).
            data_part = _whole(spec, call, rank) if counts is None or block else _first(spec, sum(counts), call, rank)
        else:
            send = message(sendbuf, writable=False, call=call, rank=rank)
            if send.datatype != spec.datatype:
                raise ArgumentError(f"rma.compat: {call}: mismatch in send and receive MPI datatypes")
            data_part = send.part(0, call, rank)
        if counts is not None and not in_place and (data_part.count != sum(counts) or spec.counts[0] < counts[rank]):
            raise ArgumentError(
                f"rma.compat: {call}: rank {rank} sends {data_part.count} entries and receives "
                f"{spec.counts[0]}; the counts are {counts}"
            )

        def run() -> None:
            every = counts
            if every is None:
                # Each rank's receive and send counts, so that every rank finds a mismatch alike
                # (raised on one rank alone, the others would wait in the reduction).
                pairs = base.allgather((spec.counts[0], data_part.count))
                every = [received for received, _ in pairs]
                wrong = [r for r, (_, sent) in enumerate(pairs) if sent != sum(every)]
                if wrong:
                    raise ArgumentError(
                        f"rma.compat: {call}: rank {rank} found that rank {wrong[0]} sends {pairs[wrong[0]][1]} "
                        f"entries where the receive counts {every} sum to {sum(every)}"
                    )
            reduced = _allreduced(base, data_part.read(), op, data_part, call)
            per_entry = reduced.size // max(data_part.count, 1)
            start = sum(every[:rank]) * per_entry
            mine = reduced[start : start + every[rank] * per_entry]
            _first(spec, every[rank], call, rank).write(mine)

        return run

    @translated
    def Scan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:  # noqa: N802
        self._now(self._scan(sendbuf, recvbuf, op, "Comm.Scan", exclusive=False))

    @translated
    def Iscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:  # noqa: N802
        return self._start(self._scan(sendbuf, recvbuf, op, "Comm.Iscan", exclusive=False), "Comm.Iscan")

    @translated
    def Exscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:  # noqa: N802
        self._now(self._scan(sendbuf, recvbuf, op, "Comm.Exscan", exclusive=True))

    @translated
    def Iexscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:  # noqa: N802
        return self._start(self._scan(sendbuf, recvbuf, op, "Comm.Iexscan", exclusive=True), "Comm.Iexscan")

    def _scan(self, sendbuf: Any, recvbuf: Any, op: Op, call: str, *, exclusive: bool) -> Run:
        """Rank r gets ranks 0..r's elements combined in rank order (Exscan: 0..r-1; rank 0's
        result is left as it was, undefined in MPI)."""
        base = self._base
        rank, op = base.rank, _op(op, call)
        result = message(recvbuf, writable=True, call=call, rank=rank).part(0, call, rank)
        send = _own_part(sendbuf, result, call, rank)
        _same_count(send, result, call, rank)

        def run() -> None:
            data = send.read()
            parts = _arrays(base._core.allgather(data.tobytes(), call), data, call, rank)
            upto = rank if exclusive else rank + 1
            if upto:
                result.write(fold(op, parts[:upto], send.datatype, call))

        return run

    # ---- persistent collectives (MPI 4): made once, each Start() runs the collective again ----

    @translated
    def Barrier_init(self, info: Any = None) -> Prequest:  # noqa: N802
        return self._persistent(self._base.barrier, "Comm.Barrier_init")

    @translated
    def Bcast_init(self, buf: Any, root: int = 0, info: Any = None) -> Prequest:  # noqa: N802
        return self._persistent(self._bcast(buf, root, "Comm.Bcast_init"), "Comm.Bcast_init")

    @translated
    def Gather_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Gather_init"
        return self._persistent(self._gather(sendbuf, recvbuf, root, call, vector_recv=False), call)

    @translated
    def Gatherv_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Gatherv_init"
        return self._persistent(self._gather(sendbuf, recvbuf, root, call, vector_recv=True), call)

    @translated
    def Scatter_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Scatter_init"
        return self._persistent(self._scatter(sendbuf, recvbuf, root, call, vector_send=False), call)

    @translated
    def Scatterv_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Scatterv_init"
        return self._persistent(self._scatter(sendbuf, recvbuf, root, call, vector_send=True), call)

    @translated
    def Allgather_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Allgather_init"
        return self._persistent(self._allgather(sendbuf, recvbuf, call, vector_recv=False), call)

    @translated
    def Allgatherv_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Allgatherv_init"
        return self._persistent(self._allgather(sendbuf, recvbuf, call, vector_recv=True), call)

    @translated
    def Alltoall_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Alltoall_init"
        return self._persistent(self._alltoall(sendbuf, recvbuf, call, form=message), call)

    @translated
    def Alltoallv_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Alltoallv_init"
        return self._persistent(self._alltoall(sendbuf, recvbuf, call, form=vector), call)

    @translated
    def Alltoallw_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Alltoallw_init"
        return self._persistent(self._alltoall(sendbuf, recvbuf, call, form=vector_w), call)

    @translated
    def Reduce_init(  # noqa: N802
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0, info: Any = None
    ) -> Prequest:
        call = "Comm.Reduce_init"
        return self._persistent(self._reduce(sendbuf, recvbuf, op, root, call), call)

    @translated
    def Allreduce_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Allreduce_init"
        return self._persistent(self._allreduce(sendbuf, recvbuf, op, call), call)

    @translated
    def Reduce_scatter_block_init(  # noqa: N802
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None
    ) -> Prequest:
        call = "Comm.Reduce_scatter_block_init"
        return self._persistent(self._reduce_scatter(sendbuf, recvbuf, None, op, call, block=True), call)

    @translated
    def Reduce_scatter_init(  # noqa: N802
        self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM, info: Any = None
    ) -> Prequest:
        call = "Comm.Reduce_scatter_init"
        return self._persistent(self._reduce_scatter(sendbuf, recvbuf, recvcounts, op, call, block=False), call)

    @translated
    def Scan_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Scan_init"
        return self._persistent(self._scan(sendbuf, recvbuf, op, call, exclusive=False), call)

    @translated
    def Exscan_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:  # noqa: N802
        call = "Comm.Exscan_init"
        return self._persistent(self._scan(sendbuf, recvbuf, op, call, exclusive=True), call)


# ---- helpers ----


def _comm_lock_table(comm: Any) -> dict[str, threading.Lock]:
    """mpi4py's MPI._comm_lock_table: the locks of a communicator's object collectives, by name."""
    return comm._locks


def _comm_lock(comm: Any, name: str) -> threading.Lock:
    """mpi4py's MPI._comm_lock: the lock of object collective `name` of a communicator."""
    locks = comm._locks
    lock = locks.get(name)
    if lock is None:
        lock = locks.setdefault(name, threading.Lock())
    return lock


def _root(root: Any, base: _rma.Comm, call: str) -> int:
    """`root` as a rank of the communicator, or MPI.Exception ERR_ROOT naming the call."""
    try:
        number = operator.index(root)
    except TypeError:
        raise TypeError(f"rma.compat: {call}: root must be an integer, not {type(root).__name__}") from None
    if not 0 <= number < base.size:
        raise MPIException(
            ERR_ROOT, f"rma.compat: {call}: root {number} is not a rank of the communicator of {base.size}"
        )
    return number


def _in_place(spec: Any) -> bool:
    """mpi4py's rule: MPI.IN_PLACE or None as a send buffer means in place."""
    return spec is None or spec is IN_PLACE


def _own_part(sendbuf: Any, in_place: Part | None, call: str, rank: int) -> Part:
    """The elements this rank contributes: its send buffer's, or in place its receive part's."""
    if _in_place(sendbuf):
        if in_place is None:
            raise ArgumentError(f"rma.compat: {call}: rank {rank} passed MPI.IN_PLACE where MPI allows it on root only")
        return in_place
    return message(sendbuf, writable=False, call=call, rank=rank).part(0, call, rank)


def _parts(made: Spec | list[Part], size: int, call: str, rank: int) -> list[Part]:
    return made if isinstance(made, list) else [made.part(i, call, rank) for i in range(size)]


def _whole(spec: Spec, call: str, rank: int) -> Part:
    """All the entries of a (possibly blocked) specification, as one Part."""
    return part_at(spec.raw, spec.datatype, sum(spec.counts), spec.displs[0] * spec.datatype.extent, call, rank)


def _first(spec: Spec, count: int, call: str, rank: int) -> Part:
    """The first `count` entries of a specification."""
    return part_at(spec.raw, spec.datatype, count, spec.displs[0] * spec.datatype.extent, call, rank)


def _same_count(send: Part, result: Part | None, call: str, rank: int) -> None:
    """A reduction's send and receive buffers: the same count of the same datatype (mpi4py's check)."""
    if result is None or send is result:
        return
    if send.size != result.size:
        raise ArgumentError(
            f"rma.compat: {call}: rank {rank}'s send buffer has {send.size} elements "
            f"but its receive buffer {result.size}"
        )
    if send.datatype != result.datatype:
        raise ArgumentError(
            f"rma.compat: {call}: rank {rank}'s send and receive buffers have different datatypes "
            f"({send.datatype.Get_name() or 'derived'}, {result.datatype.Get_name() or 'derived'})"
        )


def _store(part: Part, received: bytes, call: str, rank: int, source: int) -> None:
    """Write a received message into its part, which must be exactly its size."""
    expected = part.size * part.dtype.itemsize
    if len(received) != expected:
        raise MPIException(
            ERR_TRUNCATE,
            f"rma.compat: {call}: rank {rank} expected {expected} bytes from rank {source} but got {len(received)}: "
            "the counts and datatypes must match on every rank",
        )
    part.write(np.frombuffer(received, part.dtype))


def _arrays(items: list[bytes], data: np.ndarray, call: str, rank: int) -> list[np.ndarray]:
    """Every rank's contribution as an array like this rank's `data`."""
    parts = []
    for source, item in enumerate(items):
        if len(item) != data.nbytes:
            raise MPIException(
                ERR_TRUNCATE,
                f"rma.compat: {call}: rank {rank} reduces {data.size} elements but rank {source} "
                f"sent {len(item) // max(data.itemsize, 1)}: every rank must pass the same count",
            )
        parts.append(np.frombuffer(item, data.dtype))
    return parts


def _allreduced(base: _rma.Comm, data: np.ndarray, op: Op, part: Part, call: str) -> np.ndarray:
    """Every rank's `data` combined by `op` in rank order, on every rank."""
    fast = fast_op(op, data.dtype)
    if fast is not None and data.size:
        out = np.empty_like(data)
        base.Allreduce(data, out, fast)
        return out
    return fold(op, _arrays(base._core.allgather(data.tobytes(), call), data, call, base.rank), part.datatype, call)


def _op(op: Any, call: str) -> Op:
    if not isinstance(op, Op) or not op:
        raise MPIException(ERR_OP, f"rma.compat: {call}: op must be an MPI.Op other than MPI.OP_NULL, not {op!r}")
    return op


def _count(value: Any, call: str, rank: int) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentError(f"rma.compat: {call}: rank {rank}'s counts must be integers") from None
    if number < 0:
        raise ArgumentError(f"rma.compat: {call}: rank {rank}'s count {number} is negative")
    return number


def _combine(op: Any) -> Callable[[Any, Any], Any]:
    """An MPI.Op (or a function of two objects) as the function the object reductions fold with."""
    if isinstance(op, Op):
        return op.__call__
    if callable(op):
        return op
    raise TypeError(f"rma.compat: op must be an MPI.Op, not {type(op).__name__}")


def _fold_objects(combine: Callable[[Any, Any], Any], items: list[Any]) -> Any:
    """items[0] op items[1] op ... in rank order."""
    return functools.reduce(combine, items)
