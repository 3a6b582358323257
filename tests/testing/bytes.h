// Helpers for moving typed values through byte-oriented dispatch calls in tests.
#ifndef SLUICE_TESTS_TESTING_BYTES_H_
#define SLUICE_TESTS_TESTING_BYTES_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "absl/types/span.h"

namespace sluice::testing {

template <class T>
absl::Span<const uint8_t> AsBytes(const std::vector<T>& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T)};
}

template <class T>
std::vector<uint8_t> ToBytes(const std::vector<T>& values) {
  const absl::Span<const uint8_t> bytes = AsBytes(values);
  return {bytes.begin(), bytes.end()};
}

template <class T>
std::vector<T> FromBytes(const std::vector<uint8_t>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

// n values in [0, bound) from a seeded generator.
inline std::vector<uint32_t> RandomU32(size_t n, uint64_t seed, uint32_t bound) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(n);
  for (uint32_t& x : v) x = static_cast<uint32_t>(rng() % bound);
  return v;
}

inline std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 131 + (i >> 8));
  return bytes;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_BYTES_H_
