// Move-only RAII handles over the libfabric objects the transport uses.
//
// Each handle shares ownership of its libfabric object with the handles of its children
// (a domain keeps its fabric alive, an endpoint its domain...), so objects are closed
// children-first whatever order the owners are destroyed in. Destructors never throw:
// a failing fi_close is reported on stderr. Every constructor throws FabricError.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rma::fabric {

// An fi_info list (hints we build, or what fi_getinfo returned).
class Info {
 public:
  Info() = default;
  explicit Info(fi_info* owned) noexcept : info_(owned) {}
  static Info allocate();  // empty hints from fi_allocinfo
  Info(Info&& other) noexcept : info_(std::exchange(other.info_, nullptr)) {}
  Info& operator=(Info&& other) noexcept;
  Info(const Info&) = delete;
  Info& operator=(const Info&) = delete;
  ~Info();

  fi_info* get() const noexcept { return info_; }
  fi_info* operator->() const noexcept { return info_; }
  explicit operator bool() const noexcept { return info_ != nullptr; }

 private:
  fi_info* info_ = nullptr;
};

// fi_getinfo for the given hints; node may be null. Throws FabricError naming the provider.
Info get_info(const Info& hints, const char* node, uint64_t flags);

// Common part of the handles: a shared, self-closing reference to one fid-based object.
template <class T>
class Handle {
 public:
  T* get() const noexcept { return object_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(object_); }
  // What children hold to keep this object alive.
  std::shared_ptr<void> keep_alive() const noexcept { return object_; }

  Handle(Handle&&) noexcept = default;
  Handle& operator=(Handle&&) noexcept = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

 protected:
  Handle() = default;
  Handle(T* raw, std::shared_ptr<void> parent, const char* kind);
  std::shared_ptr<T> object_;
};

class Fabric : public Handle<fid_fabric> {
 public:
  explicit Fabric(const fi_info* info);
};

class Domain : public Handle<fid_domain> {
 public:
  Domain(const Fabric& fabric, fi_info* info);
};

// What a CompletionQueue asks libfabric for: entries in this format, and how an idle rank may
// sleep on it. Named here once, for the queue and for `python -m rma --info`.
inline constexpr fi_cq_format kCompletionFormat = FI_CQ_FORMAT_DATA;
enum class CompletionWait {
  none,  // polled only (shm: its queues cannot sleep)
  fd,    // FI_WAIT_FD: the queue's own wait fd, armed by fi_trywait
  // FI_WAIT_SET: the queue signals a wait set of its own, whose fd is slept on, armed by
  // fi_wait(set, 0). For providers whose fi_trywait is a stub that clears nothing: libfabric
  // 1.17's net returns 0 from it and never resets the queue's signal, so after the first
  // completion the fd stayed readable and an idle rank's watcher woke without end (0.2-0.4 s
  // of CPU per second, measured). fi_wait runs the wait set's own check, which resets it.
  wait_set,
};
fi_wait_obj completion_wait_object(CompletionWait wait) noexcept;

// A set that completion queues signal (fi_wait_open with FI_WAIT_FD), see CompletionWait.
class WaitSet : public Handle<fid_wait> {
 public:
  explicit WaitSet(const Fabric& fabric);
};

// A completion queue in FI_CQ_FORMAT_DATA. Polled; with a wait object (CompletionWait), an
// idle rank can also sleep until it has work.
class CompletionQueue : public Handle<fid_cq> {
 public:
  // `fabric`: where the queue's wait set opens (CompletionWait::wait_set only).
  CompletionQueue(const Domain& domain, size_t size, CompletionWait wait = CompletionWait::none,
                  const Fabric* fabric = nullptr);
  // The fd that becomes readable when the queue may have work (poll it after try_wait), or -1.
  int wait_fd() const noexcept { return wait_fd_; }
  // True when nothing is pending, so that sleeping on wait_fd() misses nothing; false when the
  // queue must be read (or progressed) first (fi_trywait, or fi_wait on the queue's wait set).
  // Under the caller's lock of the queue's other users.
  bool try_wait(const Fabric& fabric);
  // Reads up to max entries; returns how many (0 when empty). An error entry makes this
  // read it with fi_cq_readerr and return -1 after copying it into *error. With `sources`
  // (a queue of an endpoint opened with FI_SOURCE), sources[i] receives the address the i-th
  // entry's message came from: its index in the address vector, or FI_ADDR_NOTAVAIL for an
  // address that is not in it (fi_cq_readfrom).
  long read(fi_cq_data_entry* entries, size_t max, fi_cq_err_entry* error, fi_addr_t* sources = nullptr);

 private:
  CompletionQueue(const Domain& domain, size_t size, CompletionWait wait, std::optional<WaitSet>&& set);
  std::optional<WaitSet> set_;  // (the queue's deleter keeps it open until the queue is closed)
  int wait_fd_ = -1;
};

// An address vector of type FI_AV_TABLE: the fi_addr_t of the i-th inserted name is i.
class AddressVector : public Handle<fid_av> {
 public:
  AddressVector(const Domain& domain, size_t count);
  // Inserts names in order (their lengths may differ); throws unless each got its rank's address.
  void insert(const std::vector<std::vector<std::byte>>& names);
};

class Endpoint : public Handle<fid_ep> {
 public:
  Endpoint(const Domain& domain, fi_info* info);
  void bind(const CompletionQueue& cq, uint64_t flags);
  void bind(const AddressVector& av);
  void enable();
  std::vector<std::byte> name() const;  // fi_getname: what peers insert into their AV
};

// A registered memory region. requested_key is used only when the provider does not choose
// keys itself (no FI_MR_PROV_KEY); bind_to is set when the provider wants FI_MR_ENDPOINT.
class MemoryRegion : public Handle<fid_mr> {
 public:
  MemoryRegion(const Domain& domain, void* base, size_t length, uint64_t access, uint64_t requested_key,
               const Endpoint* bind_to);
  uint64_t key() const noexcept { return fi_mr_key(get()); }
  // What a data-transfer call passes for a local buffer in this region (FI_MR_LOCAL).
  void* desc() const noexcept { return fi_mr_desc(get()); }
};

}  // namespace rma::fabric
