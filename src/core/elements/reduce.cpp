#include "elements/reduce.hpp"

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "base/errors.hpp"

namespace rma {

namespace {

// Elements that are misaligned (possible in a raw-byte window) or too wide for a lock-free
// compare-and-swap are updated under this lock instead.
std::mutex& fallback_lock() {
  static std::mutex lock;
  return lock;
}

template <class T>
bool lock_free_at(const void* address) {
  return std::atomic_ref<T>::is_always_lock_free &&
         reinterpret_cast<uintptr_t>(address) % std::atomic_ref<T>::required_alignment == 0;
}

// Applies update(old) -> new to one element atomically and returns the old value.
template <class T, class Update>
T atomic_update(void* address, Update update) {
  if (lock_free_at<T>(address)) {
    std::atomic_ref<T> element(*static_cast<T*>(address));
    T old = element.load(std::memory_order_relaxed);
    // compare_exchange compares representations; a NaN stored compares equal to itself.
    while (!element.compare_exchange_weak(old, update(old), std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
    return old;
  }
  std::lock_guard guard(fallback_lock());
  T old;
  std::memcpy(&old, address, sizeof(T));
  T updated = update(old);
  std::memcpy(address, &updated, sizeof(T));
  return old;
}

template <class T>
T load(const void* address) {
  T value;
  std::memcpy(&value, address, sizeof(T));
  return value;
}

template <class T>
constexpr bool is_complex = false;
template <class T>
constexpr bool is_complex<std::complex<T>> = true;

// The new value of one element under op, for the types where op fits.
template <class T>
T combine(ReduceOp op, T current, T operand) {
  switch (op) {
    case ReduceOp::Replace: return operand;
    case ReduceOp::NoOp: return current;
    // Integers wrap around as in NumPy: the arithmetic is done in uint64_t, where overflow is
    // defined, and truncated back (modulo 2^n since C++20).
    case ReduceOp::Sum:
      if constexpr (std::is_same_v<T, bool>) break;
      else if constexpr (std::is_integral_v<T>) return static_cast<T>(uint64_t(current) + uint64_t(operand));
      else return current + operand;
    case ReduceOp::Prod:
      if constexpr (std::is_same_v<T, bool>) break;
      else if constexpr (std::is_integral_v<T>) return static_cast<T>(uint64_t(current) * uint64_t(operand));
      else return current * operand;
    case ReduceOp::Min:
      if constexpr (is_complex<T> || std::is_same_v<T, bool>) break;
      else return std::min(current, operand);
    case ReduceOp::Max:
      if constexpr (is_complex<T> || std::is_same_v<T, bool>) break;
      else return std::max(current, operand);
    case ReduceOp::Land:
      if constexpr (std::is_integral_v<T>) return static_cast<T>(current && operand);
      break;
    case ReduceOp::Lor:
      if constexpr (std::is_integral_v<T>) return static_cast<T>(current || operand);
      break;
    case ReduceOp::Lxor:
      if constexpr (std::is_integral_v<T>) return static_cast<T>((current != T{}) != (operand != T{}));
      break;
    case ReduceOp::Band:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<T>(current & operand);
      break;
    case ReduceOp::Bor:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<T>(current | operand);
      break;
    case ReduceOp::Bxor:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<T>(current ^ operand);
      break;
  }
  throw UsageError("rma: " + describe(op) + " does not apply to this type");
}

template <class T>
void apply_typed(ReduceOp op, void* target, const void* operand, void* fetched, size_t count) {
  auto* bytes = static_cast<std::byte*>(target);
  auto* in = static_cast<const std::byte*>(operand);
  auto* out = static_cast<std::byte*>(fetched);
  for (size_t i = 0; i < count; ++i) {
    T old;
    if (op == ReduceOp::NoOp) {  // no operand: NO_OP only reads
      old = atomic_update<T>(bytes + i * sizeof(T), [](T current) { return current; });
    } else {
      T value = load<T>(in + i * sizeof(T));
      old = atomic_update<T>(bytes + i * sizeof(T), [op, value](T current) { return combine<T>(op, current, value); });
    }
    if (out != nullptr) std::memcpy(out + i * sizeof(T), &old, sizeof(T));
  }
}

template <class T>
void cas_typed(void* target, const void* compare, const void* operand, void* fetched) {
  T expected = load<T>(compare), desired = load<T>(operand);
  T old = atomic_update<T>(
      target, [&](T current) { return std::memcmp(&current, &expected, sizeof(T)) == 0 ? desired : current; });
  std::memcpy(fetched, &old, sizeof(T));
}

// The element-wise loops of large accumulates are compiled twice on x86-64: for AVX2 (32 bytes
// a step) and for any x86-64 CPU (SSE2, 16 bytes); the loader picks one by the CPU it runs on
// (target_clones: an ifunc). Other architectures get the one plain version.
#if defined(__x86_64__)
#define RMA_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RMA_VECTOR_CLONES
#endif

// target[i] = Op(target[i], operand[i]) without atomics: with Op fixed at compile time, the
// loop is a plain element-wise loop that the compiler vectorizes.
template <class T, ReduceOp Op>
RMA_VECTOR_CLONES void plain_loop(std::byte* target, const std::byte* operand, std::byte* fetched, size_t count) {
  if (fetched != nullptr) std::memcpy(fetched, target, count * sizeof(T));
  if constexpr (Op == ReduceOp::NoOp) {
    return;
  } else if constexpr (Op == ReduceOp::Replace) {
    std::memcpy(target, operand, count * sizeof(T));
  } else {
    for (size_t i = 0; i < count; ++i) {
      T updated = combine<T>(Op, load<T>(target + i * sizeof(T)), load<T>(operand + i * sizeof(T)));
      std::memcpy(target + i * sizeof(T), &updated, sizeof(T));
    }
  }
}

template <class T>
void plain_typed(ReduceOp op, void* target, const void* operand, void* fetched, size_t count) {
  auto* to = static_cast<std::byte*>(target);
  auto* in = static_cast<const std::byte*>(operand);
  auto* out = static_cast<std::byte*>(fetched);
  switch (op) {
    case ReduceOp::Sum: return plain_loop<T, ReduceOp::Sum>(to, in, out, count);
    case ReduceOp::Prod: return plain_loop<T, ReduceOp::Prod>(to, in, out, count);
    case ReduceOp::Min: return plain_loop<T, ReduceOp::Min>(to, in, out, count);
    case ReduceOp::Max: return plain_loop<T, ReduceOp::Max>(to, in, out, count);
    case ReduceOp::Land: return plain_loop<T, ReduceOp::Land>(to, in, out, count);
    case ReduceOp::Lor: return plain_loop<T, ReduceOp::Lor>(to, in, out, count);
    case ReduceOp::Lxor: return plain_loop<T, ReduceOp::Lxor>(to, in, out, count);
    case ReduceOp::Band: return plain_loop<T, ReduceOp::Band>(to, in, out, count);
    case ReduceOp::Bor: return plain_loop<T, ReduceOp::Bor>(to, in, out, count);
    case ReduceOp::Bxor: return plain_loop<T, ReduceOp::Bxor>(to, in, out, count);
    case ReduceOp::Replace: return plain_loop<T, ReduceOp::Replace>(to, in, out, count);
    case ReduceOp::NoOp: return plain_loop<T, ReduceOp::NoOp>(to, in, out, count);
  }
}

// Calls f with a value of the C++ type of `type` (as a tag).
template <class F>
void dispatch(ElementType type, F&& f) {
  switch (type) {
    case ElementType::Bool: return f(bool{});
    case ElementType::Int8: return f(int8_t{});
    case ElementType::UInt8: return f(uint8_t{});
    case ElementType::Int16: return f(int16_t{});
    case ElementType::UInt16: return f(uint16_t{});
    case ElementType::Int32: return f(int32_t{});
    case ElementType::UInt32: return f(uint32_t{});
    case ElementType::Int64: return f(int64_t{});
    case ElementType::UInt64: return f(uint64_t{});
    case ElementType::Float32: return f(float{});
    case ElementType::Float64: return f(double{});
    case ElementType::Complex64: return f(std::complex<float>{});
    case ElementType::Complex128: return f(std::complex<double>{});
    case ElementType::LongDouble: return f(0.0L);
    case ElementType::Bytes: break;
  }
  throw UsageError("rma: " + describe(type) + " elements take only REPLACE and NO_OP");
}

}  // namespace

size_t element_size(ElementType type) {
  size_t size = 0;
  if (type == ElementType::Bytes) return 0;
  dispatch(type, [&](auto tag) { size = sizeof(tag); });
  return size;
}

bool lock_free_type(ElementType type) {
  if (type == ElementType::Bytes) return false;
  bool lock_free = false;
  dispatch(type, [&](auto tag) { lock_free = std::atomic_ref<decltype(tag)>::is_always_lock_free; });
  return lock_free;
}

bool op_fits(ReduceOp op, ElementType type) {
  if (op == ReduceOp::Replace || op == ReduceOp::NoOp) return true;
  bool is_bool = type == ElementType::Bool;
  bool is_float = type == ElementType::Float32 || type == ElementType::Float64 || type == ElementType::LongDouble;
  bool is_complex = type == ElementType::Complex64 || type == ElementType::Complex128;
  bool is_integer = !is_bool && !is_float && !is_complex && type != ElementType::Bytes;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod: return is_integer || is_float || is_complex;
    case ReduceOp::Min:
    case ReduceOp::Max: return is_integer || is_float;
    case ReduceOp::Land:
    case ReduceOp::Lor:
    case ReduceOp::Lxor: return is_integer || is_bool;
    case ReduceOp::Band:
    case ReduceOp::Bor:
    case ReduceOp::Bxor: return is_integer;
    default: return false;
  }
}

bool compare_fits(ElementType type) {
  return type != ElementType::Bytes && type != ElementType::Float32 && type != ElementType::Float64 &&
         type != ElementType::Complex64 && type != ElementType::Complex128 && type != ElementType::LongDouble;
}

std::string describe(ReduceOp op) {
  auto index = static_cast<size_t>(op);
  return index < kReduceOpNames.size() ? kReduceOpNames[index] : "op " + std::to_string(index);
}

std::string describe(ElementType type) {
  if (type == ElementType::Bytes) return "raw bytes";
  auto index = static_cast<size_t>(type);
  return index < kElementTypeNames.size() ? kElementTypeNames[index] : "type " + std::to_string(index);
}

void apply_reduce(ReduceOp op, ElementType type, size_t element_bytes, void* target, const void* operand, void* fetched,
                  size_t count) {
  if (!op_fits(op, type)) {
    throw UsageError("rma: " + describe(op) + " does not apply to " + describe(type));
  }
  if (type == ElementType::Bytes) {
    // Raw elements: REPLACE and NO_OP are plain copies, under the fallback lock so that they
    // are atomic with respect to each other.
    std::lock_guard guard(fallback_lock());
    size_t bytes = element_bytes * count;
    if (fetched != nullptr) std::memcpy(fetched, target, bytes);
    if (op == ReduceOp::Replace) std::memcpy(target, operand, bytes);
    return;
  }
  dispatch(type, [&](auto tag) { apply_typed<decltype(tag)>(op, target, operand, fetched, count); });
}

void compare_and_swap(ElementType type, void* target, const void* compare, const void* operand, void* fetched) {
  dispatch(type, [&](auto tag) { cas_typed<decltype(tag)>(target, compare, operand, fetched); });
}

void apply_reduce_plain(ReduceOp op, ElementType type, size_t element_bytes, void* target, const void* operand,
                        void* fetched, size_t count) {
  if (!op_fits(op, type)) {
    throw UsageError("rma: " + describe(op) + " does not apply to " + describe(type));
  }
  if (type == ElementType::Bytes) {
    size_t bytes = element_bytes * count;
    if (fetched != nullptr) std::memcpy(fetched, target, bytes);
    if (op == ReduceOp::Replace) std::memcpy(target, operand, bytes);
    return;
  }
  dispatch(type, [&](auto tag) { plain_typed<decltype(tag)>(op, target, operand, fetched, count); });
}

void compare_and_swap_plain(ElementType type, size_t element_bytes, void* target, const void* compare,
                            const void* operand, void* fetched) {
  size_t size = type == ElementType::Bytes ? element_bytes : element_size(type);
  std::memcpy(fetched, target, size);
  if (std::memcmp(target, compare, size) == 0) std::memcpy(target, operand, size);
}

}  // namespace rma
