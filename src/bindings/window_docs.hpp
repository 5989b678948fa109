// The docstrings of the compiled window's methods: prose only. Each method's signature comes
// from its parameter table (parameters.hpp), in the file that holds the method.
#pragma once

namespace window_docs {

#define RMA_TARGET_TEXT                                                                         \
  "target_disp counts the target's disp_unit (its dtype's itemsize unless the window was made " \
  "with another; bytes for a dynamic window), from the start of its memory in flat C order. "   \
  "target= instead selects a region of the target's array with a basic NumPy index "            \
  "(np.s_[2:10:2], np.s_[:, 3], (slice(0, 4), 1)); then target_disp stays 0.\n"

inline constexpr const char* put =
    "Start writing `origin` into `target_rank`'s window; it lands by the next synchronization.\n\n"
    "origin: an array of the target window's dtype (any plain dtype into a uint8 window), a "
    "number, or a list of numbers of that kind; strided arrays are taken in C order. " RMA_TARGET_TEXT
    "Example: with win.lock(1): win.put(np.arange(4.0), 1, 8)  # elements 8..11 of rank 1";

inline constexpr const char* get =
    "Start reading `target_rank`'s window into `result`; filled by the next synchronization.\n\n"
    "result: a writable array of the target window's dtype; it holds as many elements as are read. " RMA_TARGET_TEXT
    "Example: got = np.empty(3); win.get(got, 2, target=np.s_[0, ::2])";

inline constexpr const char* accumulate =
    "Start combining `origin` into `target_rank`'s window element by element with `op`.\n\n"
    "op: an rma.Op (rma.SUM, rma.MAX, rma.REPLACE...) that applies to the dtype. Concurrent "
    "accumulates to one element are atomic per element. " RMA_TARGET_TEXT
    "Example: win.accumulate(np.ones(5), 0, 5, op=rma.SUM)";

inline constexpr const char* get_accumulate =
    "Start combining `origin` into the target with `op`, fetching the old values into `result`.\n\n"
    "origin and result have the same dtype and number of elements. " RMA_TARGET_TEXT
    "Example: old = np.empty(2, np.int64); win.get_accumulate([1, 1], old, 0, op=rma.SUM)";

inline constexpr const char* fetch_and_op =
    "Start applying `op` with `origin` to one target element, fetching its old value into `result`.\n\n"
    "origin: one element (a number, or an array of one element of result's dtype); result: a "
    "writable one-element array. target_disp counts the target's disp_unit.\n"
    "Example: ticket = np.empty(1, np.int64); win.fetch_and_op(1, ticket, 0)";

inline constexpr const char* compare_and_swap =
    "Start replacing one target element by `origin` if it equals `compare`; fetch the old value.\n\n"
    "Integers and bool only; origin and compare are numbers or one-element arrays of result's dtype.\n"
    "Example: old = np.empty(1, np.int64); win.compare_and_swap(7, 0, old, 0)";

inline constexpr const char* rput =
    "put inside a passive-target epoch; return an rma.Request that completes it.\n"
    "Example: with win.lock_all(): reqs = [win.rput(part, r) for r in peers]; [q.wait() for q in reqs]";
inline constexpr const char* rget =
    "get inside a passive-target epoch; the Request's wait() returns `result`, filled.\n"
    "Example: with win.lock(1): got = win.rget(np.empty(4), 1).wait()";
inline constexpr const char* raccumulate = "accumulate inside a passive-target epoch; return an rma.Request.";
inline constexpr const char* rget_accumulate =
    "get_accumulate inside a passive-target epoch; the Request's wait() returns `result`, filled.";

inline constexpr const char* fence =
    "Complete the ending epoch everywhere and open the next; collective.\n\n"
    "mode: rma.Mode flags (NOPRECEDE, NOSUCCEED, NOSTORE, NOPUT, NOCHECK) or 0. As a context "
    "manager (`with win.fence(): ...`) the exit fences with Mode.NOSUCCEED.\n"
    "Example: win.fence(); win.put(x, (comm.rank + 1) % comm.size); win.fence()  # x has landed";
inline constexpr const char* post =
    "Open an exposure epoch for the origins in `group`; returns at once.\n\n"
    "group: an rma.Group or an iterable of ranks. As a context manager, the exit calls wait().\n"
    "Example: with win.post([0]): pass  # rank 0's puts have landed here after the block";
inline constexpr const char* start =
    "Open an access epoch to the targets in `group`; returns at once.\n\n"
    "Calls to a target wait for its post if it has not arrived yet. As a context manager, the "
    "exit calls complete().\n"
    "Example: with win.start([1, 2]): win.put(x, 1); win.put(x, 2)";
inline constexpr const char* complete =
    "End the access epoch: its calls have completed at the origin and at the targets.";
inline constexpr const char* wait = "End the exposure epoch once every origin of the post group has called complete().";
inline constexpr const char* test =
    "End the exposure epoch and return True if wait() would not block; else return False.";
inline constexpr const char* lock =
    "Lock `rank`'s window and open a passive-target epoch to it.\n\n"
    "lock_type: rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED. Locks are granted in request order. On a "
    "rank of this host (and this rank's own window) it returns once the lock is granted; on a "
    "rank reached through libfabric the request rides the epoch's first call, which the target "
    "holds until the grant, so the wait is in that call, flush or unlock (a lock guards the "
    "epoch's calls; rma.sync.Mutex guards code). As a context manager, the exit calls "
    "unlock(rank), also when the block raises.\n"
    "Example: with win.lock(1, rma.LOCK_SHARED): win.get(buf, 1)";
inline constexpr const char* unlock = "Complete this epoch's calls to `rank` (there too) and release its lock.";
inline constexpr const char* lock_all =
    "Take a shared lock on every rank; as a context manager, the exit calls unlock_all().\n"
    "Example: with win.lock_all(): win.put(x, 1); win.flush(1)  # landed at rank 1 here";
inline constexpr const char* unlock_all = "Complete every call of the lock_all epoch and release the locks.";
inline constexpr const char* flush =
    "Complete every call to `rank` so far, at the origin and at `rank` (passive epochs).";
inline constexpr const char* flush_all = "Complete every call so far to every rank (passive epochs).";
inline constexpr const char* flush_local =
    "Complete the calls to `rank` locally: origin buffers may be reused (here: a flush).";
inline constexpr const char* flush_local_all = "Complete every call locally (here: a flush_all).";
inline constexpr const char* sync =
    "Make this rank's stores to window memory visible to the others (the model is unified, so "
    "there is no copy to synchronize) and wake every rank's wait_until to look again: after a "
    "plain store through win.local or win.shared(rank) that another rank waits for.";
inline constexpr const char* free = "Free the window; collective. Any later call on it raises rma.RMAError.";
inline constexpr const char* wait_until =
    "Block until `win.local[index] <cmp> value` holds; return the value seen.\n\n"
    "cmp is one of \"==\", \"!=\", \"<\", \"<=\", \">\", \">=\". Progress goes on while waiting (other "
    "ranks' puts and accumulates land). On one host the wait sleeps, using no CPU, and wakes when "
    "a rank's flush, unlock, fence or complete of its calls to this rank, or a win.sync(), may have "
    "changed the value; a plain store without win.sync() after it is seen within 0.1 s. Through "
    "libfabric it looks at least every millisecond. Raises rma.RMATimeoutError (a TimeoutError) after "
    "`timeout` seconds or RMA_TIMEOUT, whichever comes first, and rma.PeerError when another rank "
    "of the window dies meanwhile.";
inline constexpr const char* attach =
    "Expose `array` (writable, C-contiguous) to the other ranks; return its displacement.\n\n"
    "Dynamic windows only. Publish the displacement (with comm.bcast, for instance): others "
    "pass it as target_disp. The window keeps the array alive until detach().";
inline constexpr const char* detach = "Withdraw memory attached with attach(array).";

#undef RMA_TARGET_TEXT

}  // namespace window_docs
