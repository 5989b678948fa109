// The small-message cases of bench/cases.py through the C++ core alone, between 2 forked ranks
// of one host (a shared-memory window, as Window.allocate makes there): the difference to the
// Python column is the Python layer's cost.
// Prints the same JSON lines as bench/cases.py.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "fork_job.hpp"
#include "runtime/communicator.hpp"
#include "runtime/runtime.hpp"
#include "window/window.hpp"

namespace {
template <class Step>
double median_seconds(int count, Step step) {
  std::vector<double> samples(count);
  for (auto& sample : samples) {
    auto began = std::chrono::steady_clock::now();
    step();
    sample = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  std::nth_element(samples.begin(), samples.begin() + count / 2, samples.end());
  return samples[count / 2];
}

void report(const char* name, size_t size, double seconds) {
  std::printf("{\"case\": \"%s\", \"size\": %zu, \"value\": %.9g}\n", name, size, seconds);
}

// bench/cases.py's wait_until_wake without Python: rank 1 asleep in the core's wait (as
// win.wait_until), rank 0 putting and flushing 2 ms after both left a barrier. The median delay
// from the put to rank 1 seeing it is the wake-up of a sleeping rank on this machine: the
// floor of the Python case. Both ranks return it (rank 1 sends it to rank 0).
double wait_until_wake(rma::Communicator& world, rma::Window& window, int rank) {
  constexpr size_t kAt = 4096;  // a word no other case writes
  auto now_ns = [] {
    return static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  };
  auto* word = reinterpret_cast<std::atomic<int64_t>*>(window.segment(rank)->data() + kAt);
  auto at = rma::Region::contiguous(kAt, 8, 1);
  std::vector<double> delays;
  int64_t last = word->load();  // (each put's time is later than the last one's)
  for (int step = 0; step < 200; ++step) {
    world.barrier();
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      int64_t sent = now_ns();  // (one clock for both: CLOCK_MONOTONIC)
      window.lock_all(0);
      if (!window.put_direct(1, &sent, kAt, 8)) window.put(1, &sent, at);
      if (!window.flush_direct(1)) window.flush(1);
      window.unlock_all();
    } else {
      window.wait_local([&] { return word->load() > last; }, -1, [] { return std::string("wait_until_wake"); });
      last = word->load();
      delays.push_back(static_cast<double>(now_ns() - last) * 1e-9);
    }
  }
  double median = 0;
  if (rank == 1) {
    std::nth_element(delays.begin(), delays.begin() + delays.size() / 2, delays.end());
    median = delays[delays.size() / 2];
  }
  rma::Bytes answer = world.bcast(
      rma::Bytes(reinterpret_cast<std::byte*>(&median), reinterpret_cast<std::byte*>(&median) + sizeof median), 1);
  std::memcpy(&median, answer.data(), sizeof median);
  return median;
}

int bench(int rank, const fork_job::Exchange& exchange) {
  rma::RuntimeOptions options;
  options.rank = rank;
  options.size = 2;
  options.provider = "shm";
  auto runtime = std::make_shared<rma::Runtime>(options);
  runtime->connect(exchange(runtime->address()), {"here", "here"});
  auto world = runtime->world();
  // A shared-memory window, as Window.allocate makes on one host. Calls try the direct path
  // first, then the general one, as rma._core.Window does.
  auto window = rma::Window::create_shared(*world, 1 << 16, true, "bench");
  if (rank == 0) {
    window->lock_all(0);
    std::vector<std::byte> data(4096);
    for (size_t size : {8, 64, 512, 4096}) {
      auto region = rma::Region::contiguous(0, size, 1);
      report("put", size, median_seconds(2000, [&] {
               if (!window->put_direct(1, data.data(), 0, size)) window->put(1, data.data(), region);
               if (!window->flush_direct(1)) window->flush(1);
             }));
      report("get", size, median_seconds(2000, [&] {
               if (!window->get_direct(1, data.data(), 0, size)) window->get(1, data.data(), region);
               if (!window->flush_direct(1)) window->flush(1);
             }));
      auto words = rma::Region::contiguous(0, size, 8);
      report("accumulate", size, median_seconds(2000, [&] {
               if (!window->get_accumulate_direct(1, rma::ReduceOp::Sum, rma::ElementType::Int64, data.data(), nullptr,
                                                  0, size)) {
                 window->accumulate(1, rma::ReduceOp::Sum, rma::ElementType::Int64, data.data(), words);
               }
               if (!window->flush_direct(1)) window->flush(1);
             }));
    }
    int64_t one = 1, zero = 0, fetched = 0;
    auto element = rma::Region::contiguous(0, 8, 8);
    report("fetch_and_op", 8, median_seconds(2000, [&] {
             if (!window->get_accumulate_direct(1, rma::ReduceOp::Sum, rma::ElementType::Int64, &one, &fetched, 0, 8)) {
               window->get_accumulate(1, rma::ReduceOp::Sum, rma::ElementType::Int64, &one, &fetched, element);
             }
             if (!window->flush_direct(1)) window->flush(1);
           }));
    report("compare_and_swap", 8, median_seconds(2000, [&] {
             if (!window->compare_and_swap_direct(1, rma::ElementType::Int64, &one, &zero, &fetched, 0)) {
               window->compare_and_swap(1, rma::ElementType::Int64, &one, &zero, &fetched, element);
             }
             if (!window->flush_direct(1)) window->flush(1);
           }));
    window->unlock_all();
    auto eight_bytes = rma::Region::contiguous(0, 8, 1);
    report("lock_put_unlock", 8, median_seconds(2000, [&] {
             window->lock(1, rma::kLockExclusive, 0);
             if (!window->put_direct(1, data.data(), 0, 8)) window->put(1, data.data(), eight_bytes);
             window->unlock(1);
           }));
  }
  // The collective cases: both ranks take part, rank 0 reports.
  world->barrier();
  std::vector<std::byte> word(8);
  auto eight = rma::Region::contiguous(0, 8, 1);
  window->fence(0);
  double fence = median_seconds(2000, [&] { window->fence(0); });
  double fence_put = median_seconds(2000, [&] {
    if (rank == 0 && !window->put_direct(1, word.data(), 0, 8)) window->put(1, word.data(), eight);
    window->fence(0);
  });
  window->fence(rma::kModeNoSucceed);
  double pscw = median_seconds(2000, [&] {
    if (rank == 0) {
      window->start({1}, 0);
      if (!window->put_direct(1, word.data(), 0, 8)) window->put(1, word.data(), eight);
      window->complete();
    } else {
      window->post({0}, 0);
      window->wait();
    }
  });
  double barrier = median_seconds(2000, [&] { world->barrier(); });
  // The communicator's sendrecv between the two ranks: the Python case's floor (no pickle).
  double sendrecv = median_seconds(2000, [&] {
    auto receive = world->irecv(1 - rank, 0, "sendrecv");
    world->send(word, 1 - rank, 0);
    receive->wait();
  });
  double wake = wait_until_wake(*world, *window, rank);
  if (rank == 0) {
    report("fence_empty", 8, fence);
    report("fence_put", 8, fence_put);
    report("pscw_put", 8, pscw);
    report("barrier", 8, barrier);
    report("comm_sendrecv@2", 8, sendrecv);
    report("wait_until_wake", 8, wake);
    std::fflush(stdout);
  }
  world->barrier();
  window->free();
  runtime->finalize(true);
  return 0;
}
}  // namespace

int main() {
  auto statuses = fork_job::run(2, bench);
  for (int status : statuses) {
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}
