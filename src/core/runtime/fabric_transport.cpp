#include "runtime/fabric_transport.hpp"

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>
#include <unordered_set>

#include "errors.hpp"
#include "fabric/check.hpp"

namespace rma {

namespace {
constexpr size_t kReceiveBuffers = 32;
constexpr size_t kFragmentBytes = FabricTransport::kFragmentPayload + sizeof(FragmentHeader);
constexpr size_t kCompletionBatch = 16;

// Set while this thread dispatches active messages, so that a handler that sends (and so
// makes progress) does not dispatch re-entrantly.
thread_local bool t_delivering = false;
}  // namespace

// The context of one posted libfabric operation. Standard layout with the fi_context2 first,
// so the op_context libfabric hands back is the Operation's own address.
struct FabricTransport::Operation {
  enum class Kind : uint8_t { Send, Receive, OneSided };
  fi_context2 context;
  Kind kind;
  int target;
  size_t length;
  std::byte* data;  // send: header + payload; receive: landing buffer; one-sided: null

  Operation(Kind k, int t, size_t bytes)
      : context{}, kind(k), target(t), length(bytes), data(bytes ? new std::byte[bytes] : nullptr) {}
  ~Operation() { delete[] data; }
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;
  static Operation* from(void* op_context) { return static_cast<Operation*>(op_context); }
};

class FabricTransport::Region final : public LocalRegion {
 public:
  Region(fabric::MemoryRegion mr, RegionDescriptor descriptor)
      : mr_(std::move(mr)), descriptor_(descriptor) {}
  RegionDescriptor descriptor() const override { return descriptor_; }

 private:
  fabric::MemoryRegion mr_;
  RegionDescriptor descriptor_;
};

fabric::Info FabricTransport::hints(const std::string& provider) {
  auto hints = fabric::Info::allocate();
  // FI_ATOMIC is asked for though rma posts no atomics (windows apply accumulates on the CPU):
  // dropping it would change which providers qualify, and what `rmarun --info` lists.
  hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
  hints->ep_attr->type = FI_EP_RDM;
  // Every mode we can honour; FI_MR_LOCAL is left out so origin buffers need no registration.
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
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

FabricTransport::FabricTransport(const FabricOptions& options)
    : Transport(options.rank, options.size),
      issued_(options.size),
      completed_(options.size),
      errors_(options.size),
      next_sequence_(options.size),
      assembler_(options.size),
      timeout_seconds_(options.timeout_seconds),
      inbox_messages_(options.inbox_messages) {
  static_assert(std::is_standard_layout_v<Operation>);
  fabric::Info hints = FabricTransport::hints(options.provider);
  const char* node = options.node.empty() ? nullptr : options.node.c_str();
  info_.emplace(fabric::get_info(hints, node, node ? FI_SOURCE : 0));
  fi_info* info = info_->get();
  provider_ = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : options.provider;
  mr_mode_ = info->domain_attr->mr_mode;

  fabric_.emplace(info);
  domain_.emplace(*fabric_, info);
  cq_.emplace(*domain_, 4096);
  av_.emplace(*domain_, static_cast<size_t>(options.size));
  endpoint_.emplace(*domain_, info);
  endpoint_->bind(*cq_, FI_TRANSMIT | FI_RECV);
  endpoint_->bind(*av_);
  endpoint_->enable();
  address_ = endpoint_->name();
  inbox_ = ShmInbox::create(options.size);
  push_mutexes_.reset(new std::mutex[options.size]);

  std::lock_guard lock(fabric_mutex_);
  for (size_t i = 0; i < kReceiveBuffers; ++i) {
    receives_.push_back(std::make_unique<Operation>(Operation::Kind::Receive, -1, kFragmentBytes));
    post_receive(receives_.back().get());
  }
}

FabricTransport::~FabricTransport() {
  // Closing the endpoint cancels the posted receives and abandons unfinished sends; only then
  // may their buffers go.
  std::lock_guard lock(fabric_mutex_);
  endpoint_.reset();
  av_.reset();
  cq_.reset();
  domain_.reset();
  fabric_.reset();
  for (Operation* send : live_sends_) delete send;
}

std::vector<std::byte> FabricTransport::address() const {
  // The endpoint's name, then the inbox's name and its length in the last byte.
  std::vector<std::byte> address = address_;
  const std::string& inbox = inbox_->name();
  for (char c : inbox) address.push_back(static_cast<std::byte>(c));
  address.push_back(static_cast<std::byte>(inbox.size()));
  return address;
}

void FabricTransport::connect(const std::vector<std::vector<std::byte>>& addresses) {
  if (addresses.size() != static_cast<size_t>(size())) {
    throw UsageError("rma: connect needs " + std::to_string(size()) + " endpoint names, got " +
                     std::to_string(addresses.size()));
  }
  std::vector<std::vector<std::byte>> names;
  peer_inboxes_.assign(size(), nullptr);
  every_peer_rings_ = true;
  for (int peer = 0; peer < size(); ++peer) {
    const auto& address = addresses[peer];
    size_t inbox_length = address.empty() ? 0 : static_cast<size_t>(address.back());
    if (address.size() < inbox_length + 1) throw UsageError("rma: connect: rank " + std::to_string(peer) + "'s address is malformed");
    size_t name_length = address.size() - inbox_length - 1;
    names.emplace_back(address.begin(), address.begin() + static_cast<std::ptrdiff_t>(name_length));
    if (peer == rank()) continue;
    std::string inbox(reinterpret_cast<const char*>(address.data()) + name_length, inbox_length);
    try {
      peer_inboxes_[peer] = ShmInbox::open(inbox, size());
    } catch (const RmaError&) {
      every_peer_rings_ = false;  // another host: messages go through the fabric, and cannot wake us
    }
  }
  std::lock_guard lock(fabric_mutex_);
  av_->insert(names);
  connected_ = true;
}

Bell* FabricTransport::incoming_bell() { return every_peer_rings_ ? &inbox_->bell() : nullptr; }

void FabricTransport::ring(int target) {
  if (target >= 0 && target < static_cast<int>(peer_inboxes_.size()) && peer_inboxes_[target]) {
    peer_inboxes_[target]->bell().ring();
  }
}

void FabricTransport::push(int target, std::span<const std::byte> header, std::span<const std::byte> payload) {
  ShmInbox& inbox = *peer_inboxes_[target];
  Deadline deadline = Deadline::after(timeout_seconds_);
  Backoff backoff;
  for (;;) {
    {
      std::lock_guard lock(push_mutexes_[target]);
      if (inbox.try_push(rank(), header, payload)) return;
    }
    // Full: the target is behind. Wake it, take in our own messages meanwhile (it may be
    // waiting to send to us), and retry; the lock is not held here, as handlers send too.
    ring(target);
    if (progress()) backoff.reset();
    std::string what = "a message to rank " + std::to_string(target);
    peers().check(target, rank(), what);
    if (deadline.expired()) {
      throw TimeoutError("rma: " + what + " on rank " + std::to_string(rank()) +
                         " found its inbox full until the deadline (RMA_TIMEOUT)");
    }
    backoff.idle();
  }
}

void FabricTransport::check_target(int target, const char* call) const {
  if (target < 0 || target >= size()) {
    throw UsageError(std::string("rma: ") + call + ": rank " + std::to_string(target) +
                     " is not in the job (size " + std::to_string(size()) + ")");
  }
  if (!connected_) throw RmaError(std::string("rma: ") + call + " before the job was connected");
}

void FabricTransport::post_receive(Operation* receive) {
  // Called under fabric_mutex_. A receive that cannot be reposted now (-FI_EAGAIN) is
  // retried by the next pass of progress.
  ssize_t rc = fi_recv(endpoint_->get(), receive->data, receive->length, nullptr,
                       FI_ADDR_UNSPEC, &receive->context);
  if (rc == -FI_EAGAIN) {
    unposted_receives_.push_back(receive);
    return;
  }
  fabric::check(rc, "fi_recv");
}

template <class Post>
void FabricTransport::post(int target, const char* call, Post&& try_post) {
  Deadline deadline = Deadline::after(timeout_seconds_);
  Backoff backoff;
  for (;;) {
    long rc;
    {
      std::lock_guard lock(fabric_mutex_);
      rc = try_post();
    }
    if (rc == 0) {
      ring(target);
      return;
    }
    if (rc != -FI_EAGAIN) fabric::check(rc, call, "to rank " + std::to_string(target));
    // The provider's queues are full or the peer has not connected yet: progress, then retry.
    if (progress()) backoff.reset();
    std::string what = std::string(call) + " to rank " + std::to_string(target);
    peers().check(target, rank(), what);
    if (deadline.expired()) {
      throw TimeoutError("rma: " + what + " on rank " + std::to_string(rank()) +
                         " could not be posted within the deadline (RMA_TIMEOUT)");
    }
    backoff.idle();
  }
}

std::unique_ptr<LocalRegion> FabricTransport::register_region(void* base, size_t length) {
  uint64_t key = (mr_mode_ & FI_MR_PROV_KEY) ? 0 : next_key_.fetch_add(1);
  std::lock_guard lock(fabric_mutex_);
  const fabric::Endpoint* bind_to = (mr_mode_ & FI_MR_ENDPOINT) ? &*endpoint_ : nullptr;
  fabric::MemoryRegion mr(*domain_, base, length,
                          FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, key, bind_to);
  RegionDescriptor descriptor;
  descriptor.base = (mr_mode_ & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(base) : 0;
  descriptor.key = mr.key();
  descriptor.length = length;
  return std::make_unique<Region>(std::move(mr), descriptor);
}

template <class Post>
void FabricTransport::post_one_sided(int target, const char* call, Operation* op, Post&& try_post) {
  try {
    post(target, call, [&] {
      long rc = try_post();
      if (rc == 0) {
        ++issued_[target];  // counted for flush(target) once the provider took it
        ++fabric_in_flight_;
      }
      return rc;
    });
  } catch (...) {
    delete op;
    throw;
  }
}

void FabricTransport::transfer(bool is_write, int target, void* local, size_t length,
                               const RemoteAddress& remote) {
  const char* call = is_write ? "fi_writemsg" : "fi_readmsg";
  check_target(target, call);
  if (length == 0) return;  // shm with delivery-complete never completes a 0-byte write
  auto* op = new Operation(Operation::Kind::OneSided, target, 0);
  iovec iov{local, length};
  fi_rma_iov rma{remote.region.base + remote.offset, length, remote.region.key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = static_cast<fi_addr_t>(target);
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &op->context;
  post_one_sided(target, call, op, [&] {
    return is_write ? fi_writemsg(endpoint_->get(), &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION)
                    : fi_readmsg(endpoint_->get(), &msg, FI_COMPLETION);
  });
}

void FabricTransport::write(int target, const void* source, size_t length,
                            const RemoteAddress& destination) {
  transfer(true, target, const_cast<void*>(source), length, destination);
}

void FabricTransport::read(int target, void* destination, size_t length,
                           const RemoteAddress& source) {
  transfer(false, target, destination, length, source);
}

void FabricTransport::set_handler(uint16_t id, ActiveMessageHandler handler) {
  std::lock_guard lock(delivery_mutex_);
  if (handlers_.size() <= id) handlers_.resize(id + 1);
  handlers_[id] = std::move(handler);
}

void FabricTransport::send(int target, uint16_t handler, std::span<const std::byte> payload) {
  check_target(target, "send");
  uint64_t sequence;
  {
    std::lock_guard lock(sequence_mutex_);
    sequence = next_sequence_[target]++;
  }
  FragmentHeader header{static_cast<uint32_t>(rank()), handler, 0, sequence, 0, payload.size()};
  if (target == rank()) {
    // To itself a message needs no fabric and no fragmenting.
    std::vector<std::pair<FragmentHeader, std::vector<std::byte>>> local;
    local.emplace_back(header, std::vector<std::byte>(payload.begin(), payload.end()));
    deliver(std::move(local));
    return;
  }
  if (inbox_messages_ && peer_inboxes_[target]) {
    // A rank of this host: fragments go straight into its inbox.
    size_t offset = 0;
    do {
      size_t chunk = std::min(kFragmentPayload, payload.size() - offset);
      header.offset = offset;
      push(target, std::as_bytes(std::span(&header, 1)), payload.subspan(offset, chunk));
      offset += chunk;
    } while (offset < payload.size());
    ring(target);
    return;
  }
  size_t offset = 0;
  do {
    size_t chunk = std::min(kFragmentPayload, payload.size() - offset);
    header.offset = offset;
    auto* op = new Operation(Operation::Kind::Send, target, sizeof header + chunk);
    std::memcpy(op->data, &header, sizeof header);
    if (chunk) std::memcpy(op->data + sizeof header, payload.data() + offset, chunk);
    try {
      post(target, "fi_send", [&] {
        ssize_t rc = fi_send(endpoint_->get(), op->data, op->length, nullptr,
                             static_cast<fi_addr_t>(target), &op->context);
        if (rc == 0) {
          live_sends_.insert(op);
          ++sends_outstanding_;
          ++fabric_in_flight_;
        }
        return rc;
      });
    } catch (...) {
      delete op;
      throw;
    }
    offset += chunk;
  } while (offset < payload.size());
}

bool FabricTransport::progress() {
  fi_cq_data_entry entries[kCompletionBatch];
  fi_cq_err_entry error;
  std::vector<std::pair<FragmentHeader, std::vector<std::byte>>> arrived;
  long count = 0;
  // When every peer's messages come through the inbox and nothing of ours is in flight, the
  // fabric has little to say (a peer's one-sided operation on our memory, now and then): a
  // completion-queue read costs more than the inbox, so it is polled every kFabricPollEvery.
  bool fabric_due = !(inbox_messages_ && every_peer_rings_) || fabric_in_flight_.load() != 0 ||
                    ++passes_ % kFabricPollEvery == 0;
  if (fabric_due) {
    std::lock_guard lock(fabric_mutex_);
    if (!cq_) return false;
    for (size_t i = unposted_receives_.size(); i > 0; --i) {
      Operation* receive = unposted_receives_.back();
      unposted_receives_.pop_back();
      post_receive(receive);
    }
    count = cq_->read(entries, kCompletionBatch, &error);
    bool error_read = count < 0;
    if (error_read) {
      Operation* op = Operation::from(error.op_context);
      char detail[256] = {0};
      fi_cq_strerror(cq_->get(), error.prov_errno, error.err_data, detail, sizeof detail);
      std::string text = std::string(fi_strerror(error.err)) + (detail[0] ? std::string(": ") + detail : "");
      if (op == nullptr) {
        std::fprintf(stderr, "rma: completion error without context: %s\n", text.c_str());
      } else if (op->kind == Operation::Kind::Receive) {
        if (error.err != FI_ECANCELED) post_receive(op);
      } else {
        std::string& first = errors_[op->target];
        if (first.empty()) {
          first = std::string(op->kind == Operation::Kind::Send ? "message" : "one-sided operation") +
                  " to rank " + std::to_string(op->target) + " failed: " + text;
        }
        if (op->kind == Operation::Kind::Send) {
          live_sends_.erase(op);
          --sends_outstanding_;
          --fabric_in_flight_;
        } else {
          ++completed_[op->target];
          --fabric_in_flight_;
        }
        delete op;
      }
      count = 1;
    }
    // (count is 1 after an error entry, whose entries[] were not filled)
    if (count > 0 && !error_read) {
      for (long i = 0; i < count; ++i) {
        fi_cq_data_entry& entry = entries[i];
        Operation* op = Operation::from(entry.op_context);
        switch (op->kind) {
          case Operation::Kind::Receive: {
            if (entry.len < sizeof(FragmentHeader)) {
              std::fprintf(stderr, "rma: dropped a %zu-byte message without header\n", entry.len);
            } else {
              FragmentHeader header;
              std::memcpy(&header, op->data, sizeof header);
              arrived.emplace_back(header, std::vector<std::byte>(op->data + sizeof header,
                                                                  op->data + entry.len));
            }
            post_receive(op);
            break;
          }
          case Operation::Kind::Send:
            live_sends_.erase(op);
            --sends_outstanding_;
            --fabric_in_flight_;
            delete op;
            break;
          case Operation::Kind::OneSided:
            ++completed_[op->target];
            --fabric_in_flight_;
            delete op;
            break;
        }
      }
    }
  }
  // Messages from the ranks of this host.
  size_t from_inbox = 0;
  if (std::unique_lock drain(drain_mutex_, std::try_to_lock); drain.owns_lock()) {
    from_inbox = inbox_->drain([&](std::span<const std::byte> fragment) {
      FragmentHeader header;
      std::memcpy(&header, fragment.data(), sizeof header);
      arrived.emplace_back(header, std::vector<std::byte>(fragment.begin() + sizeof header, fragment.end()));
    });
  }
  bool waiting = has_pending_.load(std::memory_order_acquire);
  if (!arrived.empty() || waiting) deliver(std::move(arrived));
  return count > 0 || from_inbox > 0;
}

void FabricTransport::deliver(
    std::vector<std::pair<FragmentHeader, std::vector<std::byte>>>&& fragments) {
  if (!fragments.empty()) {
    std::lock_guard lock(pending_mutex_);
    for (auto& fragment : fragments) pending_.push_back(std::move(fragment));
    has_pending_.store(true, std::memory_order_release);
  }
  // A handler that sends may get here again on its own thread: leave the fragments for the
  // dispatch loop already running below us.
  if (t_delivering) return;
  for (;;) {
    std::unique_lock delivery(delivery_mutex_, std::try_to_lock);
    if (!delivery.owns_lock()) return;  // the thread that owns it dispatches ours too
    t_delivering = true;
    for (;;) {
      std::vector<std::pair<FragmentHeader, std::vector<std::byte>>> batch;
      {
        std::lock_guard lock(pending_mutex_);
        batch.swap(pending_);
        has_pending_.store(false, std::memory_order_release);
      }
      if (batch.empty()) break;
      std::vector<ActiveMessage> ready;
      for (auto& [header, payload] : batch) {
        try {
          assembler_.add(header, payload, ready);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
        }
      }
      for (auto& message : ready) {
        if (message.handler >= handlers_.size() || !handlers_[message.handler]) {
          std::fprintf(stderr, "rma: rank %d: no handler %u for a message from rank %d\n", rank(),
                       message.handler, message.source);
          continue;
        }
        try {
          handlers_[message.handler](message.source, std::move(message.payload));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "rma: rank %d: active-message handler %u failed: %s\n", rank(),
                       message.handler, e.what());
        }
      }
    }
    t_delivering = false;
    delivery.unlock();
    // Fragments queued while we were finishing would otherwise wait for the next progress pass.
    if (!has_pending_.load(std::memory_order_acquire)) return;
  }
}

bool FabricTransport::idle(int target) {
  check_target(target, "idle");
  std::lock_guard lock(fabric_mutex_);
  return completed_[target] == issued_[target];
}

void FabricTransport::flush(int target, const Deadline& deadline) {
  check_target(target, "flush");
  wait_until(
      [&] {
        std::lock_guard lock(fabric_mutex_);
        return completed_[target] == issued_[target];
      },
      deadline, std::span<const int>(&target, 1),
      [&] { return "flush of rank " + std::to_string(target); });
  std::string failure;
  {
    std::lock_guard lock(fabric_mutex_);
    failure.swap(errors_[target]);
  }
  if (!failure.empty()) throw RmaError("rma: rank " + std::to_string(rank()) + ": " + failure);
}

void FabricTransport::flush_sends(const Deadline& deadline) {
  std::vector<int> everyone(size());
  for (int i = 0; i < size(); ++i) everyone[i] = i;
  wait_until([&] { return sends_outstanding_.load() == 0; }, deadline, everyone,
             [] { return std::string("flush_sends (waiting for its messages to leave)"); });
}

}  // namespace rma
