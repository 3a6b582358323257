#include "sluice/base/copy.h"

#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace sluice {

void CopyForReader(void* dst, const void* src, uint64_t n) {
  auto* to = static_cast<uint8_t*>(dst);
  const auto* from = static_cast<const uint8_t*>(src);
#if defined(__x86_64__)
  // Below a few pages the stores' fence costs more than the lines they skip reading.
  constexpr uint64_t kStreamBytes = 64 << 10;
  if (n >= kStreamBytes) {
    const uint64_t head = (64 - (reinterpret_cast<uintptr_t>(to) & 63)) & 63;
    std::memcpy(to, from, head);
    to += head;
    from += head;
    n -= head;
    for (; n >= 64; n -= 64, to += 64, from += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(to), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 48), d);
    }
    _mm_sfence();
  }
#endif
  if (n > 0) std::memcpy(to, from, n);
}

}  // namespace sluice
