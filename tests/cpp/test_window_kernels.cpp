// Target regions and the accumulate kernels, without any fabric.
#include <algorithm>
#include <complex>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "base/errors.hpp"
#include "check.hpp"
#include "elements/reduce.hpp"
#include "elements/region.hpp"

namespace {
using rma::ElementType;
using rma::ReduceOp;
using rma::Region;

std::vector<std::pair<uint64_t, uint64_t>> runs(const Region& region) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  region.for_each_run([&](uint64_t offset, uint64_t length) { out.emplace_back(offset, length); });
  return out;
}
}  // namespace

int main() {
  test::run("a contiguous region is one run", [] {
    Region region = Region::contiguous(16, 64, 8);
    CHECK(region.is_contiguous());
    CHECK(region.elements() == 8);
    CHECK((runs(region) == std::vector<std::pair<uint64_t, uint64_t>>{{16, 64}}));
    CHECK((region.extent() == std::pair<int64_t, int64_t>{16, 80}));
  });

  test::run("rows of a 2-D block merge into runs per row", [] {
    // A 3x4 block of doubles inside a 10x10 array, starting at (2, 3).
    Region region(8 * (2 * 10 + 3), 8, {{3, 80}, {4, 8}});
    CHECK(!region.is_contiguous());
    CHECK(region.elements() == 12);
    auto found = runs(region);
    CHECK(found.size() == 3);
    CHECK((found[0] == std::pair<uint64_t, uint64_t>{184, 32}));
    CHECK((found[2] == std::pair<uint64_t, uint64_t>{184 + 160, 32}));
  });

  test::run("whole rows merge into one run", [] {
    Region region(0, 4, {{5, 16}, {4, 4}});
    CHECK(region.is_contiguous());
    CHECK(runs(region).size() == 1);
  });

  test::run("a reversed column", [] {
    Region region(8 * 9, 8, {{4, -16}});  // elements 9, 7, 5, 3 of 2-element rows
    auto found = runs(region);
    CHECK(found.size() == 4);
    CHECK(found[0].first == 72 && found[3].first == 24);
    CHECK((region.extent() == std::pair<int64_t, int64_t>{24, 80}));
  });

  test::run("empty regions touch nothing", [] {
    Region region(100, 8, {{3, 80}, {0, 8}});
    CHECK(region.elements() == 0);
    CHECK(runs(region).empty());
    CHECK((region.extent() == std::pair<int64_t, int64_t>{0, 0}));
  });

  test::run("pieces of a region visit its elements in order, each piece within its size", [] {
    // Each element's offset, in the order visited: the origin's data is read in that order.
    auto elements = [](const Region& region) {
      std::vector<uint64_t> out;
      region.for_each_run([&](uint64_t offset, uint64_t length) {
        for (uint64_t at = 0; at < length; at += region.element_size()) out.push_back(offset + at);
      });
      return out;
    };
    std::vector<Region> regions{
        Region::contiguous(16, 8 * 1000, 8),          // one run
        Region(8 * 23, 8, {{30, 80}, {4, 8}}),        // a block of rows
        Region(8 * 999, 8, {{500, -16}}),             // a reversed column
        Region(4, 4, {{3, 4000}, {7, 400}, {9, 8}}),  // three dimensions, strided inside
        Region(0, 16, {{5, 200}, {10, 16}}),          // rows wider than a piece
        Region(32, 8, {{0, 8}}),                      // empty
    };
    for (const Region& region : regions) {
      for (uint64_t max_bytes : {8, 64, 100, 1000, 1 << 20}) {
        std::vector<uint64_t> visited;
        uint64_t bytes = 0;
        for (const Region& piece : region.pieces(max_bytes)) {
          CHECK(piece.bytes() <= std::max<uint64_t>(max_bytes, region.element_size()));
          CHECK(piece.element_size() == region.element_size());
          auto found = elements(piece);
          visited.insert(visited.end(), found.begin(), found.end());
          bytes += piece.bytes();
        }
        CHECK(visited == elements(region));
        CHECK(bytes == region.bytes());
      }
    }
    CHECK(Region::contiguous(0, 8 * 1000, 8).pieces(800).size() == 10);
    CHECK(Region::contiguous(0, 800, 8).pieces(800).size() == 1);
  });

  test::run("regions survive a message", [] {
    Region region(40, 2, {{3, -12}, {2, 4}});
    std::vector<std::byte> message;
    region.append_to(message);
    size_t position = 0;
    Region parsed = Region::parse(message, position);
    CHECK(position == message.size());
    CHECK(runs(parsed) == runs(region));
    size_t short_position = 0;
    CHECK_THROWS(rma::RmaError, "truncated",
                 Region::parse(std::span(message).first(message.size() - 1), short_position));
  });

  test::run("ops against expectations", [] {
    int32_t target[3] = {5, -2, 7}, operand[3] = {3, 4, -9}, old[3];
    rma::apply_reduce(ReduceOp::Sum, ElementType::Int32, 4, target, operand, old, 3);
    CHECK(target[0] == 8 && target[1] == 2 && target[2] == -2);
    CHECK(old[0] == 5 && old[1] == -2 && old[2] == 7);
    rma::apply_reduce(ReduceOp::Max, ElementType::Int32, 4, target, operand, nullptr, 3);
    CHECK(target[0] == 8 && target[1] == 4 && target[2] == -2);
    int64_t big = INT64_MAX, one = 1;
    rma::apply_reduce(ReduceOp::Sum, ElementType::Int64, 8, &big, &one, nullptr, 1);
    CHECK(big == INT64_MIN);  // wraps, as in NumPy, without undefined behaviour
    uint8_t byte = 0b1100, mask = 0b1010;
    rma::apply_reduce(ReduceOp::Bxor, ElementType::UInt8, 1, &byte, &mask, nullptr, 1);
    CHECK(byte == 0b0110);
    bool flag = true, other = true;
    rma::apply_reduce(ReduceOp::Lxor, ElementType::Bool, 1, &flag, &other, nullptr, 1);
    CHECK(!flag);
    std::complex<double> z{1, 2}, w{3, -1};
    rma::apply_reduce(ReduceOp::Prod, ElementType::Complex128, 16, &z, &w, nullptr, 1);
    CHECK(z == std::complex<double>(5, 5));
    double x = 1.5, fetched = 0;
    rma::apply_reduce(ReduceOp::NoOp, ElementType::Float64, 8, &x, nullptr, &fetched, 1);
    CHECK(fetched == 1.5 && x == 1.5);
    CHECK_THROWS(rma::UsageError, "BAND does not apply to float64",
                 rma::apply_reduce(ReduceOp::Band, ElementType::Float64, 8, &x, &x, nullptr, 1));
  });

  test::run("long double: the arithmetic ops, under the fallback lock (never lock-free)", [] {
    long double values[2] = {1.5L, -2.0L}, operand[2] = {2.0L, 3.0L}, fetched[2] = {0, 0};
    rma::apply_reduce(ReduceOp::Prod, ElementType::LongDouble, sizeof(long double), values, operand, fetched, 2);
    CHECK(values[0] == 3.0L && values[1] == -6.0L && fetched[0] == 1.5L && fetched[1] == -2.0L);
    rma::apply_reduce(ReduceOp::Max, ElementType::LongDouble, sizeof(long double), values, operand, nullptr, 2);
    CHECK(values[0] == 3.0L && values[1] == 3.0L);
    CHECK(rma::element_size(ElementType::LongDouble) == sizeof(long double));
    CHECK(!rma::lock_free_type(ElementType::LongDouble));
    CHECK(!rma::op_fits(ReduceOp::Band, ElementType::LongDouble) && !rma::compare_fits(ElementType::LongDouble));
    CHECK_THROWS(rma::UsageError, "LOR does not apply to longdouble",
                 rma::apply_reduce(ReduceOp::Lor, ElementType::LongDouble, 16, values, operand, nullptr, 1));
  });

  test::run("compare and swap", [] {
    int16_t value = 4, expected = 4, desired = 9, seen = 0;
    rma::compare_and_swap(ElementType::Int16, &value, &expected, &desired, &seen);
    CHECK(value == 9 && seen == 4);
    rma::compare_and_swap(ElementType::Int16, &value, &expected, &desired, &seen);
    CHECK(value == 9 && seen == 9);
  });

  test::run("concurrent updates are atomic per element", [] {
    // Threads stand in for the future shared-memory path, where ranks apply ops directly.
    alignas(16) std::complex<double> sum{0, 0};
    alignas(8) double product = 1;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        std::complex<double> one{1, 1};
        double factor = 1.0000001;
        for (int i = 0; i < 20000; ++i) {
          rma::apply_reduce(ReduceOp::Sum, ElementType::Complex128, 16, &sum, &one, nullptr, 1);
          rma::apply_reduce(ReduceOp::Prod, ElementType::Float64, 8, &product, &factor, nullptr, 1);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(sum == std::complex<double>(80000, 80000));
    CHECK(product > 1.0080 && product < 1.0081);  // 1.0000001^80000, if no update was lost
  });

  test::run("plain loops compute what the atomic ones do, for every op and type", [] {
    // Same bytes in, same bytes out (target and fetched), misaligned by one byte as in a
    // raw window, for counts that cover the vectorized body and its tail.
    const ElementType types[] = {
        ElementType::Bool,    ElementType::Int8,      ElementType::UInt8,     ElementType::Int16,  ElementType::UInt16,
        ElementType::Int32,   ElementType::UInt32,    ElementType::Int64,     ElementType::UInt64, ElementType::Float32,
        ElementType::Float64, ElementType::Complex64, ElementType::Complex128};
    std::mt19937 random(7);
    int compared = 0;
    for (ElementType type : types) {
      size_t size = rma::element_size(type);
      for (int op_code = 0; op_code <= static_cast<int>(ReduceOp::NoOp); ++op_code) {
        auto op = static_cast<ReduceOp>(op_code);
        if (!rma::op_fits(op, type)) continue;
        for (size_t count : {1, 7, 33}) {
          std::vector<std::byte> start(count * size + 1), operand(count * size);
          for (auto& b : start) b = static_cast<std::byte>(random() % 4);  // small values: no NaN, bools 0-3
          for (auto& b : operand) b = static_cast<std::byte>(random() % 4);
          bool floating = type == ElementType::Float32 || type == ElementType::Float64 ||
                          type == ElementType::Complex64 || type == ElementType::Complex128;
          if (floating) {
            // Whole numbers in every component, so that min, max and prod are exact both ways.
            size_t component = (type == ElementType::Float32 || type == ElementType::Complex64) ? 4 : 8;
            for (size_t i = 0; i < count * size / component; ++i) {
              for (std::byte* into : {start.data() + 1 + i * component, operand.data() + i * component}) {
                double whole = static_cast<double>(random() % 5);
                float narrow = static_cast<float>(whole);
                std::memcpy(into, component == 4 ? static_cast<void*>(&narrow) : static_cast<void*>(&whole), component);
              }
            }
          }
          if (type == ElementType::Bool) {
            for (auto& b : start) b = static_cast<std::byte>(static_cast<int>(b) & 1);
            for (auto& b : operand) b = static_cast<std::byte>(static_cast<int>(b) & 1);
          }
          auto atomic = start, plain = start;
          std::vector<std::byte> fetched_atomic(count * size), fetched_plain(count * size);
          rma::apply_reduce(op, type, size, atomic.data() + 1, operand.data(), fetched_atomic.data(), count);
          rma::apply_reduce_plain(op, type, size, plain.data() + 1, operand.data(), fetched_plain.data(), count);
          CHECK(atomic == plain);
          CHECK(fetched_atomic == fetched_plain);
          ++compared;
        }
      }
    }
    CHECK(compared > 150);
    int32_t value = 4, expected = 4, desired = 9, seen = 0;
    rma::compare_and_swap_plain(ElementType::Int32, 4, &value, &expected, &desired, &seen);
    CHECK(value == 9 && seen == 4);
    rma::compare_and_swap_plain(ElementType::Int32, 4, &value, &expected, &desired, &seen);
    CHECK(value == 9 && seen == 9);
  });

  return test::finish();
}
