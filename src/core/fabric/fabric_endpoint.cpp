#include "fabric/fabric_endpoint.hpp"

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "base/errors.hpp"
#include "fabric/check.hpp"
#include "fabric/fabric_modes.hpp"
#include "fabric/libfabric_library.hpp"
#include "fabric/local_registrations.hpp"

namespace rma {

namespace {
constexpr size_t kReceiveBuffers = 32;
constexpr size_t kCompletionBatch = 16;

}  // namespace

// The context of one posted libfabric operation. Standard layout with the fi_context2 first,
// so the op_context libfabric hands back is the Operation's own address.
// Made and destroyed under the endpoint's mutex: its buffer's registration, and a one-sided
// operation's registration of its local buffer, are libfabric's (local_registrations.hpp).
struct FabricEndpoint::Operation {
  enum class Kind : uint8_t { Send, Receive, OneSided };
  fi_context2 context;
  Kind kind;
  int target;
  size_t length;
  fabric::LocalRegistrations* buffers;
  std::byte* data;  // send: header + payload; receive: landing buffer; one-sided: null
  void* desc;       // data's descriptor, or the one-sided operation's local buffer's (FI_MR_LOCAL)
  fabric::MemoryRegion* registration = nullptr;  // one-sided, FI_MR_LOCAL: of its local buffer

  Operation(Kind k, int t, size_t bytes, fabric::LocalRegistrations& local)
      : context{}, kind(k), target(t), length(bytes), buffers(&local), data(nullptr), desc(nullptr) {
    if (bytes == 0) return;
    auto [buffer, descriptor] = local.take_fragment_buffer(bytes);
    data = buffer;
    desc = descriptor;
  }
  ~Operation() {
    buffers->give_back(data);
    if (registration != nullptr) {
      buffers->forget(*registration);
      delete registration;
    }
  }
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;
  static Operation* from(void* op_context) { return static_cast<Operation*>(op_context); }
};

class FabricEndpoint::Region final : public LocalRegion {
 public:
  Region(fabric::MemoryRegion mr, RegionDescriptor descriptor) : mr_(std::move(mr)), descriptor_(descriptor) {}
  RegionDescriptor descriptor() const override { return descriptor_; }

 private:
  fabric::MemoryRegion mr_;
  RegionDescriptor descriptor_;
};

bool FabricEndpoint::provider_knows_no_sources(const std::string& provider) { return provider.rfind("shm", 0) == 0; }

fabric::Info FabricEndpoint::hints(const std::string& provider) {
  auto hints = fabric::Info::allocate();
  // FI_ATOMIC is asked for though rma posts no atomics (windows apply accumulates on the CPU):
  // dropping it would change which providers qualify, and what `rmarun --info` lists. Not of
  // bare tcp: libfabric 1.18 and newer serve it as an RDM endpoint of its own only without
  // FI_ATOMIC, and with it layer ofi_rxm over it (twice the latency, see find).
  hints->caps = FI_MSG | FI_RMA | (provider == "tcp" ? 0 : FI_ATOMIC);
  hints->ep_attr->type = FI_EP_RDM;
  // Every mode we can honour: FI_MR_LOCAL included (local_registrations.hpp), for the providers
  // that need descriptors for local buffers; tcp and shm take none of it.
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  // No msg_order: ordering requests disable shm's fast path and rxm refuses some; active
  // messages carry sequence numbers instead.
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());  // fi_freeinfo frees it
  return hints;
}

namespace {
// What fi_getinfo offers for exactly the provider named, bound to `node`: the hints, with
// FI_SOURCE where the provider has it.
fabric::Info find_named(const std::string& provider, const std::string& node) {
  fabric::Info hints = FabricEndpoint::hints(provider);
  const char* bind_to = node.empty() ? nullptr : node.c_str();
  // FI_SOURCE where the provider has it (shm and tcp;ofi_rxm do); else without, and the
  // runtime refuses to span hosts unless the user trusts the network (runtime.hpp).
  hints->caps |= FI_SOURCE;
  try {
    return fabric::get_info(hints, bind_to, bind_to ? FI_SOURCE : 0);
  } catch (const fabric::FabricError&) {
    hints->caps &= ~FI_SOURCE;
    return fabric::get_info(hints, bind_to, bind_to ? FI_SOURCE : 0);
  }
}
}  // namespace

fabric::Info FabricEndpoint::find(const std::string& provider, const std::string& node) {
  // "tcp" asks for the fastest RDM endpoint over TCP that this libfabric has. Its own one
  // (libfabric 1.17's net, renamed tcp in 1.18) carries a message in one send and one receive;
  // tcp;ofi_rxm, what 1.17's tcp is as an RDM endpoint, adds a layer and a wake-up signal per
  // completion. A raw fi_send ping-pong between two test-bed hosts, one way: net 4.7-4.9 us,
  // tcp;ofi_rxm 7.8-8.5 us; rma's barrier 7.7 against 15.8 us, get + flush 8 B 13.7 against 28.
  if (provider == "tcp") {
    try {
      fabric::Info found = find_named("net", node);
      if (found->fabric_attr->prov_name && std::string(found->fabric_attr->prov_name) == "net") return found;
    } catch (const fabric::FabricError&) {
      // (no net here: libfabric 1.18 or newer, whose bare tcp is that provider)
    }
  }
  return find_named(provider, node);
}

fabric::CompletionWait FabricEndpoint::completion_wait(const std::string& provider, bool sleep_fd) {
  if (!sleep_fd || provider.rfind("shm", 0) == 0) return fabric::CompletionWait::none;
  return provider == "net" ? fabric::CompletionWait::wait_set : fabric::CompletionWait::fd;
}

FabricEndpoint::FabricEndpoint(const std::string& provider, const std::string& node, Transport& owner,
                               MessageRouter& router, double timeout_seconds, bool sleep_fd, bool mr_strict)
    : owner_(owner),
      router_(router),
      timeout_seconds_(timeout_seconds),
      issued_(owner.size()),
      completed_(owner.size()),
      errors_(owner.size()) {
  static_assert(std::is_standard_layout_v<Operation>);
  info_.emplace(find(provider, node));
  fi_info* info = info_->get();
  provider_ = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : provider;
  mr_mode_ = info->domain_attr->mr_mode;
  // shm grants FI_SOURCE, but measured with libfabric 1.17, a process outside the job that
  // sends to a rank is reported as one of the job's addresses (tests/test_hostile.py). shm
  // reaches only this host, whose processes of the same user can write into the rank's memory
  // anyway (process_vm_writev): the operating system's boundary, not the provider's, keeps
  // strangers out there. So its sources count as unknown, and the header is believed.
  knows_sources_ = (info->caps & FI_SOURCE) != 0 && !provider_knows_no_sources(provider_);

  fabric_.emplace(info);
  domain_.emplace(*fabric_, info);
  completion_wait_ = completion_wait(provider_, sleep_fd);
  cq_.emplace(*domain_, 4096, completion_wait_, &*fabric_);
  av_.emplace(*domain_, static_cast<size_t>(owner.size()));
  endpoint_.emplace(*domain_, info);
  endpoint_->bind(*cq_, FI_TRANSMIT | FI_RECV);
  endpoint_->bind(*av_);
  endpoint_->enable();
  name_ = endpoint_->name();

  std::lock_guard lock(mutex_);
  local_.emplace(*domain_, (mr_mode_ & FI_MR_ENDPOINT) ? &*endpoint_ : nullptr, mr_mode_, mr_strict);
  for (size_t i = 0; i < kReceiveBuffers; ++i) {
    receives_.push_back(std::make_unique<Operation>(Operation::Kind::Receive, -1, kFragmentBytes, *local_));
    post_receive(receives_.back().get());
  }
}

ProviderModes FabricEndpoint::modes() const {
  uint64_t in_force = fabric::LocalRegistrations::mr_mode_in_force(mr_mode_, local_->strict());
  return fabric::modes_in_force(info_->get(), in_force, completion_wait_);
}

FabricEndpoint::~FabricEndpoint() {
  // Closing the endpoint cancels the posted receives and abandons unfinished sends, but their
  // buffers must not go: a peer may still copy a message out of them after we closed (shm's
  // receiver reads a large message from the sender's memory, process_vm_readv, when it gets to
  // it; measured: a window request sent just before a finalize arrived as the bytes that had
  // reused its buffer). They stay, reachable, until the process ends.
  static std::mutex abandoned_mutex;
  static auto* abandoned = new std::vector<std::unique_ptr<Operation>>();  // never destroyed
  std::lock_guard lock(mutex_);
  endpoint_.reset();
  av_.reset();
  cq_.reset();
  domain_.reset();
  fabric_.reset();
  std::lock_guard keep(abandoned_mutex);
  for (Operation* send : live_sends_) abandoned->emplace_back(send);
  if (!live_sends_.empty()) local_->abandon_memory();  // (their buffers, where it gave them)
}

void FabricEndpoint::connect(const std::vector<std::vector<std::byte>>& names) {
  std::lock_guard lock(mutex_);
  av_->insert(names);
}

void FabricEndpoint::post_receive(Operation* receive) {
  // A receive that cannot be reposted now (-FI_EAGAIN) is retried by the next poll.
  void* desc = receive->desc;  // (what is checked is what libfabric gets)
  local_->check("fi_recv", receive->data, receive->length, desc);
  ssize_t rc = fi_recv(endpoint_->get(), receive->data, receive->length, desc, FI_ADDR_UNSPEC, &receive->context);
  if (rc == -FI_EAGAIN) {
    unposted_receives_.push_back(receive);
    return;
  }
  fabric::check(rc, "fi_recv");
}

template <class Post>
void FabricEndpoint::post(int target, const char* call, Post&& try_post) {
  auto attempt = [&] {
    long rc;
    {
      std::lock_guard lock(mutex_);
      rc = try_post();
    }
    if (rc == 0) return true;
    if (rc != -FI_EAGAIN) fabric::check(rc, call, "to rank " + std::to_string(target));
    return false;
  };
  if (attempt()) return;
  // The provider's queues are full or the peer has not connected yet: progress (which frees
  // queue entries here, and lets a peer that waits for us go on), then retry.
  owner_.wait_until(
      attempt, Deadline::after(timeout_seconds_), std::span<const int>(&target, 1),
      [&] {
        return std::string(call) + " to rank " + std::to_string(target) + " (the provider refused it until then)";
      },
      nullptr, /*interruptible=*/false);
}

std::unique_ptr<LocalRegion> FabricEndpoint::register_region(void* base, size_t length) {
  std::lock_guard lock(mutex_);
  const fabric::Endpoint* bind_to = (mr_mode_ & FI_MR_ENDPOINT) ? &*endpoint_ : nullptr;
  fabric::MemoryRegion mr = fabric::register_memory(*domain_, bind_to, mr_mode_, base, length,
                                                    FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE);
  RegionDescriptor descriptor;
  descriptor.base = (mr_mode_ & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(base) : 0;
  descriptor.key = mr.key();
  descriptor.length = length;
  return std::make_unique<Region>(std::move(mr), descriptor);
}

void FabricEndpoint::transfer(bool is_write, int target, void* local, size_t length, const RemoteAddress& remote) {
  if (length == 0) return;  // shm with delivery-complete never completes a 0-byte write
  auto* op = new Operation(Operation::Kind::OneSided, target, 0, *local_);
  if (local_->descriptors()) {
    std::lock_guard lock(mutex_);
    try {
      op->registration = local_->register_for_call(local, length, is_write ? FI_WRITE : FI_READ).release();
    } catch (...) {
      delete op;
      throw;
    }
    op->desc = op->registration->desc();
  }
  iovec iov{local, length};
  fi_rma_iov rma{remote.region.base + remote.offset, length, remote.region.key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &op->desc;
  msg.iov_count = 1;
  msg.addr = static_cast<fi_addr_t>(target);
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &op->context;
  try {
    post(target, is_write ? "fi_writemsg" : "fi_readmsg", [&] {
      local_->check(is_write ? "fi_writemsg" : "fi_readmsg", msg.msg_iov[0].iov_base, msg.msg_iov[0].iov_len,
                    msg.desc[0]);
      ssize_t rc = is_write ? fi_writemsg(endpoint_->get(), &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION)
                            : fi_readmsg(endpoint_->get(), &msg, FI_COMPLETION);
      if (rc == 0) {
        ++issued_[target];  // counted for flush(target) once the provider took it
        ++in_flight_;
      }
      return rc;
    });
  } catch (...) {
    discard(op);
    throw;
  }
}

void FabricEndpoint::write(int target, const void* source, size_t length, const RemoteAddress& destination) {
  transfer(true, target, const_cast<void*>(source), length, destination);
}

void FabricEndpoint::read(int target, void* destination, size_t length, const RemoteAddress& source) {
  transfer(false, target, destination, length, source);
}

void FabricEndpoint::send(int target, FragmentHeader& header, MessageParts payload, bool first) {
  Operation* op = make_send(target, sizeof header + payload.size());
  payload.copy_to(op->data + sizeof header);
  post_send(op, &header, first);
}

void FabricEndpoint::send_as_is(int target, std::span<const std::byte> frame) {
  if (frame.size() > kFragmentBytes) throw UsageError("rma: a frame longer than a fragment");
  Operation* op = make_send(target, frame.size());
  if (!frame.empty()) std::memcpy(op->data, frame.data(), frame.size());
  post_send(op, nullptr, false);
}

void FabricEndpoint::post_send(Operation* op, FragmentHeader* header, bool first) {
  int target = op->target;
  try {
    post(target, "fi_send", [&] {
      ssize_t rc = -FI_EAGAIN;
      auto commit = [&] {
        // (The first fragment's number is set by now.)
        if (header != nullptr) std::memcpy(op->data, header, sizeof *header);
        void* desc = op->desc;
        local_->check("fi_send", op->data, op->length, desc);
        rc = fi_send(endpoint_->get(), op->data, op->length, desc, static_cast<fi_addr_t>(target), &op->context);
        return rc == 0;
      };
      if (first) {
        router_.commit_first(target, *header, commit);
      } else {
        commit();
      }
      if (rc == 0) {
        live_sends_.insert(op);
        ++sends_outstanding_;
        ++in_flight_;
      }
      return rc;
    });
  } catch (...) {
    discard(op);
    throw;
  }
}

FabricEndpoint::Operation* FabricEndpoint::make_send(int target, size_t bytes) {
  if (!local_->descriptors()) return new Operation(Operation::Kind::Send, target, bytes, *local_);
  std::lock_guard lock(mutex_);  // (a new slab is a registration)
  return new Operation(Operation::Kind::Send, target, bytes, *local_);
}

void FabricEndpoint::discard(Operation* op) {
  if (!local_->descriptors()) {
    delete op;
    return;
  }
  std::lock_guard lock(mutex_);  // (closing its registration is a libfabric call)
  delete op;
}

void FabricEndpoint::retire(Operation* op) {
  if (op->kind == Operation::Kind::Send) {
    live_sends_.erase(op);
    --sends_outstanding_;
  } else {
    ++completed_[op->target];
  }
  --in_flight_;
  delete op;
}

bool FabricEndpoint::poll(Fragments& arrived) {
  fi_cq_data_entry entries[kCompletionBatch];
  fi_addr_t sources[kCompletionBatch];
  fi_cq_err_entry error;
  std::lock_guard lock(mutex_);
  if (!cq_) return false;
  for (size_t i = unposted_receives_.size(); i > 0; --i) {
    Operation* receive = unposted_receives_.back();
    unposted_receives_.pop_back();
    post_receive(receive);
  }
  long count = cq_->read(entries, kCompletionBatch, &error, knows_sources_ ? sources : nullptr);
  if (count < 0) {
    // An error entry (entries[] was not filled).
    Operation* op = Operation::from(error.op_context);
    char detail[256] = {0};
    fi_cq_strerror(cq_->get(), error.prov_errno, error.err_data, detail, sizeof detail);
    std::string text = fabric::error_text(error.err) + (detail[0] ? std::string(": ") + detail : "");
    if (op == nullptr) {
      std::fprintf(stderr, "rma: completion error without context: %s\n", text.c_str());
    } else if (op->kind == Operation::Kind::Receive) {
      if (error.err != FI_ECANCELED) post_receive(op);
    } else {
      bool send = op->kind == Operation::Kind::Send;
      std::string failure = std::string(send ? "message" : "one-sided operation") + " to rank " +
                            std::to_string(op->target) + " failed: " + text;
      // A lost fragment leaves a message its target can never complete.
      if (send) router_.break_route(op->target, failure);
      std::string& first = errors_[op->target];
      if (first.empty()) first = std::move(failure);
      retire(op);
    }
    return true;
  }
  for (long i = 0; i < count; ++i) {
    fi_cq_data_entry& entry = entries[i];
    Operation* op = Operation::from(entry.op_context);
    if (op->kind != Operation::Kind::Receive) {
      retire(op);
      continue;
    }
    take_fragment(*op, entry.len, knows_sources_ ? sources[i] : FI_ADDR_NOTAVAIL, arrived);
    post_receive(op);
  }
  return count > 0;
}

void FabricEndpoint::take_fragment(const Operation& receive, size_t bytes, fi_addr_t source, Fragments& arrived) {
  if (knows_sources_ && (source == FI_ADDR_NOTAVAIL || source >= static_cast<fi_addr_t>(owner_.size()))) {
    // Not one of the job's ranks: not a byte of it is read. Said once, for whoever wonders
    // where the traffic goes; counted (dropped_from_outside).
    if (dropped_from_outside_.fetch_add(1) == 0) {
      std::fprintf(stderr,
                   "rma: rank %d: dropped a message from an address outside the job (further ones are dropped "
                   "silently)\n",
                   owner_.rank());
    }
    return;
  }
  int from = knows_sources_ ? static_cast<int>(source) : -1;
  if (bytes > receive.length) {  // (a provider that wrote past the buffer it was given)
    if (from >= 0) router_.reject(from, "a " + std::to_string(bytes) + "-byte message, longer than a fragment");
    return;
  }
  router_.admit(from, {receive.data, bytes}, arrived);
}

bool FabricEndpoint::idle(int target) {
  std::lock_guard lock(mutex_);
  return completed_[target] == issued_[target];
}

void FabricEndpoint::flush(int target, const Deadline& deadline) {
  owner_.wait_until([&] { return idle(target); }, deadline, std::span<const int>(&target, 1),
                    [&] { return "flush of rank " + std::to_string(target); });
  std::string failure;
  {
    std::lock_guard lock(mutex_);
    failure.swap(errors_[target]);
  }
  if (!failure.empty()) throw RmaError("rma: rank " + std::to_string(owner_.rank()) + ": " + failure);
}

void FabricEndpoint::flush_sends(const Deadline& deadline) {
  std::vector<int> everyone(owner_.size());
  for (int i = 0; i < owner_.size(); ++i) everyone[i] = i;
  owner_.wait_until([&] { return sends_outstanding_.load() == 0; }, deadline, everyone,
                    [] { return std::string("flush_sends (waiting for its messages to leave)"); });
}

bool FabricEndpoint::ready_to_sleep() {
  std::lock_guard lock(mutex_);
  return cq_->try_wait(*fabric_);
}

}  // namespace rma
