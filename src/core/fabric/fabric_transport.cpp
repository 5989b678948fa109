// FabricTransport: the endpoint (fabric_endpoint.hpp) for one-sided operations and for
// messages to other hosts, the inbox link (inbox_link.hpp) for messages to the ranks of this
// host, and the router (message_router.hpp) that numbers messages and hands arrived ones to
// their handlers.
#include "fabric/fabric_transport.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "fabric/fabric_endpoint.hpp"
#include "fabric/fabric_watcher.hpp"
#include "host/inbox_link.hpp"
#include "messages/message_router.hpp"

namespace rma {

namespace {

// Memory of a transport without an endpoint: nothing to register, and peers reach it through
// messages (FabricRoute), which need only its bounds.
class UnregisteredRegion final : public LocalRegion {
 public:
  UnregisteredRegion(void* base, size_t length) : base_(reinterpret_cast<uint64_t>(base)), length_(length) {}
  RegionDescriptor descriptor() const override { return {.base = base_, .key = 0, .length = length_}; }

 private:
  uint64_t base_, length_;
};

std::unique_ptr<FabricEndpoint> open_endpoint(const FabricOptions& options, Transport& owner, MessageRouter& router) {
  if (!options.fabric) {
    if (!options.inbox_messages) throw UsageError("rma: a transport without a libfabric endpoint needs the inboxes");
    return nullptr;
  }
  return std::make_unique<FabricEndpoint>(options.provider, options.node, owner, router, options.timeout_seconds,
                                          options.fabric_sleep, options.mr_strict);
}

class FabricTransport final : public Transport {
 public:
  explicit FabricTransport(const FabricOptions& options)
      : Transport(options.rank, options.size),
        router_(options.rank, options.size, peers()),
        endpoint_(open_endpoint(options, *this, router_)),
        link_(*this, router_, options.timeout_seconds),
        inbox_messages_(options.inbox_messages),
        trust_network_(options.trust_network) {}

  std::vector<std::byte> address() const override;
  void connect(const std::vector<std::vector<std::byte>>& addresses, const Topology& topology) override;
  std::string provider() const override { return endpoint_ ? endpoint_->provider() : std::string(); }
  // (Without an endpoint every message comes through an inbox, which knows its sender.)
  bool knows_sources() const override { return endpoint_ ? endpoint_->knows_sources() : true; }
  ProviderModes provider_modes() const override { return endpoint_ ? endpoint_->modes() : ProviderModes{}; }
  uint64_t dropped_from_outside() const override { return endpoint_ ? endpoint_->dropped_from_outside() : 0; }
  bool one_sided() const override { return endpoint_ != nullptr; }
  void send_frame_as_is(int target, std::span<const std::byte> frame) override;

  std::unique_ptr<LocalRegion> register_region(void* base, size_t length) override {
    if (!endpoint_) return std::make_unique<UnregisteredRegion>(base, length);
    return endpoint_->register_region(base, length);
  }
  void write(int target, const void* source, size_t length, const RemoteAddress& destination) override {
    check_target(target, "fi_writemsg");
    fabric_endpoint("fi_writemsg").write(target, source, length, destination);
    link_.ring(target);  // its progress engine may sleep, and some providers need the target's progress
  }
  void read(int target, void* destination, size_t length, const RemoteAddress& source) override {
    check_target(target, "fi_readmsg");
    fabric_endpoint("fi_readmsg").read(target, destination, length, source);
    link_.ring(target);
  }

  void set_handler(uint16_t id, ActiveMessageHandler handler) override { router_.set_handler(id, std::move(handler)); }
  using Transport::send;
  void send(int target, uint16_t handler, MessageParts payload) override;

  bool idle(int target) override {
    check_target(target, "idle");
    return !endpoint_ || endpoint_->idle(target);
  }
  void flush(int target, const Deadline& deadline) override {
    check_target(target, "flush");
    if (endpoint_) endpoint_->flush(target, deadline);
  }
  void flush_sends(const Deadline& deadline) override {
    if (endpoint_) endpoint_->flush_sends(deadline);
  }
  bool progress() override;
  // This rank's bell: peers of this host ring it after every post and message to this rank (its
  // progress engine may sleep on it), and the fabric watcher rings it for the other hosts'
  // traffic; null when a peer cannot (another host, and a provider with no wait fd), so
  // sleeping would miss its traffic.
  Bell* incoming_bell() override { return link_.reached_by_everyone() || watcher_ ? &link_.bell() : nullptr; }
  void before_doze() override {
    if (watcher_) watcher_->arm();
  }
  bool doze_promptly() const override { return watcher_ != nullptr; }
  // Only across hosts: on one host the peers' progress threads move shm's data, and a wait
  // that yields instead of sleeping would take their CPU when ranks outnumber cores.
  bool network_in_flight() const override {
    return endpoint_ && !link_.reached_by_everyone() && endpoint_->in_flight();
  }
  // Not when messages between the ranks of a host go through the fabric too: then so do barriers.
  std::shared_ptr<BarrierBoard> barrier_board(int rank) override {
    return inbox_messages_ ? link_.board(rank) : nullptr;
  }

 private:
  void check_target(int target, const char* call) const;
  // The endpoint, for `call`; throws RmaError in a job that opened none (FabricOptions::fabric).
  FabricEndpoint& fabric_endpoint(const char* call) const;

  MessageRouter router_;                      // (first: the endpoint and the link number messages with it)
  std::unique_ptr<FabricEndpoint> endpoint_;  // null: no libfabric (FabricOptions::fabric)
  InboxLink link_;
  bool inbox_messages_;
  bool trust_network_;
  bool connected_ = false;
  std::atomic<uint64_t> passes_{0};  // of progress(), to poll an idle fabric less often
  static constexpr uint64_t kFabricPollEvery = 16;
  // Peers on other hosts, and a provider that can sleep: wakes the rank for their traffic.
  // (Last: it stops before the endpoint it watches closes.)
  std::unique_ptr<FabricWatcher> watcher_;
};

std::vector<std::byte> FabricTransport::address() const {
  return FabricAddress{endpoint_ ? endpoint_->name() : std::vector<std::byte>(), link_.name()}.encode();
}

void FabricTransport::connect(const std::vector<std::vector<std::byte>>& addresses, const Topology& topology) {
  if (addresses.size() != static_cast<size_t>(size()) || topology.size() != size()) {
    throw UsageError("rma: connect needs " + std::to_string(size()) + " addresses and hosts, got " +
                     std::to_string(addresses.size()) + " and " + std::to_string(topology.size()));
  }
  std::vector<std::vector<std::byte>> names;
  std::vector<std::string> inboxes;
  for (int peer = 0; peer < size(); ++peer) {
    FabricAddress address = FabricAddress::decode(addresses[peer], peer);
    names.push_back(std::move(address.endpoint));
    inboxes.push_back(std::move(address.inbox));
  }
  for (int peer = 0; peer < size(); ++peer) {
    if (names[peer].empty() != !endpoint_) {
      throw UsageError("rma: connect: rank " + std::to_string(peer) +
                       (names[peer].empty() ? " opened no" : " opened a") + " libfabric endpoint and rank " +
                       std::to_string(rank()) + (endpoint_ ? " did" : " did not") +
                       "; every rank must decide alike (from the job's hosts, RMA_TRANSPORT and RMA_PROVIDER)");
    }
  }
  if (topology.host_count() > 1 && !endpoint_) {
    throw UsageError("rma: connect: the job spans " + std::to_string(topology.host_count()) +
                     " hosts, but its ranks opened no libfabric endpoint to reach them");
  }
  if (topology.host_count() > 1 && !endpoint_->knows_sources() && !trust_network_) {
    throw UsageError("rma: the libfabric provider " + endpoint_->provider() +
                     " cannot tell which address a message came from (no FI_SOURCE), so across hosts any machine "
                     "that reaches the network could speak as a rank of this job; use a provider that can (tcp, "
                     "the default), or set RMA_TRUST_NETWORK=1 if you trust every machine on it");
  }
  link_.connect(inboxes, topology);
  if (endpoint_) endpoint_->connect(names);
  connected_ = true;
  if (endpoint_ && !link_.reached_by_everyone() && endpoint_->sleep_fd() >= 0) {
    watcher_ = std::make_unique<FabricWatcher>(endpoint_->sleep_fd(), link_.bell(),
                                               [this] { return endpoint_->ready_to_sleep(); });
  }
}

FabricEndpoint& FabricTransport::fabric_endpoint(const char* call) const {
  if (!endpoint_) {
    throw RmaError(std::string("rma: ") + call +
                   ": this job opened no libfabric endpoint (all its ranks share a host)");
  }
  return *endpoint_;
}

void FabricTransport::check_target(int target, const char* call) const {
  if (target < 0 || target >= size()) {
    throw UsageError(std::string("rma: ") + call + ": rank " + std::to_string(target) + " is not in the job (size " +
                     std::to_string(size()) + ")");
  }
  if (!connected_) throw RmaError(std::string("rma: ") + call + " before the job was connected");
}

void FabricTransport::send(int target, uint16_t handler, MessageParts payload) {
  check_target(target, "send");
  FragmentHeader header = router_.header(handler, payload.size());
  if (target == rank()) {
    // To itself a message needs no fabric and no fragmenting.
    router_.commit_first(target, header, [] { return true; });
    Fragments local;
    std::vector<std::byte> whole(payload.size());
    payload.copy_to(whole.data());
    local.emplace_back(header, std::move(whole));
    router_.deliver(std::move(local));
    return;
  }
  bool inbox = inbox_messages_ && link_.reaches(target);
  size_t offset = 0;
  try {
    do {
      size_t chunk = std::min(kFragmentPayload, payload.size() - offset);
      header.offset = offset;
      if (inbox) {
        link_.push(target, header, payload.slice(offset, chunk), offset == 0);
      } else {
        fabric_endpoint("send").send(target, header, payload.slice(offset, chunk), offset == 0);
      }
      link_.ring(target);  // its progress engine may sleep, and some providers need the target's progress
      offset += chunk;
    } while (offset < payload.size());
  } catch (const std::exception& error) {
    // Nothing of it left (offset 0): it took no sequence number and the route is intact. Else
    // the target holds the start of a message that nothing will complete.
    if (offset > 0) router_.break_route(target, error.what());
    throw;
  }
}

void FabricTransport::send_frame_as_is(int target, std::span<const std::byte> frame) {
  check_target(target, "send_frame_as_is");
  if (inbox_messages_ && link_.reaches(target)) {
    link_.push_as_is(target, frame);
  } else {
    fabric_endpoint("send_frame_as_is").send_as_is(target, frame);
  }
  link_.ring(target);
}

bool FabricTransport::progress() {
  Fragments arrived;
  bool completed = false;
  // When every peer's messages come through the inbox and nothing of ours is in flight, the
  // fabric has little to say (a peer's one-sided operation on our memory, now and then): a
  // completion-queue read costs more than the inbox, so it is polled every kFabricPollEvery.
  if (endpoint_) {
    bool fabric_due = !(inbox_messages_ && link_.reached_by_everyone()) || endpoint_->in_flight() ||
                      ++passes_ % kFabricPollEvery == 0;
    if (fabric_due) completed = endpoint_->poll(arrived);
  }
  size_t from_inbox = link_.drain(arrived);
  bool delivered = !arrived.empty();
  if (delivered || router_.has_pending()) router_.deliver(std::move(arrived));
  // Another thread of this rank may sleep on the bell for what this pass delivered: the ring
  // that woke it was spent before the message reached the handler (a load when nobody sleeps).
  if (delivered) {
    if (Bell* bell = incoming_bell()) bell->ring();
  }
  return completed || from_inbox > 0;
}

}  // namespace

std::vector<std::byte> FabricAddress::encode() const {
  if (inbox.size() > 255) throw UsageError("rma: the inbox name " + inbox + " is longer than 255 bytes");
  std::vector<std::byte> address = endpoint;
  for (char c : inbox) address.push_back(static_cast<std::byte>(c));
  address.push_back(static_cast<std::byte>(inbox.size()));
  return address;
}

FabricAddress FabricAddress::decode(std::span<const std::byte> address, int rank) {
  size_t inbox_length = address.empty() ? 0 : static_cast<size_t>(address.back());
  // The endpoint name (none from a rank without one), the inbox name, and its length.
  if (address.empty() || address.size() < inbox_length + 1) {
    throw UsageError("rma: connect: rank " + std::to_string(rank) + "'s address is malformed (" +
                     std::to_string(address.size()) + " bytes)");
  }
  size_t name_length = address.size() - inbox_length - 1;
  return FabricAddress{{address.begin(), address.begin() + static_cast<std::ptrdiff_t>(name_length)},
                       std::string(reinterpret_cast<const char*>(address.data()) + name_length, inbox_length)};
}

std::unique_ptr<Transport> open_fabric_transport(const FabricOptions& options) {
  return std::make_unique<FabricTransport>(options);
}

}  // namespace rma
