// The transport over libfabric RDM endpoints (providers shm and tcp;ofi_rxm).
//
// Thread model: the provider is opened with FI_THREAD_DOMAIN and every libfabric call is
// made under fabric_mutex_, from the caller's thread or the progress engine's.
// Completion: a write is posted with FI_DELIVERY_COMPLETE, the only flag under which a
// completion means "visible at the target" on these providers.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "fabric/handles.hpp"
#include "runtime/message_assembler.hpp"
#include "runtime/shm_inbox.hpp"
#include "runtime/transport.hpp"

namespace rma {

struct FabricOptions {
  std::string provider;  // a libfabric provider name, e.g. "shm" or "tcp;ofi_rxm"
  std::string node;      // address to bind ("" = provider default), e.g. "127.0.0.1" for tcp
  int rank = 0;
  int size = 1;
  double timeout_seconds = 300;  // deadline of a post that the provider keeps refusing
  // Active messages to the ranks of this host through their shared-memory inboxes (false:
  // through the fabric too, as to other hosts; RMA_TRANSPORT=libfabric).
  bool inbox_messages = true;
};

class FabricTransport final : public Transport {
 public:
  // Opens fabric, domain, completion queue, address vector and endpoint; posts receives.
  explicit FabricTransport(const FabricOptions& options);
  ~FabricTransport() override;

  // What peers need to reach this rank: the endpoint's name and the name of its inbox.
  std::vector<std::byte> address() const;
  // Takes every rank's address (index = world rank). Call once, before any traffic.
  void connect(const std::vector<std::vector<std::byte>>& addresses);
  // The provider actually opened, e.g. "shm" or "tcp;ofi_rxm".
  std::string provider() const { return provider_; }

  std::unique_ptr<LocalRegion> register_region(void* base, size_t length) override;
  void write(int target, const void* source, size_t length,
             const RemoteAddress& destination) override;
  void read(int target, void* destination, size_t length, const RemoteAddress& source) override;

  void set_handler(uint16_t id, ActiveMessageHandler handler) override;
  void send(int target, uint16_t handler, std::span<const std::byte> payload) override;

  bool idle(int target) override;
  void flush(int target, const Deadline& deadline) override;
  void flush_sends(const Deadline& deadline) override;
  bool progress() override;
  // This rank's bell (in its inbox): peers ring it after every post and message to this rank
  // (its progress engine may sleep on it); null when a peer cannot (another host), so
  // sleeping would miss its traffic.
  Bell* incoming_bell() override;

  // The fi_getinfo hints for what rma needs; provider "" means any.
  static fabric::Info hints(const std::string& provider);

  // Largest payload of one fragment; larger messages are split.
  static constexpr size_t kFragmentPayload = 64 * 1024 - sizeof(FragmentHeader);

 private:
  struct Operation;
  class Region;

  // Posts with `post` (which returns an fi_* result), retrying on -FI_EAGAIN with progress in
  // between. `call` names the libfabric call for errors.
  template <class Post>
  void post(int target, const char* call, Post&& post);
  // post() for a one-sided operation: counts it as issued, frees op if it cannot be posted.
  template <class Post>
  void post_one_sided(int target, const char* call, Operation* op, Post&& try_post);
  void transfer(bool is_write, int target, void* local, size_t length, const RemoteAddress& remote);
  void post_receive(Operation* receive);
  void check_target(int target, const char* call) const;
  void deliver(std::vector<std::pair<FragmentHeader, std::vector<std::byte>>>&& fragments);
  void ring(int target);  // wakes target if it sleeps on its bell
  // Puts one fragment into target's inbox, waiting (with progress) while its ring is full.
  void push(int target, std::span<const std::byte> header, std::span<const std::byte> payload);

  std::string provider_;
  std::optional<fabric::Info> info_;
  std::optional<fabric::Fabric> fabric_;
  std::optional<fabric::Domain> domain_;
  std::optional<fabric::CompletionQueue> cq_;
  std::optional<fabric::AddressVector> av_;
  std::optional<fabric::Endpoint> endpoint_;
  std::vector<std::byte> address_;  // the endpoint's name
  // Active messages to the ranks of this host go through their inboxes, not the fabric.
  std::shared_ptr<ShmInbox> inbox_;                      // this rank's (and its bell)
  std::vector<std::shared_ptr<ShmInbox>> peer_inboxes_;  // by rank; null: another host
  std::unique_ptr<std::mutex[]> push_mutexes_;           // one producer per peer's ring
  std::mutex drain_mutex_;                               // one consumer of ours
  bool every_peer_rings_ = false;
  bool connected_ = false;
  uint64_t mr_mode_ = 0;
  std::atomic<uint64_t> next_key_{1};  // for providers that let us choose keys

  // Guards every libfabric call and the counters below.
  mutable std::mutex fabric_mutex_;
  std::vector<uint64_t> issued_, completed_;  // one-sided operations, per target
  std::vector<std::string> errors_;           // first failure per target, reported by flush
  std::vector<std::unique_ptr<Operation>> receives_;
  std::vector<Operation*> unposted_receives_;     // refused with -FI_EAGAIN, retried by progress
  std::unordered_set<Operation*> live_sends_;    // freed at completion, or at destruction
  std::atomic<uint64_t> sends_outstanding_{0};
  std::atomic<int64_t> fabric_in_flight_{0};  // sends and one-sided operations not completed
  std::atomic<uint64_t> passes_{0};           // of progress(), to poll an idle fabric less often
  static constexpr uint64_t kFabricPollEvery = 16;

  std::mutex sequence_mutex_;
  std::vector<uint64_t> next_sequence_;  // per destination

  // Arrived fragments wait in pending_ until one thread at a time assembles and dispatches
  // them (under delivery_mutex_), so handlers see messages in order and never re-entrantly.
  std::mutex pending_mutex_;
  std::vector<std::pair<FragmentHeader, std::vector<std::byte>>> pending_;
  std::atomic<bool> has_pending_{false};
  std::mutex delivery_mutex_;
  MessageAssembler assembler_;
  std::vector<ActiveMessageHandler> handlers_;
  double timeout_seconds_;
  bool inbox_messages_;
};

}  // namespace rma
