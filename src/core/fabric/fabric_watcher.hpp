// A thread that lets a rank with peers on other hosts sleep: when the progress engine goes to
// doze on the rank's bell, it arms the watcher, which sleeps on the fabric's wait fd
// (FabricEndpoint::sleep_fd) and rings the bell when the fabric may have work. Peers on this
// host ring that bell themselves after posting here, so the engine can doze whoever the peers
// are, instead of polling the fabric every millisecond (RMA_PROGRESS_SLEEP_US) for traffic
// from other hosts. Only a dozing engine arms it: while traffic flows, the engine polls and
// the watcher stays parked, out of the way of the data path (a wake-up per message would cost
// more than the message).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "base/bell.hpp"

namespace rma {

class FabricWatcher {
 public:
  // ready_to_sleep: whether nothing is pending that a progress pass would find now (the
  // endpoint's fi_trywait); fd: what becomes readable when that changes.
  FabricWatcher(int fd, Bell& bell, std::function<bool()> ready_to_sleep);
  ~FabricWatcher();  // stops the thread
  FabricWatcher(const FabricWatcher&) = delete;
  FabricWatcher& operator=(const FabricWatcher&) = delete;

  // The engine is about to doze on the bell: ring it when the fabric has something.
  void arm();

 private:
  void run();
  int fd_;
  int stop_fd_;  // an eventfd that ends the poll at once when the watcher stops
  Bell& bell_;
  std::function<bool()> ready_to_sleep_;
  std::mutex mutex_;
  std::condition_variable armed_changed_;
  bool armed_ = false;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace rma
