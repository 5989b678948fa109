// How this rank reaches one target's window memory: the second half of every communication
// call, after the Window admitted it (epoch and range checked). A window picks a Route per
// target when it is created (Routes, indexed by rank), so that one window can reach its
// same-host peers through shared memory and the others through the fabric:
//   MappedRoute  the target's memory is mapped here (a shared window): memcpy, and the
//                accumulate family as plain loops under the target's accumulate lock
//                (route_mapped.hpp);
//   VmRoute      the target's memory is another process's on this host (a same-host create()
//                window): puts and gets are process_vm_writev/readv; accumulates go to the fabric;
//   FabricRoute  libfabric: native RMA for large contiguous transfers, active messages for
//                the rest and for dynamic windows (route_fabric.hpp).
// A Route only moves data: it throws RmaError/PeerError/TimeoutError from the transport, never
// EpochError or RangeError (the admission's business).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "elements/reduce.hpp"
#include "elements/region.hpp"
#include "host/shared_segment.hpp"

namespace rma {

class MappedRoute;

// Names a call for error messages: where(call, target) as Epochs::where spells it.
using Where = std::function<std::string(const char* call, int target)>;

class Route {
 public:
  virtual ~Route() = default;

  // Whether a call through this route is complete (at origin and target) when it returns:
  // then nothing is in flight at the fabric for the target, and completing needs no flush.
  bool immediate() const noexcept { return immediate_; }
  // Whether the *_direct calls below can ever succeed (the direct path asks before admitting).
  bool copies_directly() const noexcept { return copies_directly_; }
  // This route if it is a MappedRoute, else null. The direct path (~30 ns from Python) calls
  // a mapped target's memory and accumulate lock itself, inline, without a virtual call; the
  // accumulate family has a direct path only there.
  MappedRoute* mapped() const noexcept { return mapped_; }

  // The general calls: region is admitted and lies inside the target's exposed memory; local
  // buffers hold its elements contiguously and stay alive until the epoch's synchronization.
  virtual void put(int target, const void* data, const Region& region) = 0;
  virtual void get(int target, void* out, const Region& region) = 0;
  // accumulate (result null) or get_accumulate; op fits type (checked by the caller).
  virtual void accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data, void* result,
                          const Region& region) = 0;
  // One element.
  virtual void compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                                const Region& region) = 0;

  // The direct path of put and get (copies_directly()): one admitted contiguous run of bytes
  // at offset, inside the target's window. True when done and complete; false with nothing
  // done when this route cannot do it now (then the general path takes the call).
  virtual bool put_direct(int, const void*, uint64_t, uint64_t) { return false; }
  virtual bool get_direct(int, void*, uint64_t, uint64_t) { return false; }

 protected:
  Route(bool immediate, bool copies_directly) : immediate_(immediate), copies_directly_(copies_directly) {}
  MappedRoute* mapped_ = nullptr;  // set by MappedRoute

 private:
  const bool immediate_, copies_directly_;
};

// The route to each target, by rank. Only the caller's thread reads or changes it.
using Routes = std::vector<Route*>;

// A same-host create() window's peers: another process's memory, copied with process_vm_*.
// When the kernel refuses (ptrace rules, a non-dumpable process), the target's route switches
// to `fallback` for good and the call goes there; the accumulate family always does.
class VmRoute final : public Route {
 public:
  // pids and bases: each rank's process and its window memory's address there, by rank.
  VmRoute(std::vector<int> pids, std::vector<uint64_t> bases, Routes& routes, Route& fallback, Where where);

  void put(int target, const void* data, const Region& region) override;
  void get(int target, void* out, const Region& region) override;
  void accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data, void* result,
                  const Region& region) override;
  void compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                        const Region& region) override;
  bool put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) override;
  bool get_direct(int target, void* out, uint64_t offset, uint64_t bytes) override;

 private:
  // Copies region between local (contiguous) and target's memory; false, having copied
  // nothing and switched target to the fallback, if the kernel refuses. RmaError if it stops
  // part way.
  bool copy(bool is_write, int target, void* local, const Region& region);
  std::vector<int> pids_;
  std::vector<uint64_t> bases_;
  Routes& routes_;
  Route& fallback_;
  Where where_;
};

}  // namespace rma
