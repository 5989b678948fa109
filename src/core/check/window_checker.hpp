// One window's checker under RMA_CHECK: the accesses this rank makes through the window, the
// journal of the accesses made to its memory, and the checker's own messages that carry both
// with the clock (on a communicator of its own, a split of the window's).
//
// A communication call runs as usual, then records what it touched at its target (an Access)
// and compares it with this origin's accesses to that target that are not completed yet: a
// conflict among them is found at the call. A completing call (flush, unlock, complete, fence)
// stamps the accesses it completes with this rank's next publication of its clock, and they
// travel to their target, whose journal compares them with the other origins' accesses:
// - fence and free: every rank sends every other rank its accesses, then one allreduce takes
//   in every rank's clock and how many messages of accesses each sent each other, so that each
//   takes in all of its own (from each origin, the first that many: a faster rank's messages
//   of the next epoch stay for it); the journals then forget, as a fence orders everything
//   before it before everything after it;
// - the clocks of the other synchronizations go through a second, private window (the "clock
//   board": four rows of clock entries per rank, under a lock_all the checker holds), read and
//   written one-sidedly, which costs far less than a message each way:
//   - lock/unlock: unlock leaves this rank's clock at the target (in row 0, and in row 1 too
//     for an exclusive lock), and lock takes what earlier holders left there (an exclusive
//     lock: row 0, every holder's; a shared one: row 1, the exclusive holders' only, since
//     shared locks do not order each other);
//   - post/start/complete/wait: before post, the target writes its clock in its own row 2, and
//     start's origin reads it once the post came (before its first access to the target, or at
//     complete); before complete, the origin leaves its clock at each target (row 3), and wait
//     (or a test that succeeds) takes row 3 in. No origin reads a row 2 that the target's next
//     post rewrites: that post comes after a wait, which takes the origin's complete;
//   - the accesses that flush, unlock and complete completed go to their target in batches of
//     messages that it reads at its synchronization calls, and at the latest at the next fence
//     or free.
// Conflicts found are kept, the first only, until a call reports it (take_report).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check/access.hpp"
#include "check/journal.hpp"
#include "runtime/communicator.hpp"
#include "window/window.hpp"

namespace rma::check {

class WindowChecker {
 public:
  // Origins send a target the accesses that flush and unlock completed in batches: once this
  // many wait, or the oldest has waited kBatchAge (checked at each flush and unlock). A message
  // per unlock cost more than the rest of the checker's lock epoch; the target learns them a
  // little later, and at the latest at the next fence or free, which send everything.
  static constexpr size_t kBatch = 64;
  static constexpr std::chrono::milliseconds kBatchAge{5};

  // comm: the checker's communicator (ranks as the window's); world: window rank -> world rank;
  // window: names the window in messages ("window 3"); board: the clock board (kBoardRows *
  // world-size int64 per rank, under a lock_all held as long as the checker is used).
  static constexpr int kBoardRows = 4;
  WindowChecker(VectorClock& clock, std::shared_ptr<Communicator> comm, std::vector<int> world, std::string window,
                std::shared_ptr<Window> board);

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(world_.size()); }
  // Every rank of the window, 0 to size - 1 (what fence, flush_all and unlock_all complete).
  const std::vector<int>& everyone() const noexcept { return everyone_; }
  const std::string& window() const noexcept { return window_; }
  VectorClock& clock() noexcept { return clock_; }

  // ---- records ----
  // A communication call to target (a rank, not PROC_NULL) that touched `spans` there. Returns
  // its record: one per shape and clock, as a loop that repeats a call between two moves of the
  // clock makes one record, which stands for every repetition (each would be ordered and
  // conflict exactly as the first; the same origin's own order is checked here). A conflict
  // with this origin's calls to target not completed yet is kept, and `found_now` set.
  // call ("win.put"), op, dtype and site ("file.py:12"): strings that live as long as the
  // process (the bindings intern them); element_bytes: the size of one element of dtype;
  // spans: sorted, disjoint, merged.
  AccessRef record(int target, const std::string& call, AccessKind kind, std::string_view op, std::string_view dtype,
                   uint32_t element_bytes, std::span<const Span> spans, const std::string& site, bool& found_now);
  // A load or store of target's memory (win.local, or win.shared(target) of a shared window):
  // an access of this rank, complete at once; it goes to target's journal (this rank's own at
  // once, another's with the completed calls).
  void direct(int target, bool store, std::span<const Span> spans, const std::string& site);  // (site: as record's)
  // The epoch this rank's next accesses belong to ("fence epoch 3", "lock_all epoch 2",
  // "exclusive lock epoch 4 on rank 1"). kind: interned (it names the epoch in messages).
  void new_epoch(const std::string& kind, int on_rank = -1);

  // ---- completion and delivery ----
  // The calls to targets completed there (a flush, unlock, complete or fence is being made).
  void complete(std::span<const int> targets);
  // After a flush or unlock: sends each target its completed accesses if their batch is due
  // (this rank's own go to its journal at once).
  void send_batches(std::span<const int> targets);
  // Sends a target's completed accesses now (this rank's own go to its journal at once).
  void send(int target);
  // Takes in the accesses origins sent without a collective call, as far as they came; `poll`:
  // making progress first (win.sync does; the other calls leave it to the progress engine,
  // which brings them soon enough: they come in batches anyway).
  void drain(bool poll = false);

  // Before post: this rank's clock, published, in its row 2 of the board.
  void posting();
  // start's targets: their post clock is taken before the first access to them.
  void expect_posts(std::span<const int> group);
  // Whether target's post clock is still to be taken (take_post, once the post came).
  bool awaits_post(int target) const { return posts_.contains(target); }
  // Takes target's post clock if it is expected. Only once target's post came.
  void take_post(int target);
  // Before complete, once every post of the access epoch came: takes the post clocks not taken
  // yet, completes the accesses to group, leaves this rank's published clock at each target
  // and sends them the accesses (in batches).
  void completing(std::span<const int> group);
  // wait (or a test that succeeded): takes in the clocks the origins' completes left here.
  void waited();
  // lock (granted): takes the clocks of target's earlier holders; a new lock epoch.
  void locked(int target, bool exclusive);
  // lock_all (granted): takes the clocks of every target's exclusive holders; a new epoch.
  void locked_all();
  // Before unlock or unlock_all, the locks still held: completes the accesses to targets,
  // leaves this rank's published clock at each, and sends them the accesses.
  void unlocking(std::span<const int> targets, bool exclusive);

  // fence and free (collective): every rank's accesses to every other, with its clock; then
  // the journal forgets, and a new fence epoch begins.
  void exchange_all(const CallName& call);

  // ---- conflicts found ----
  void keep(std::optional<std::string> found);
  // The first conflict found, once (later ones are mostly its echoes); nothing after that.
  std::optional<std::string> take_report();

 private:
  struct Outgoing {
    std::vector<Access> accesses;                 // completed, in completion order
    std::chrono::steady_clock::time_point since;  // when the oldest came
    // Queues a record as completed by the publication `done`, unless it was already: a
    // repetition completed by the same publication goes once.
    void add(const Access& record, int64_t done, int64_t done_tick) {
      if (record.queued_done == done) return;
      record.queued_done = done;
      if (accesses.empty()) since = std::chrono::steady_clock::now();
      accesses.push_back(record);
      accesses.back().done = done;
      accesses.back().done_tick = done_tick;
    }
  };
  struct Pending {
    std::vector<AccessRef> accesses;  // made, not completed, in call order
    uint64_t round = 1;               // how many completions emptied it, plus one
  };
  struct MadeKey {
    int target;
    const std::string* call;  // (interned: the address is the name)
    AccessKind kind;
    std::string_view op;
    std::string_view dtype;
    uint32_t element_bytes;
    const std::string* site;
    Spans spans;
    auto operator<=>(const MadeKey&) const = default;
  };
  struct Made {
    AccessRef access;
    uint64_t pending_round = 0;  // its target's Pending::round while it is pending there
  };

  void learn(std::vector<Access> accesses);
  void take_batch();
  // The any-source receive of accesses, posted when first needed after one was collected.
  PendingReceive& listening();
  std::vector<std::byte> take_outgoing_bytes(int target);
  void forget_made_if_moved();
  // made_'s record of probe_, made now (with `call`, else probe_'s) if there is none; `fresh`.
  Made& made_record(const std::string& call, bool& fresh);

  VectorClock& clock_;
  std::shared_ptr<Communicator> comm_;
  std::vector<int> world_;
  std::vector<int> everyone_;
  std::string window_;
  int rank_;
  Journal journal_;
  std::map<int, Pending> inflight_;  // (kept when emptied: a loop of put and flush allocates nothing)
  std::map<int, Outgoing> outgoing_;
  ClockStamp made_at_;                    // the clock made_'s records were made at
  uint64_t made_version_ = ~uint64_t{0};  // its version
  std::map<MadeKey, Made> made_;
  MadeKey probe_{};                         // the key of the call being recorded (its spans' memory reused)
  std::vector<int64_t> sent_, received_;    // messages of accesses, by peer
  std::shared_ptr<PendingReceive> listen_;  // (null: none posted)
  // Takes in the clock in `row` of rank's board (read into its place in board_in_, completed).
  void take_clock(int rank, const Region& row, const char* call);
  // Leaves this rank's published clock in the rows of targets' boards (MAX), completed.
  void leave_clock(std::span<const int> targets, const Region& rows, const char* call);

  std::shared_ptr<Window> board_;
  // What the board's gets fill (a row per target) and what its puts and accumulates read: the
  // checker's own, not a call's, as a Ctrl-C may end the flush that completes those calls and
  // leave them in flight, writing and reading here until the next flush completes them.
  std::vector<int64_t> board_in_;
  std::vector<int64_t> board_out_;  // (this rank's clock, twice: rows 0 and 1 of an unlock)
  Region row_[kBoardRows];          // each row of a rank's board
  Region lock_rows_;                // rows 0 and 1
  std::set<int> posts_;             // start's targets whose post clock has not come yet
  int epochs_ = 0;
  Epoch epoch_;  // (before the first fence: "epoch 0")
  std::optional<std::string> found_;
  bool reported_ = false;
};

}  // namespace rma::check
