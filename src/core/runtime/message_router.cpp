#include "runtime/message_router.hpp"

#include <cstdio>

#include "errors.hpp"

namespace rma {

namespace {
// Set while this thread dispatches, so that a handler that sends (and so makes progress) does
// not dispatch re-entrantly.
thread_local bool t_delivering = false;
}  // namespace

MessageRouter::MessageRouter(int rank, int size) : rank_(rank), routes_(new Route[size]), assembler_(size) {}

void MessageRouter::set_handler(uint16_t id, ActiveMessageHandler handler) {
  std::lock_guard lock(delivery_mutex_);
  if (handlers_.size() <= id) handlers_.resize(id + 1);
  handlers_[id] = std::move(handler);
}

FragmentHeader MessageRouter::header(uint16_t handler, size_t length) const {
  return FragmentHeader{static_cast<uint32_t>(rank_), handler, 0, 0, 0, length};
}

bool MessageRouter::commit_first(int target, FragmentHeader& header, const std::function<bool()>& commit) {
  Route& route = routes_[target];
  std::lock_guard lock(route.mutex);
  if (!route.broken.empty()) {
    throw PeerError("rma: rank " + std::to_string(rank_) + " can no longer send messages to rank " +
                    std::to_string(target) + ": an earlier message to it failed after part of it had left (" +
                    route.broken + "), and rank " + std::to_string(target) +
                    " takes messages only in the order they were sent");
  }
  header.sequence = route.next_sequence;
  if (!commit()) return false;
  ++route.next_sequence;
  return true;
}

void MessageRouter::break_route(int target, const std::string& why) {
  Route& route = routes_[target];
  std::lock_guard lock(route.mutex);
  if (route.broken.empty()) route.broken = why.empty() ? std::string("no reason given") : why;
}

void MessageRouter::deliver(Fragments&& fragments) {
  if (!fragments.empty()) {
    std::lock_guard lock(pending_mutex_);
    if (pending_.empty()) {
      pending_.swap(fragments);
    } else {
      for (auto& fragment : fragments) pending_.push_back(std::move(fragment));
    }
    has_pending_.store(true, std::memory_order_release);
  }
  if (t_delivering) return;
  for (;;) {
    std::unique_lock delivery(delivery_mutex_, std::try_to_lock);
    if (!delivery.owns_lock()) return;  // the thread that owns it dispatches ours too
    t_delivering = true;
    for (;;) {
      Fragments batch;
      {
        std::lock_guard lock(pending_mutex_);
        batch.swap(pending_);
        has_pending_.store(false, std::memory_order_release);
      }
      if (batch.empty()) break;
      dispatch(batch);
    }
    t_delivering = false;
    delivery.unlock();
    // Fragments queued while we were finishing would otherwise wait for the next progress pass.
    if (!has_pending()) return;
  }
}

void MessageRouter::dispatch(Fragments& batch) {
  std::vector<ActiveMessage> ready;
  for (auto& [header, payload] : batch) {
    try {
      assembler_.add(header, std::move(payload), ready);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  for (auto& message : ready) {
    if (message.handler >= handlers_.size() || !handlers_[message.handler]) {
      std::fprintf(stderr, "rma: rank %d: no handler %u for a message from rank %d\n", rank_, message.handler,
                   message.source);
      continue;
    }
    try {
      handlers_[message.handler](message.source, std::move(message.payload));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rma: rank %d: active-message handler %u failed: %s\n", rank_, message.handler, e.what());
    }
  }
}

}  // namespace rma
