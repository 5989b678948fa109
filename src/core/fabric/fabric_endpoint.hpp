// One rank's libfabric endpoint (RDM; providers shm, net and tcp;ofi_rxm): messages as fragments
// into posted receives, one-sided writes and reads on registered memory, and the completions
// of both.
//
// Thread model: the provider is opened with FI_THREAD_DOMAIN and every libfabric call is made
// under one mutex, from the caller's thread or the progress engine's.
// Completion: a write is posted with FI_DELIVERY_COMPLETE, the only flag under which a
// completion means "visible at the target" on these providers.
// Trust: the endpoint asks for FI_SOURCE, so that each arrived fragment comes with the address
// it was sent from; a fragment from an address that is not one of the job's ranks is dropped
// unread, and one whose header names another rank than its address is that rank's fault
// (MessageRouter::reject). Where the provider chooses no keys, the keys of registered memory
// are random 64-bit numbers: a one-sided operation needs a key only the job's ranks were told.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/transport.hpp"
#include "fabric/handles.hpp"
#include "fabric/local_registrations.hpp"
#include "messages/message_assembler.hpp"
#include "messages/message_router.hpp"

namespace rma {

class FabricEndpoint {
 public:
  // Opens fabric, domain, completion queue, address vector and endpoint of `provider` ("" =
  // libfabric's choice) bound to `node` ("" = the provider's default), and posts the receives.
  // `owner` is the transport it serves: its progress drives a post the provider refuses for
  // now, for at most timeout_seconds. `router` numbers the messages it sends, and learns of
  // those lost after they left (a send whose completion reports an error). Throws FabricError.
  // sleep_fd: give the completion queue a wait fd where the provider has one (sleep_fd()).
  // mr_strict: descriptors for every local buffer, checked at every data-transfer call, whatever
  // the provider needs (RMA_MR_STRICT; fabric/local_registrations.hpp).
  FabricEndpoint(const std::string& provider, const std::string& node, Transport& owner, MessageRouter& router,
                 double timeout_seconds, bool sleep_fd = false, bool mr_strict = false);
  ~FabricEndpoint();
  FabricEndpoint(const FabricEndpoint&) = delete;
  FabricEndpoint& operator=(const FabricEndpoint&) = delete;

  // The fi_getinfo hints for what rma needs; provider "" means any.
  static fabric::Info hints(const std::string& provider);
  // What fi_getinfo offers an endpoint of `provider` bound to `node` (as the constructor's
  // arguments): the hints, with FI_SOURCE where the provider has it; for "tcp", libfabric's
  // own RDM endpoint over TCP where it has one (net, or bare tcp from 1.18 on), else
  // tcp;ofi_rxm. Throws FabricError.
  static fabric::Info find(const std::string& provider, const std::string& node);
  // How an idle rank sleeps on the completion queue of an endpoint of `provider` when it is
  // asked to (sleep_fd): not at all on shm's (its queues cannot sleep, and its peers ring the
  // rank's bell anyway); on a wait set for libfabric 1.17's net, whose fi_trywait is a stub
  // (fabric::CompletionWait); else on the queue's own wait fd.
  static fabric::CompletionWait completion_wait(const std::string& provider, bool sleep_fd);
  // Providers whose FI_SOURCE does not tell a process outside the job from the job's ranks
  // (shm: see the constructor), whatever their caps say.
  static bool provider_knows_no_sources(const std::string& provider);

  // The provider actually opened, e.g. "shm" or "tcp;ofi_rxm".
  const std::string& provider() const noexcept { return provider_; }
  // Whether the provider tells where each message came from (FI_SOURCE). Without it, a
  // fragment's header is the only word on its source.
  bool knows_sources() const noexcept { return knows_sources_; }
  // The registration, progress and completion modes this endpoint runs under, by name
  // (fabric_modes.hpp).
  ProviderModes modes() const;
  // Fragments from addresses outside the job, dropped so far.
  uint64_t dropped_from_outside() const noexcept { return dropped_from_outside_.load(); }
  // What peers insert into their address vectors to reach this endpoint.
  const std::vector<std::byte>& name() const noexcept { return name_; }
  // Inserts every rank's name (index = world rank). Throws FabricError.
  void connect(const std::vector<std::vector<std::byte>>& names);

  std::unique_ptr<LocalRegion> register_region(void* base, size_t length);
  // As Transport::write and read; the target is a valid rank (not checked here).
  void write(int target, const void* source, size_t length, const RemoteAddress& destination);
  void read(int target, void* destination, size_t length, const RemoteAddress& source);
  // Posts one fragment (copied: header, then payload of at most kFragmentPayload bytes). The
  // first fragment of a message (`first`) takes its sequence number from the router when the
  // provider takes it (MessageRouter::commit_first), into header.sequence.
  void send(int target, FragmentHeader& header, MessageParts payload, bool first);
  // Posts `frame` as it is (Transport::send_frame_as_is); at most kFragmentBytes.
  void send_as_is(int target, std::span<const std::byte> frame);

  // Reads completions: appends arrived fragments to `arrived`, reposts their receives, retires
  // finished sends and one-sided operations. True if anything completed.
  bool poll(Fragments& arrived);
  // Whether sends or one-sided operations of ours have not completed yet.
  bool in_flight() const noexcept { return in_flight_.load() != 0; }
  // Whether every one-sided operation to target has completed (does not wait).
  bool idle(int target);
  // As Transport::flush and flush_sends.
  void flush(int target, const Deadline& deadline);
  void flush_sends(const Deadline& deadline);

  // An fd that becomes readable when the endpoint may have work (a peer's message or one-sided
  // operation arrived, a completion is due), for a rank with nothing to do to sleep on; -1
  // when the provider has none (shm) or it was not asked for. Poll it only after
  // ready_to_sleep() said true.
  int sleep_fd() const noexcept { return cq_->wait_fd(); }
  // Whether nothing is pending that poll() would find now (fi_trywait).
  bool ready_to_sleep();

 private:
  struct Operation;
  class Region;

  // The one post loop: calls try_post (under mutex_; returns an fi_* result) until the
  // provider takes the operation. On -FI_EAGAIN (queues full, or the peer not connected yet)
  // it waits with the owner's progress, which frees queue entries (Transport::wait_until:
  // PeerError if target dies, TimeoutError at the deadline); any other failure is a
  // FabricError naming `call`.
  template <class Post>
  void post(int target, const char* call, Post&& try_post);
  void transfer(bool is_write, int target, void* local, size_t length, const RemoteAddress& remote);
  // Posts a send of op's bytes (its own from now: freed at completion or failure). With a
  // header, the header goes in front first (numbered by the router when `first`, as send()).
  void post_send(Operation* op, FragmentHeader* header, bool first);
  void post_receive(Operation* receive);  // under mutex_
  // A fragment arrived in `receive` (`bytes` long, from address `source` when the provider
  // tells): dropped unread from an address outside the job, else handed to the router's
  // check of its sender (MessageRouter::admit), which appends it to `arrived` (under mutex_).
  void take_fragment(const Operation& receive, size_t bytes, fi_addr_t source, Fragments& arrived);
  void retire(Operation* op);                      // under mutex_: a finished send or one-sided operation
  Operation* make_send(int target, size_t bytes);  // a send of `bytes`, its buffer from local_
  void discard(Operation* op);                     // one the provider never took

  Transport& owner_;
  MessageRouter& router_;
  double timeout_seconds_;
  std::string provider_;
  std::optional<fabric::Info> info_;
  std::optional<fabric::Fabric> fabric_;
  std::optional<fabric::Domain> domain_;
  std::optional<fabric::CompletionQueue> cq_;
  std::optional<fabric::AddressVector> av_;
  std::optional<fabric::Endpoint> endpoint_;
  // Buffers and registrations of local memory (FI_MR_LOCAL); destroyed after the operations
  // below, whose buffers go back to it.
  std::optional<fabric::LocalRegistrations> local_;
  std::vector<std::byte> name_;
  uint64_t mr_mode_ = 0;
  fabric::CompletionWait completion_wait_ = fabric::CompletionWait::none;
  bool knows_sources_ = false;
  std::atomic<uint64_t> dropped_from_outside_{0};

  // Guards every libfabric call and the bookkeeping below.
  std::mutex mutex_;
  std::vector<uint64_t> issued_, completed_;  // one-sided operations, per target
  std::vector<std::string> errors_;           // first failure per target, reported by flush
  std::vector<std::unique_ptr<Operation>> receives_;
  std::vector<Operation*> unposted_receives_;  // refused with -FI_EAGAIN, retried by poll
  std::unordered_set<Operation*> live_sends_;  // freed at completion (see ~FabricEndpoint)
  std::atomic<uint64_t> sends_outstanding_{0};
  std::atomic<int64_t> in_flight_{0};  // sends and one-sided operations not completed
};

}  // namespace rma
