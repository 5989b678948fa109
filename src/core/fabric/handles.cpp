#include "fabric/handles.hpp"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fabric/check.hpp"
#include "fabric/libfabric_library.hpp"

namespace rma::fabric {

Info Info::allocate() {
  fi_info* hints = dupinfo(nullptr);  // (fi_allocinfo)
  if (hints == nullptr) throw FabricError("fi_allocinfo", FI_ENOMEM);
  return Info(hints);
}

Info& Info::operator=(Info&& other) noexcept {
  if (this != &other) {
    if (info_ != nullptr) freeinfo(info_);
    info_ = std::exchange(other.info_, nullptr);
  }
  return *this;
}

Info::~Info() {
  if (info_ != nullptr) freeinfo(info_);
}

Info get_info(const Info& hints, const char* node, uint64_t flags) {
  fi_info* found = nullptr;
  int rc = getinfo(FI_VERSION(1, 17), node, nullptr, flags, hints.get(), &found);
  const char* provider = hints->fabric_attr && hints->fabric_attr->prov_name ? hints->fabric_attr->prov_name : "any";
  check(rc, "fi_getinfo", std::string("provider ") + provider + " with FI_MSG|FI_RMA|FI_ATOMIC");
  return Info(found);
}

template <class T>
Handle<T>::Handle(T* raw, std::shared_ptr<void> parent, const char* kind)
    // The deleter owns the parent reference, so the parent outlives the child's fi_close.
    : object_(raw, [parent = std::move(parent), kind](T* object) {
        int rc = fi_close(&object->fid);
        if (rc != 0) {
          std::fprintf(stderr, "rma: fi_close(%s): %s\n", kind, error_text(-rc).c_str());
        }
      }) {}

template class Handle<fid_fabric>;
template class Handle<fid_domain>;
template class Handle<fid_cq>;
template class Handle<fid_wait>;
template class Handle<fid_av>;
template class Handle<fid_ep>;
template class Handle<fid_mr>;

namespace {
fid_fabric* open_fabric(const fi_info* info) {
  fid_fabric* fabric = nullptr;
  check(make_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
  return fabric;
}
}  // namespace

Fabric::Fabric(const fi_info* info) : Handle(open_fabric(info), nullptr, "fabric") {}

namespace {
fid_domain* open_domain(fid_fabric* fabric, fi_info* info) {
  fid_domain* domain = nullptr;
  check(fi_domain(fabric, info, &domain, nullptr), "fi_domain");
  return domain;
}

fid_cq* open_cq(fid_domain* domain, size_t size, CompletionWait wait, fid_wait* set) {
  fi_cq_attr attr{};
  attr.size = size;
  attr.format = kCompletionFormat;
  // shm's CQs cannot sleep on a wait object (its progress engine polls with backoff); tcp's
  // can, on an fd that also watches the connections' sockets.
  attr.wait_obj = completion_wait_object(wait);
  attr.wait_set = set;
  fid_cq* cq = nullptr;
  check(fi_cq_open(domain, &attr, &cq, nullptr), "fi_cq_open");
  return cq;
}

fid_wait* open_wait_set(fid_fabric* fabric) {
  fi_wait_attr attr{};
  attr.wait_obj = FI_WAIT_FD;
  fid_wait* set = nullptr;
  check(fi_wait_open(fabric, &attr, &set), "fi_wait_open");
  return set;
}

fid_av* open_av(fid_domain* domain, size_t count) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.count = count;
  fid_av* av = nullptr;
  check(fi_av_open(domain, &attr, &av, nullptr), "fi_av_open");
  return av;
}

fid_ep* open_endpoint(fid_domain* domain, fi_info* info) {
  fid_ep* ep = nullptr;
  check(fi_endpoint(domain, info, &ep, nullptr), "fi_endpoint");
  return ep;
}

fid_mr* register_region(fid_domain* domain, void* base, size_t length, uint64_t access, uint64_t requested_key) {
  fid_mr* mr = nullptr;
  check(fi_mr_reg(domain, base, length, access, 0, requested_key, 0, &mr, nullptr), "fi_mr_reg",
        std::to_string(length) + " bytes");
  return mr;
}
}  // namespace

Domain::Domain(const Fabric& fabric, fi_info* info)
    : Handle(open_domain(fabric.get(), info), fabric.keep_alive(), "domain") {}

fi_wait_obj completion_wait_object(CompletionWait wait) noexcept {
  switch (wait) {
    case CompletionWait::fd: return FI_WAIT_FD;
    case CompletionWait::wait_set: return FI_WAIT_SET;
    case CompletionWait::none: break;
  }
  return FI_WAIT_NONE;
}

WaitSet::WaitSet(const Fabric& fabric) : Handle(open_wait_set(fabric.get()), fabric.keep_alive(), "wait set") {}

CompletionQueue::CompletionQueue(const Domain& domain, size_t size, CompletionWait wait, const Fabric* fabric)
    : CompletionQueue(
          domain, size, wait,
          wait == CompletionWait::wait_set ? std::optional<WaitSet>(std::in_place, *fabric) : std::nullopt) {}

namespace {
// What a queue's deleter holds: its domain and, when it signals one, its wait set, both closed
// only after the queue.
std::shared_ptr<void> queue_parents(const Domain& domain, const std::optional<WaitSet>& set) {
  if (!set) return domain.keep_alive();
  return std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(domain.keep_alive(),
                                                                                   set->keep_alive());
}
}  // namespace

CompletionQueue::CompletionQueue(const Domain& domain, size_t size, CompletionWait wait, std::optional<WaitSet>&& set)
    : Handle(open_cq(domain.get(), size, wait, set ? set->get() : nullptr), queue_parents(domain, set),
             "completion queue"),
      set_(std::move(set)) {
  int fd = -1;
  fid* waited = set_ ? &set_->get()->fid : &get()->fid;
  if (wait != CompletionWait::none && fi_control(waited, FI_GETWAIT, &fd) == 0) wait_fd_ = fd;
}

bool CompletionQueue::try_wait(const Fabric& fabric) {
  // fi_wait with no time to wait runs the set's own check (which clears its signal) and says
  // -FI_ETIMEDOUT when nothing is pending; 0 (or an error) means poll first.
  if (set_) return fi_wait(set_->get(), 0) == -FI_ETIMEDOUT;
  fid* queue = &get()->fid;
  return fi_trywait(fabric.get(), &queue, 1) == 0;
}

long CompletionQueue::read(fi_cq_data_entry* entries, size_t max, fi_cq_err_entry* error, fi_addr_t* sources) {
  ssize_t n = sources != nullptr ? fi_cq_readfrom(get(), entries, max, sources) : fi_cq_read(get(), entries, max);
  if (n >= 0) return n;
  if (n == -FI_EAGAIN) return 0;
  if (n == -FI_EAVAIL) {
    std::memset(error, 0, sizeof(*error));
    check(fi_cq_readerr(get(), error, 0), "fi_cq_readerr");
    return -1;
  }
  check(n, sources != nullptr ? "fi_cq_readfrom" : "fi_cq_read");
  return 0;
}

AddressVector::AddressVector(const Domain& domain, size_t count)
    : Handle(open_av(domain.get(), count), domain.keep_alive(), "address vector") {}

void AddressVector::insert(const std::vector<std::vector<std::byte>>& names) {
  // One name at a time: names may differ in length (shm's embed the process id, which gains a
  // digit now and then), so they cannot go as one packed array. FI_AV_TABLE gives the i-th
  // inserted name the address i, which we check.
  //
  // fi_av_insert takes no length: the provider reads as much as its own format says (shm up
  // to the terminating NUL, tcp a whole sockaddr of the family the first bytes name). A name
  // that ends early for that format (a peer bound to another address family, a provider that
  // counts no terminator, a damaged address) would make it read past the bytes we hold; so
  // each name goes in from a copy followed by kSlack zero bytes, which end a string and fill
  // any socket address, and the provider takes it or refuses it without reading further.
  constexpr size_t kSlack = 256;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<std::byte> name(names[i].size() + kSlack, std::byte{0});
    std::copy(names[i].begin(), names[i].end(), name.begin());
    fi_addr_t address = FI_ADDR_NOTAVAIL;
    int inserted = fi_av_insert(get(), name.data(), 1, &address, 0, nullptr);
    check(inserted, "fi_av_insert", "endpoint of rank " + std::to_string(i));
    if (inserted != 1 || address != static_cast<fi_addr_t>(i)) {
      throw FabricError("fi_av_insert", FI_EINVAL,
                        "the endpoint of rank " + std::to_string(i) + " was not taken in rank order");
    }
  }
}

Endpoint::Endpoint(const Domain& domain, fi_info* info)
    : Handle(open_endpoint(domain.get(), info), domain.keep_alive(), "endpoint") {}

void Endpoint::bind(const CompletionQueue& cq, uint64_t flags) {
  check(fi_ep_bind(get(), &cq.get()->fid, flags), "fi_ep_bind(cq)");
}
void Endpoint::bind(const AddressVector& av) { check(fi_ep_bind(get(), &av.get()->fid, 0), "fi_ep_bind(av)"); }
void Endpoint::enable() { check(fi_enable(get()), "fi_enable"); }

std::vector<std::byte> Endpoint::name() const {
  std::vector<std::byte> name(256);
  size_t length = name.size();
  int rc = fi_getname(&get()->fid, name.data(), &length);
  if (rc == -FI_ETOOSMALL) {
    name.resize(length);
    rc = fi_getname(&get()->fid, name.data(), &length);
  }
  check(rc, "fi_getname");
  name.resize(length);
  return name;
}

MemoryRegion::MemoryRegion(const Domain& domain, void* base, size_t length, uint64_t access, uint64_t requested_key,
                           const Endpoint* bind_to)
    : Handle(register_region(domain.get(), base, length, access, requested_key),
             // An endpoint-bound region must be closed before its endpoint.
             bind_to != nullptr ? bind_to->keep_alive() : domain.keep_alive(), "memory region") {
  if (bind_to != nullptr) {
    check(fi_mr_bind(get(), &bind_to->get()->fid, 0), "fi_mr_bind");
    check(fi_mr_enable(get()), "fi_mr_enable");
  }
}

}  // namespace rma::fabric
