// The transport interface: everything above it (communicator, windows, epochs and locks)
// moves data only through these calls. The implementation is FabricTransport
// (fabric_transport.hpp): libfabric, with shared-memory inboxes for messages between the
// ranks of one host.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/bell.hpp"
#include "base/message_parts.hpp"
#include "base/peer_status.hpp"
#include "base/topology.hpp"
#include "base/waiting.hpp"

namespace rma {

class BarrierBoard;

// What a peer needs in order to reach a registered region; exchanged at window creation.
struct RegionDescriptor {
  uint64_t base = 0;    // address peers use for offset 0 (a virtual address or 0)
  uint64_t key = 0;     // the provider's remote key
  uint64_t length = 0;  // bytes; every access is checked against it at the origin
};

// A location in a peer's registered region.
struct RemoteAddress {
  RegionDescriptor region;
  uint64_t offset = 0;
};

// Memory registered for remote access; deregistered when destroyed.
class LocalRegion {
 public:
  virtual ~LocalRegion() = default;
  virtual RegionDescriptor descriptor() const = 0;
};

// The modes a transport's libfabric provider runs under, as (what, name) pairs in a fixed
// order: ("mr_mode", "FI_MR_VIRT_ADDR|FI_MR_ALLOCATED|FI_MR_PROV_KEY"), ("data_progress",
// "FI_PROGRESS_MANUAL")... (fabric/fabric_modes.hpp names them).
using ProviderModes = std::vector<std::pair<std::string, std::string>>;

// Receives a whole active message at its target: the source's world rank and the payload.
using ActiveMessageHandler = std::function<void(int source, std::vector<std::byte>&& payload)>;

class Transport {
 public:
  Transport(int rank, int size) : rank_(rank), size_(size), peers_(size) {}
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  PeerStatus& peers() noexcept { return peers_; }

  // What peers need to reach this rank (opaque bytes, exchanged by the bootstrap).
  virtual std::vector<std::byte> address() const = 0;
  // Takes every rank's address (index = world rank) and the job's topology, which says which
  // ranks may be reached through shared memory. Call once, before any traffic. Throws
  // UsageError when an address is missing or malformed, FabricError when the provider
  // refuses one.
  virtual void connect(const std::vector<std::vector<std::byte>>& addresses, const Topology& topology) = 0;
  // The libfabric provider in use, e.g. "shm" or "tcp;ofi_rxm".
  virtual std::string provider() const = 0;
  // Whether a message's source is known from where it came (the provider's FI_SOURCE, an
  // inbox's ring), not only from its header; false: the header is believed.
  virtual bool knows_sources() const = 0;
  // Fragments dropped unread because they came from an address outside the job.
  virtual uint64_t dropped_from_outside() const = 0;
  // The modes of the libfabric endpoint in force; empty without one.
  virtual ProviderModes provider_modes() const { return {}; }
  // For tests of the receiver's checks only: sends `frame` (a fragment header and payload, as
  // the receiver reads them) to target as it is, through the path messages to target take,
  // with no numbering and no check.
  virtual void send_frame_as_is(int target, std::span<const std::byte> frame) = 0;

  // Whether write() and read() are available (a libfabric endpoint is open). Without them, the
  // data of one-sided calls to other processes travels in messages (window/route_fabric.hpp).
  virtual bool one_sided() const { return true; }
  // Registers memory for one-sided access by peers. Throws FabricError.
  virtual std::unique_ptr<LocalRegion> register_region(void* base, size_t length) = 0;

  // One-sided operations. They return once posted; the data is visible at the target (write)
  // or has landed locally (read) after flush(target). Callers keep the local buffers alive
  // and unchanged until then. Zero lengths are no-ops. Throw UsageError for a rank outside
  // the job, RmaError before connect(), FabricError when the provider fails, and, while the
  // provider refuses the post (its queues full), what wait_until throws.
  virtual void write(int target, const void* source, size_t length, const RemoteAddress& destination) = 0;
  virtual void read(int target, void* destination, size_t length, const RemoteAddress& source) = 0;

  // Active messages: any size; delivered to the target's handler in the order sent by each
  // source, by whichever thread makes progress there. Handlers must not block. A send
  // returns once the message is on its way; while the way is full (the provider's queues,
  // the target's inbox) it makes progress and waits as wait_until does, so it throws
  // PeerError when the target dies and TimeoutError at the transport's deadline. A send that
  // throws before any of its message left leaves no trace (later messages to target arrive);
  // one that fails after part of it left, or whose fragment the provider reports lost, leaves
  // the target a message it cannot complete, and every later send to target throws PeerError
  // (message_router.hpp says why).
  // Handler ids: see ActiveMessageId in runtime.hpp for who owns which.
  virtual void set_handler(uint16_t id, ActiveMessageHandler handler) = 0;
  virtual void send(int target, uint16_t handler, MessageParts payload) = 0;
  void send(int target, uint16_t handler, std::span<const std::byte> payload) {
    send(target, handler, MessageParts{payload, {}});
  }

  // Whether every one-sided operation issued to target has completed (does not wait).
  virtual bool idle(int target) = 0;
  // Waits until every one-sided operation issued to target is complete; throws the first error.
  virtual void flush(int target, const Deadline& deadline) = 0;
  // Waits until every active message sent has left this process.
  virtual void flush_sends(const Deadline& deadline) = 0;
  // One pass of progress: completions, arrived messages. True if anything happened.
  virtual bool progress() = 0;
  // A bell that every peer rings after posting anything to this rank, on which an idle
  // progress engine may sleep; null if there is none (then it polls).
  virtual Bell* incoming_bell() { return nullptr; }
  // The progress engine is about to doze on incoming_bell(): a transport whose traffic does not
  // all ring it (peers on other hosts) arranges to be woken for it.
  virtual void before_doze() {}
  // Whether the progress engine should doze as soon as a burst of traffic ends rather than
  // after a while of timed sleeps: true when a wait fd wakes it for the network (before_doze),
  // because a peer's one-sided write needs this rank's progress to land but shows it no
  // completion, so timed sleeps (up to RMA_PROGRESS_SLEEP_US) would stretch every such write.
  // (Callers of wait_until sleep on the fabric's wait fd then too.)
  virtual bool doze_promptly() const { return false; }
  // Whether operations of this rank are on the network and need its polling to go on (a
  // provider with manual progress sends a large transfer piece by piece).
  virtual bool network_in_flight() const { return false; }
  // Callers inside wait_until now without a bell. They poll the transport themselves, and sleep on the
  // fabric's wait fd when their wait is long, so the progress engine need not doze promptly
  // meanwhile: its wake-ups would only take CPU from them (two per message when it does).
  int waiting_callers() const noexcept { return waiting_callers_.load(std::memory_order_relaxed); }
  // Callers inside wait_until now that poll the transport themselves in their done() (a
  // communicator's receive) and are not asleep (across hosts, asleep too: the fabric's watcher
  // wakes them, see wait_until's serves_asleep): the progress engine leaves every message to
  // them meanwhile, rather than taking some first and spinning after them (on a host with as
  // many busy threads as cores, that spinning took the CPU the ranks needed).
  int polling_callers() const noexcept { return polling_callers_.load(std::memory_order_relaxed); }
  // Whether a caller of this rank waits inside rma now and moves the network itself meanwhile
  // (doze_promptly transports: its wait sleeps on the fabric's wait fd, not on a timer): the
  // progress engine then stands back, so that a peer's request is served by the thread that
  // waits, without a hand-off to the engine (two wake-ups per message on a busy host).
  bool callers_serve_network() const noexcept {
    // (Sequentially consistent: stand_back() and leave() rely on it.)
    return polling_callers_.load() > 0 || (doze_promptly() && waiting_callers_.load() > 0);
  }
  // For the progress engine, once callers have served the network for a while: sleeps while
  // callers_serve_network(), at most `longest`, unless `stopping` (call release_stand_back()
  // after setting it). The last caller to leave wakes it. (Only then: a wake-up at every
  // call's end would cost a busy rank more than the engine's timed sleeps.)
  void stand_back(std::chrono::milliseconds longest, const std::atomic<bool>& stopping);
  void release_stand_back();
  // How long since a caller last came to serve the network with none serving, or the last left:
  // long while one waits long, short while calls come and go.
  Clock::duration callers_unchanged_for() const {
    return Clock::now() - Clock::time_point(Clock::duration(callers_changed_.load(std::memory_order_relaxed)));
  }

 private:
  // While one lives, its thread counts in `count` (waiting_callers_, polling_callers_).
  class Counting {
   public:
    Counting(Transport& transport, std::atomic<int>& count) : transport_(transport), count_(count) {
      transport_.enter(count_);
    }
    ~Counting() { transport_.leave(count_); }
    Counting(const Counting&) = delete;
    Counting& operator=(const Counting&) = delete;

   private:
    Transport& transport_;
    std::atomic<int>& count_;
  };
  // A caller starts or stops counting in `count` (waiting_callers_, polling_callers_); the
  // first to come and the last to leave note the time (callers_unchanged_for), and the last
  // wakes a progress engine standing back.
  void enter(std::atomic<int>& count);
  void leave(std::atomic<int>& count);

 public:
  // While one lives, its thread counts in polling_callers().
  class Polling : Counting {
   public:
    explicit Polling(Transport& transport) : Counting(transport, transport.polling_callers_) {}
  };
  // The barrier board of `rank` (host/barrier_board.hpp; this rank's own too) when the
  // ranks of a host meet in shared memory and this rank maps rank's board; null otherwise
  // (then communicators meet through messages).
  virtual std::shared_ptr<BarrierBoard> barrier_board(int /*rank*/) { return nullptr; }

  // Makes progress until done() holds. Throws PeerError if one of `watch` (world ranks) dies,
  // TimeoutError at the deadline, Interrupted at a SIGINT (see interrupts.hpp) unless
  // interruptible is false; `what` names the waiting call for those messages. With a bell
  // (when whoever makes done() true rings it), a long wait sleeps on the bell instead of
  // polling, waking at least every kBellCheck for those checks (a signal wakes it at once).
  // Every blocking loop of the transports is this one, posts that wait for room included
  // (uninterruptible: a message must not stop between its fragments). A wait still going after
  // the hang-report delay says so once on stderr, naming `what`, and goes on. polls_itself: done()
  // makes progress itself and the caller counts in polling_callers() (a Polling), except while
  // this wait sleeps on the bell.
  void wait_until(const std::function<bool()>& done, const Deadline& deadline, std::span<const int> watch,
                  const std::function<std::string()>& what, Bell* bell = nullptr, bool interruptible = true,
                  bool polls_itself = false);
  static constexpr std::chrono::microseconds kBellCheck{100'000};
  // `what` without " on rank <this rank>": the messages of wait_until begin "rma: rank R: ",
  // and a window call's name says the rank too ("win.fence on rank 0 of window 1").
  std::string without_own_rank(std::string text) const;
  // RMA_HANG_REPORT: seconds after which a blocked wait says it still waits; <= 0: never.
  void report_hangs_after(double seconds) noexcept { hang_report_seconds_ = seconds; }
  // How long a wait spins before it starts yielding its CPU (Backoff): 0 where the job spans
  // hosts and this host's ranks have no processor each (Runtime::connect). Messages from another
  // host take microseconds anyway, and a rank that spins there keeps off its core the rank
  // the next message is for: a barrier of 4 ranks, 2 on each of two hosts sharing 2 cores,
  // took 66-80 us spinning 20 us first, 41-45 us yielding at once.
  void spin_before_yielding(std::chrono::microseconds spin) noexcept { wait_spin_ = spin; }

 private:
  int rank_, size_;
  PeerStatus peers_;
  double hang_report_seconds_ = 0;
  std::chrono::microseconds wait_spin_{Backoff::kSpinMicroseconds};
  std::atomic<int> waiting_callers_{0};
  std::atomic<int> polling_callers_{0};
  std::mutex stand_back_mutex_;  // orders a last caller's leaving against the engine's sleep
  std::condition_variable stand_back_changed_;
  std::atomic<bool> standing_back_{false};      // the engine sleeps in stand_back()
  std::atomic<Clock::rep> callers_changed_{0};  // when, in Clock ticks (callers_unchanged_for)
};

}  // namespace rma
