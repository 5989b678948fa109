#include "elements/region.hpp"

#include <algorithm>
#include <cstring>

#include "base/errors.hpp"
#include "base/wire.hpp"

namespace rma {

Region::Region(uint64_t offset, uint32_t element_size, std::vector<RegionDim> dims)
    : offset_(offset), element_size_(element_size), dims_(std::move(dims)) {
  if (element_size == 0) throw UsageError("rma: a region's element size must be positive");
  normalize();
}

Region Region::contiguous(uint64_t offset, uint64_t length, uint32_t element_size) {
  return Region(offset, element_size, {{length / element_size, static_cast<int64_t>(element_size)}});
}

void Region::normalize() {
  for (const auto& dim : dims_) {
    if (dim.count == 0) {  // an empty region touches nothing
      dims_ = {{0, static_cast<int64_t>(element_size_)}};
      return;
    }
  }
  std::vector<RegionDim> kept;
  for (const auto& dim : dims_) {
    if (dim.count != 1) kept.push_back(dim);
  }
  // Merge a dimension into the one inside it when its stride steps exactly over that one.
  std::vector<RegionDim> merged;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    if (!merged.empty() && it->stride == merged.back().stride * static_cast<int64_t>(merged.back().count)) {
      merged.back().count *= it->count;
    } else {
      merged.push_back(*it);
    }
  }
  dims_.assign(merged.rbegin(), merged.rend());
}

uint64_t Region::elements() const noexcept {
  uint64_t count = 1;
  for (const auto& dim : dims_) count *= dim.count;
  return count;
}

bool Region::is_contiguous() const noexcept {
  return dims_.empty() || (dims_.size() == 1 && dims_[0].stride == static_cast<int64_t>(element_size_)) ||
         elements() == 0;
}

std::pair<int64_t, int64_t> Region::extent() const noexcept {
  if (elements() == 0) return {0, 0};
  int64_t low = static_cast<int64_t>(offset_), high = low;
  for (const auto& dim : dims_) {
    int64_t span = dim.stride * static_cast<int64_t>(dim.count - 1);
    (span < 0 ? low : high) += span;
  }
  return {low, high + element_size_};
}

std::vector<Region> Region::pieces(uint64_t max_bytes) const {
  if (bytes() <= max_bytes || dims_.empty()) return {*this};
  std::vector<Region> out;
  const RegionDim& outer = dims_.front();
  std::vector<RegionDim> inner(dims_.begin() + 1, dims_.end());
  uint64_t row_bytes = bytes() / outer.count;
  auto row_offset = [&](uint64_t row) {
    return static_cast<uint64_t>(static_cast<int64_t>(offset_) + outer.stride * static_cast<int64_t>(row));
  };
  if (row_bytes <= max_bytes) {
    uint64_t rows = max_bytes / row_bytes;
    for (uint64_t first = 0; first < outer.count; first += rows) {
      std::vector<RegionDim> dims{{std::min(rows, outer.count - first), outer.stride}};
      dims.insert(dims.end(), inner.begin(), inner.end());
      out.emplace_back(row_offset(first), element_size_, std::move(dims));
    }
    return out;
  }
  for (uint64_t row = 0; row < outer.count; ++row) {
    for (Region& piece : Region(row_offset(row), element_size_, inner).pieces(max_bytes))
      out.push_back(std::move(piece));
  }
  return out;
}

void Region::append_to(std::vector<std::byte>& out) const {
  wire::append<uint64_t>(out, offset_);
  wire::append<uint32_t>(out, element_size_);
  wire::append<uint32_t>(out, static_cast<uint32_t>(dims_.size()));
  for (const auto& dim : dims_) {
    wire::append<uint64_t>(out, dim.count);
    wire::append<int64_t>(out, dim.stride);
  }
}

Region Region::parse(std::span<const std::byte> data, size_t& position) {
  auto offset = wire::take<uint64_t>(data, position);
  auto element_size = wire::take<uint32_t>(data, position);
  auto ndim = wire::take<uint32_t>(data, position);
  if (ndim > kMaxDims) throw MalformedMessage("a region of " + std::to_string(ndim) + " dimensions");
  if (element_size == 0) throw MalformedMessage("a region of 0-byte elements");
  std::vector<RegionDim> dims(ndim);
  for (auto& dim : dims) {
    dim.count = wire::take<uint64_t>(data, position);
    dim.stride = wire::take<int64_t>(data, position);
  }
  // Bounds that no region of a real window comes near, under which nothing a region's walk
  // computes (for_each_run, extent, bytes) can overflow: each |stride| * count, the offset, and
  // their sum below 2^62, and the elements times their size too.
  constexpr uint64_t kBound = uint64_t{1} << 62;
  auto overflow = [&] {
    return MalformedMessage("a region whose offsets overflow (offset " + std::to_string(offset) + ")");
  };
  if (offset >= kBound) throw overflow();
  uint64_t reach = offset, elements = element_size;  // (each sum below 2^63: none wraps)
  bool empty = false;
  for (const auto& dim : dims) {
    uint64_t magnitude = dim.stride < 0 ? 0 - static_cast<uint64_t>(dim.stride) : static_cast<uint64_t>(dim.stride);
    uint64_t span = 0;
    if (dim.count == 0) empty = true;
    if (__builtin_mul_overflow(magnitude, dim.count, &span) || span >= kBound || (reach += span) >= kBound ||
        (!empty && (__builtin_mul_overflow(elements, dim.count, &elements) || elements >= kBound))) {
      throw overflow();
    }
  }
  return Region(offset, element_size, std::move(dims));
}

}  // namespace rma
