// A region of a target's window: where a communication call reads or writes. It is the C++
// form of a NumPy basic index applied to the target's array (MPI's vector and subarray target
// datatypes): a byte offset and, per dimension, a count and a byte stride. Elements are
// visited in C order, which is the order of the origin's elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rma {

struct RegionDim {
  uint64_t count;
  int64_t stride;  // bytes; may be negative (a reversed slice)
};

class Region {
 public:
  static constexpr uint32_t kMaxDims = 64;
  Region() = default;
  Region(uint64_t offset, uint32_t element_size, std::vector<RegionDim> dims);
  // length bytes from offset, as elements of element_size.
  static Region contiguous(uint64_t offset, uint64_t length, uint32_t element_size);

  uint64_t offset() const noexcept { return offset_; }
  uint32_t element_size() const noexcept { return element_size_; }
  const std::vector<RegionDim>& dims() const noexcept { return dims_; }
  uint64_t elements() const noexcept;
  uint64_t bytes() const noexcept { return elements() * element_size_; }
  // One run of bytes (after merging dimensions that follow each other in memory).
  bool is_contiguous() const noexcept;
  // [first byte, one past the last byte] touched; {0, 0} when empty.
  std::pair<int64_t, int64_t> extent() const noexcept;

  // Calls visit(offset, length) for each run of consecutive bytes, in C order.
  template <class Visit>
  void for_each_run(Visit&& visit) const;

  // The region cut into pieces of at most max_bytes each (a piece holds one element at least),
  // in C order: piece k's elements are the origin's elements that follow piece k-1's. Cut along
  // the outermost dimension, in whole rows where a row fits, else row by row inside it.
  std::vector<Region> pieces(uint64_t max_bytes) const;

  void append_to(std::vector<std::byte>& out) const;
  // Parses what append_to wrote at data[position...], advancing position. Throws
  // MalformedMessage for bytes no append_to writes: too few, more than kMaxDims dimensions,
  // 0-byte elements, or counts, strides and offset whose walk would overflow 64 bits.
  static Region parse(std::span<const std::byte> data, size_t& position);

 private:
  void normalize();
  uint64_t offset_ = 0;
  uint32_t element_size_ = 1;
  std::vector<RegionDim> dims_;  // outermost first, no dimension of count 1
};

template <class Visit>
void Region::for_each_run(Visit&& visit) const {
  if (elements() == 0) return;
  // The innermost dimension is one run when its elements touch each other.
  size_t outer = dims_.size();
  uint64_t run = element_size_;
  if (!dims_.empty() && dims_.back().stride == static_cast<int64_t>(element_size_)) {
    run = dims_.back().count * element_size_;
    --outer;
  }
  std::vector<uint64_t> index(outer, 0);
  int64_t position = static_cast<int64_t>(offset_);
  for (;;) {
    visit(static_cast<uint64_t>(position), run);
    size_t d = outer;
    while (d > 0) {
      --d;
      position += dims_[d].stride;
      if (++index[d] < dims_[d].count) break;
      position -= dims_[d].stride * static_cast<int64_t>(dims_[d].count);
      index[d] = 0;
      if (d == 0) return;
    }
    if (outer == 0) return;
  }
}

}  // namespace rma
