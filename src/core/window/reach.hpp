// How this rank reaches one target's window memory: the second half of every communication
// call, after the Window admitted it (epoch and range checked). A window picks a Reach per
// target when it is created (Routes, indexed by rank), so that one window can reach its
// same-host peers through shared memory and the others through the fabric:
//   MappedReach  the target's memory is mapped here (a shared window): memcpy, and the
//                accumulate family as plain loops under the target's accumulate lock;
//   VmReach      the target's memory is another process's on this host (a same-host create()
//                window): puts and gets are process_vm_writev/readv; accumulates go to the fabric;
//   FabricReach  libfabric: native RMA for large contiguous transfers, active messages for
//                the rest and for dynamic windows (reach_fabric.hpp).
// A Reach only moves data: it throws RmaError/PeerError/TimeoutError from the transport, never
// EpochError or RangeError (the admission's business).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/shared_segment.hpp"
#include "window/reduce.hpp"
#include "window/region.hpp"

namespace rma {

class SharedControl;

// Names a call for error messages: where(call, target) as Epochs::where spells it.
using Where = std::function<std::string(const char* call, int target)>;

class Reach {
 public:
  virtual ~Reach() = default;

  // Whether a call through this reach is complete (at origin and target) when it returns:
  // then nothing is in flight at the fabric for the target, and completing needs no flush.
  bool immediate() const noexcept { return immediate_; }
  // Whether the *_direct calls below can ever succeed (the direct path asks before admitting).
  bool copies_directly() const noexcept { return copies_directly_; }
  bool applies_directly() const noexcept { return applies_directly_; }
  // Where target's memory is mapped in this process, or null: the direct path copies there
  // itself, without a virtual call (it is the ~30 ns path from Python).
  std::byte* mapped(int target) const noexcept { return mapped_ == nullptr ? nullptr : mapped_[target]; }

  // The general calls: region is admitted and lies inside the target's exposed memory; local
  // buffers hold its elements contiguously and stay alive until the epoch's synchronization.
  virtual void put(int target, const void* data, const Region& region) = 0;
  virtual void get(int target, void* out, const Region& region) = 0;
  // accumulate (result null) or get_accumulate; op fits type (checked by the caller).
  virtual void accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data,
                          void* result, const Region& region) = 0;
  // One element.
  virtual void compare_and_swap(int target, ElementType type, const void* data, const void* compare,
                                void* result, const Region& region) = 0;

  // The direct path: one admitted contiguous run of bytes at offset, inside the target's
  // window. True when done and complete; false with nothing done when this reach cannot do
  // it now (then the general path takes the call).
  virtual bool put_direct(int, const void*, uint64_t, uint64_t) { return false; }
  virtual bool get_direct(int, void*, uint64_t, uint64_t) { return false; }
  virtual bool accumulate_direct(int, ReduceOp, ElementType, const void*, void*, uint64_t, uint64_t) { return false; }
  virtual bool compare_and_swap_direct(int, ElementType, const void*, const void*, void*, uint64_t) { return false; }

 protected:
  Reach(bool immediate, bool copies_directly, bool applies_directly)
      : immediate_(immediate), copies_directly_(copies_directly), applies_directly_(applies_directly) {}
  std::byte* const* mapped_ = nullptr;  // by target, for mapped()

 private:
  const bool immediate_, copies_directly_, applies_directly_;
};

// The reach of each target, by rank. Only the caller's thread reads or changes it.
using Routes = std::vector<Reach*>;

// A shared window's peers: every segment is mapped here.
class MappedReach final : public Reach {
 public:
  // segments: every rank's, by rank; control: the window's control block (accumulate locks).
  MappedReach(std::vector<std::shared_ptr<SharedSegment>> segments, SharedControl& control);
  std::byte* memory(int target) const { return bases_[target]; }

  void put(int target, const void* data, const Region& region) override;
  void get(int target, void* out, const Region& region) override;
  void accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data, void* result,
                  const Region& region) override;
  void compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                        const Region& region) override;
  bool put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) override;
  bool get_direct(int target, void* out, uint64_t offset, uint64_t bytes) override;
  bool accumulate_direct(int target, ReduceOp op, ElementType type, const void* data, void* result,
                         uint64_t offset, uint64_t bytes) override;
  bool compare_and_swap_direct(int target, ElementType type, const void* data, const void* compare,
                               void* result, uint64_t offset) override;

 private:
  void swap_at(int target, ElementType type, size_t element, const void* data, const void* compare, void* result,
               uint64_t offset);
  std::vector<std::shared_ptr<SharedSegment>> segments_;
  std::vector<std::byte*> bases_;  // segments_[rank]->data()
  SharedControl& control_;
};

// A same-host create() window's peers: another process's memory, copied with process_vm_*.
// When the kernel refuses (ptrace rules, a non-dumpable process), the target's route switches
// to `fallback` for good and the call goes there; the accumulate family always does.
class VmReach final : public Reach {
 public:
  // pids and bases: each rank's process and its window memory's address there, by rank.
  VmReach(std::vector<int> pids, std::vector<uint64_t> bases, Routes& routes, Reach& fallback, Where where);

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
  Reach& fallback_;
  Where where_;
};

}  // namespace rma
