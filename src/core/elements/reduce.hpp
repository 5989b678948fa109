// The element-wise operations of the accumulate family. Two forms: with CPU atomics (one
// compare-and-swap loop per element), so concurrent updates of one element from any number of
// threads are exact, as if applied in some order; and plain loops, which the compiler
// vectorizes, for a caller that holds a lock every updater of that memory takes (a shared
// window's accumulate lock). Which op fits which type is checked above (Python) and again here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rma {

enum class ElementType : uint8_t {
  Bool,
  Int8,
  UInt8,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float32,
  Float64,
  Complex64,
  Complex128,
  LongDouble,  // C's long double (NumPy's longdouble): MPI_LONG_DOUBLE; never lock-free
  Bytes        // Bytes: any other fixed-size type, for put/get/REPLACE/NO_OP only
};

enum class ReduceOp : uint8_t { Sum, Prod, Min, Max, Land, Lor, Lxor, Band, Bor, Bxor, Replace, NoOp };

// The names Python sees: rma.Op's members, and the NumPy dtype of each element type (in the
// order of the enums above). The bindings build rma.Op and the dtype table from these.
inline constexpr std::array<const char*, 12> kReduceOpNames = {"SUM",  "PROD", "MIN", "MAX",  "LAND",    "LOR",
                                                               "LXOR", "BAND", "BOR", "BXOR", "REPLACE", "NO_OP"};
inline constexpr std::array<const char*, 14> kElementTypeNames = {
    "bool",  "int8",   "uint8",   "int16",   "uint16",    "int32",      "uint32",
    "int64", "uint64", "float32", "float64", "complex64", "complex128", "longdouble"};

size_t element_size(ElementType type);  // 0 for Bytes (the caller's element size applies)
// Which op applies to which type (MPI's rules): SUM, PROD on numbers; MIN, MAX on integers and
// floats; LAND, LOR, LXOR on integers and bool; BAND, BOR, BXOR on integers; REPLACE, NO_OP on all.
bool op_fits(ReduceOp op, ElementType type);
// compare_and_swap takes integers and bool.
bool compare_fits(ElementType type);
// Whether the CPU updates an aligned element of this type with a lock-free atomic.
bool lock_free_type(ElementType type);
std::string describe(ReduceOp op);
std::string describe(ElementType type);

// target[i] = op(target[i], operand[i]) for count elements, atomically per element; when
// fetched is not null it receives the values target held before. element_bytes is the
// element size (needed for Bytes). Throws UsageError if op does not fit type.
void apply_reduce(ReduceOp op, ElementType type, size_t element_bytes, void* target, const void* operand, void* fetched,
                  size_t count);

// Atomically: fetched = target; if (target == compare) target = operand. One element.
void compare_and_swap(ElementType type, void* target, const void* compare, const void* operand, void* fetched);

// The same two without atomics (any alignment), for a caller holding the memory's lock.
void apply_reduce_plain(ReduceOp op, ElementType type, size_t element_bytes, void* target, const void* operand,
                        void* fetched, size_t count);
void compare_and_swap_plain(ElementType type, size_t element_bytes, void* target, const void* compare,
                            const void* operand, void* fetched);

}  // namespace rma
