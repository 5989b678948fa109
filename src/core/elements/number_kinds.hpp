// Which numbers an element type takes as values of its own: the one rule for an origin given
// as a number or a list of numbers. The bindings apply it to a Python number
// (arguments::scalar) and export it to rma.Window._origin_of, which applies it to the NumPy
// kind of a list (rma._core.ACCEPTED_NUMBER_KINDS, register_constants.cpp). A number of a
// kind the element does not take is a TypeError there: the program converts on purpose.
#pragma once

#include <cstdint>
#include <optional>

#include "elements/reduce.hpp"

namespace rma {

// Kinds of numbers, each taking the kinds before it but bool: an integer is a real and a
// complex value, a bool is none of them.
enum class NumberKind : uint8_t { Bool, Integer, Real, Complex };
inline constexpr NumberKind kNumberKinds[] = {NumberKind::Bool, NumberKind::Integer, NumberKind::Real,
                                              NumberKind::Complex};

// The kind of the values an element type holds; none for Bytes (raw bytes take no numbers).
constexpr std::optional<NumberKind> number_kind(ElementType type) {
  switch (type) {
    case ElementType::Bool: return NumberKind::Bool;
    case ElementType::Int8:
    case ElementType::UInt8:
    case ElementType::Int16:
    case ElementType::UInt16:
    case ElementType::Int32:
    case ElementType::UInt32:
    case ElementType::Int64:
    case ElementType::UInt64: return NumberKind::Integer;
    case ElementType::Float32:
    case ElementType::Float64:
    case ElementType::LongDouble: return NumberKind::Real;
    case ElementType::Complex64:
    case ElementType::Complex128: return NumberKind::Complex;
    case ElementType::Bytes: return std::nullopt;
  }
  return std::nullopt;
}

// Whether an element of kind `element` takes a number of kind `value`: bool only bool; the
// others any kind up to their own (an int into a float, not a float into an int). Whether the
// number fits the element's range is the caller's to check.
constexpr bool takes(NumberKind element, NumberKind value) {
  if (element == NumberKind::Bool || value == NumberKind::Bool) return element == value;
  return value <= element;
}

}  // namespace rma
