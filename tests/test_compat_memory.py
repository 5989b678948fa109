"""Issue 40: the memory of MPI.Alloc_mem and MPI.buffer behave as mpi4py's (4.1.2) byte buffers,
so that mpi4py's one-sided examples run unchanged: `mem[:] = struct.pack("i", 0) * n` before
`MPI.Win.Create(mem, 4)`, `mem[i]` an int, `np.frombuffer(mem, "i")` writable, the static
constructors, and the read-only forms."""

import array
import ctypes
import pickle
import struct

import numpy as np
import pytest

from rma.compat import MPI


def test_slices_take_the_bytes_of_any_bytes_like_object():
    n = 4
    mem = MPI.Alloc_mem(n * 4)
    mem[:] = struct.pack("i", 0) * n
    assert struct.unpack(f"{n}i", mem) == (0,) * n
    mem[4:8] = struct.pack("i", -2)
    mem[8:12] = np.array([3], "i")  # a NumPy array gives its bytes, whatever its dtype
    mem[12:16] = array.array("i", [4])
    assert struct.unpack(f"{n}i", mem) == (0, -2, 3, 4)
    mem[:4] = bytearray(b"\x01\x02\x03\x04")
    mem[0:2] = MPI.buffer(b"\x09\x08")  # another MPI.buffer
    assert mem.tobytes()[:4] == b"\x09\x08\x03\x04"
    mem[:] = 7  # an int fills the slice
    assert mem.tobytes() == b"\x07" * 16
    with pytest.raises(ValueError, match="holds 2 bytes, the data 3"):
        mem[0:2] = b"abc"
    with pytest.raises(TypeError, match="bytes-like object is required, not list"):
        mem[:] = [0] * 16  # a list has no bytes (NumPy would take its values)
    with pytest.raises(IndexError, match="step"):
        mem[::2] = b"\x00" * 8
    MPI.Free_mem(mem)


def test_items_are_ints_and_slices_are_buffers_over_the_same_bytes():
    mem = MPI.buffer.allocate(8, clear=True)
    mem[1] = 200
    mem[-1] = 5
    assert type(mem[1]) is int and (mem[1], mem[7], mem[-1]) == (200, 5, 5)
    assert list(mem) == [0, 200, 0, 0, 0, 0, 0, 5] and all(type(b) is int for b in mem)
    with pytest.raises(OverflowError):
        mem[0] = 256
    with pytest.raises(TypeError):
        mem[0] = 1.5  # (NumPy would store 1)
    with pytest.raises(IndexError):
        mem[8]
    with pytest.raises(IndexError, match="step"):
        mem[::2]
    part = mem[1:5]
    assert isinstance(part, MPI.buffer) and len(part) == part.nbytes == 4
    assert part.address == mem.address + 1 and part.obj is mem
    part[0] = 1
    assert mem[1] == 1
    assert repr(mem) == f"<MPI.buffer of 8 bytes at {mem.address:#x}>" and str(mem) == repr(mem)


def test_attributes_and_the_buffer_protocol():
    mem = MPI.Alloc_mem(16)
    assert (len(mem), mem.nbytes, mem.itemsize, mem.format, mem.readonly) == (16, 16, 1, "B", False)
    assert mem.address == np.asarray(mem).ctypes.data and mem.address == MPI.Get_address(mem)
    ints = np.frombuffer(mem, dtype="i")
    assert ints.flags.writeable
    ints[:] = [1, 2, 3, 4]
    assert struct.unpack("4i", mem.tobytes()) == (1, 2, 3, 4)
    view = memoryview(mem)
    assert (view.format, view.itemsize, view.nbytes, view.readonly) == ("B", 1, 16, False)
    assert mem.cast("i").tolist() == [1, 2, 3, 4]
    assert mem.cast("i", (2, 2)).tolist() == [[1, 2], [3, 4]]
    assert bool(mem) and not MPI.buffer() and MPI.buffer().nbytes == 0
    assert MPI.memory is MPI.buffer
    assert pickle.loads(pickle.dumps(mem[:4])) == struct.pack("i", 1)
    mem.release()  # (nothing to give back early: the memory lives while views of it do)
    MPI.Free_mem(mem)


def test_read_only_buffers_refuse_writes():
    mem = MPI.Alloc_mem(4)
    mem[:] = 0
    frozen = mem.toreadonly()
    assert frozen.readonly and not mem.readonly and frozen.obj is mem.obj and frozen.address == mem.address
    assert memoryview(frozen).readonly and frozen.cast("B").readonly
    assert not np.frombuffer(frozen, "i").flags.writeable
    for write in (lambda: frozen.__setitem__(0, 1), lambda: frozen.__setitem__(slice(None), b"abcd")):
        with pytest.raises(TypeError, match="read-only"):
            write()
    mem[0] = 9
    assert frozen[0] == 9  # the same bytes
    assert MPI.buffer(b"ab").readonly  # a buffer over bytes is read-only, as the bytes are


def test_the_static_constructors():
    data = bytearray(b"hello")
    over = MPI.buffer.frombuffer(data)
    assert over.obj is data and not over.readonly and over.tobytes() == b"hello"
    over[0] = ord("j")
    assert data == bytearray(b"jello")
    with pytest.raises(BufferError, match="read-only"):
        MPI.buffer.frombuffer(b"immutable")
    looking = MPI.buffer.frombuffer(data, readonly=True)
    assert looking.readonly and looking.tobytes() == b"jello"
    assert MPI.buffer(data).obj is data and not MPI.buffer(data).readonly

    raw = (ctypes.c_ubyte * 4)(1, 2, 3, 4)
    at = MPI.buffer.fromaddress(ctypes.addressof(raw), 4)
    assert at.obj is None and at.address == ctypes.addressof(raw) and list(at) == [1, 2, 3, 4]
    at[:] = b"\x05\x06\x07\x08"
    assert list(raw) == [5, 6, 7, 8]
    assert MPI.buffer.fromaddress(ctypes.addressof(raw), 4, readonly=True).readonly
    assert MPI.buffer.fromaddress(0, 0).nbytes == 0
    with pytest.raises(ValueError, match="non-NULL"):
        MPI.buffer.fromaddress(0, 4)
    for make in (lambda: MPI.buffer.fromaddress(ctypes.addressof(raw), -1), lambda: MPI.buffer.allocate(-1)):
        with pytest.raises(ValueError, match="non-negative"):
            make()
    assert MPI.buffer.allocate(3, clear=True).tobytes() == bytes(3)


@pytest.mark.rma(nprocs=[1, 2, 4], timeout=60)
def test_mpi4py_one_sided_pattern_over_alloc_mem(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    n = 6
    mem = MPI.Alloc_mem(n * 4)
    mem[:] = struct.pack("i", 0) * n
    win = MPI.Win.Create(mem, 4, comm=world)
    win.Fence()
    for target in range(size):
        win.Accumulate([np.full(n, rank + 1, "i"), MPI.INT], target, op=MPI.SUM)
    win.Fence()
    total = size * (size + 1) // 2
    assert struct.unpack(f"{n}i", mem) == (total,) * n
    assert np.frombuffer(mem, dtype="i").tolist() == [total] * n
    world.Barrier()  # (every rank has read its memory before the next epoch writes to it)
    # A passive-target epoch on the same memory: every rank adds 100 to element 1 of the next.
    right = (rank + 1) % size
    win.Lock(right, MPI.LOCK_SHARED)
    win.Accumulate([array.array("i", [100]), MPI.INT], right, target=(1, 1, MPI.INT), op=MPI.SUM)
    win.Unlock(right)
    world.Barrier()
    win.Lock(rank, MPI.LOCK_SHARED)  # (the window's public copy meets this rank's view)
    values = struct.unpack(f"{n}i", mem.tobytes())
    win.Unlock(rank)
    assert values == (total, total + 100) + (total,) * (n - 2)
    assert mem[4:8].tobytes() == struct.pack("i", total + 100) and mem[4] == struct.pack("i", total + 100)[0]
    win.Free()
    MPI.Free_mem(mem)


def test_empty_released_and_freed_buffers_read_as_no_memory():
    empty = MPI.buffer()
    assert (empty.address, empty.obj, empty.nbytes, len(empty), empty.readonly) == (0, None, 0, 0, False)
    empty[:] = 0  # (writing nothing into nothing is fine)
    assert memoryview(empty).tobytes() == b""
    # allocate(0) has memory of its own, at an address (malloc gives one), and an obj to view.
    for size in (0, 1, 2):
        made = MPI.buffer.allocate(size)
        assert made.address != 0 and made.nbytes == memoryview(made.obj).nbytes == size
    data = b"abc"
    over = MPI.buffer.frombuffer(data, readonly=True)
    assert over.address != 0 and over.readonly and over.obj is data
    over.release()
    assert (over.address, over.nbytes, len(over), over.readonly, over.obj) == (0, 0, 0, False, None)
    mem = MPI.Alloc_mem(8)
    MPI.Free_mem(mem)
    assert (mem.address, mem.nbytes, mem.readonly) == (0, 0, False)


def test_what_is_no_buffer_is_a_type_error_and_bytes_cannot_be_deleted():
    for obj in (None, 0, 0.0, [], ()):
        with pytest.raises(TypeError, match="expected a buffer object"):
            MPI.buffer(obj)
        with pytest.raises(TypeError, match="expected a buffer object"):
            MPI.buffer.frombuffer(obj)
    with pytest.raises(TypeError):
        MPI.buffer.allocate(None)
    mem = MPI.buffer.allocate(4, clear=True)
    with pytest.raises(NotImplementedError, match="cannot be deleted"):
        del mem[0]
    with pytest.raises(TypeError, match="not None"):
        mem[None]
    with pytest.raises(TypeError, match="not None"):
        mem[None] = 0
    with pytest.raises(IndexError):
        mem[4] = 0
    assert mem.tobytes() == bytes(4)
