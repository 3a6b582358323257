// Portable atomics for kernel bodies: std::atomic_ref on the host, atomic* intrinsics on the
// device. All operations are relaxed: kernels synchronize through launch boundaries, and the
// atomics only make concurrent updates within one pass well defined.
#ifndef SLUICE_KERNELS_ATOMICS_H_
#define SLUICE_KERNELS_ATOMICS_H_

#include <cstdint>

#include "sluice/kernels/hd.h"

#if !defined(__CUDA_ARCH__)
#include <atomic>
#endif

namespace sluice::atomics {

// Each function takes a pointer to naturally aligned memory that may be accessed by other
// threads of the same pass, and returns the value held before the operation.

SLUICE_HD inline uint32_t FetchAdd(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(p, v);
#else
  return std::atomic_ref<uint32_t>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

SLUICE_HD inline uint64_t FetchAdd(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  return std::atomic_ref<uint64_t>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

SLUICE_HD inline uint32_t FetchOr(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicOr(p, v);
#else
  return std::atomic_ref<uint32_t>(*p).fetch_or(v, std::memory_order_relaxed);
#endif
}

SLUICE_HD inline uint64_t FetchAnd(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAnd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  return std::atomic_ref<uint64_t>(*p).fetch_and(v, std::memory_order_relaxed);
#endif
}

SLUICE_HD inline uint32_t FetchMax(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicMax(p, v);
#else
  std::atomic_ref<uint32_t> ref(*p);
  uint32_t old = ref.load(std::memory_order_relaxed);
  while (old < v && !ref.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
#endif
}

// Stores `desired` if *p equals `expected`; returns the value *p held before.
SLUICE_HD inline uint32_t CompareExchange(uint32_t* p, uint32_t expected, uint32_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(p, expected, desired);
#else
  std::atomic_ref<uint32_t>(*p).compare_exchange_strong(expected, desired,
                                                        std::memory_order_relaxed);
  return expected;
#endif
}

SLUICE_HD inline uint64_t CompareExchange(uint64_t* p, uint64_t expected, uint64_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(reinterpret_cast<unsigned long long*>(p),
                   static_cast<unsigned long long>(expected),
                   static_cast<unsigned long long>(desired));
#else
  std::atomic_ref<uint64_t>(*p).compare_exchange_strong(expected, desired,
                                                        std::memory_order_relaxed);
  return expected;
#endif
}

// Stores `v` and returns the previous value.
SLUICE_HD inline uint32_t Exchange(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicExch(p, v);
#else
  return std::atomic_ref<uint32_t>(*p).exchange(v, std::memory_order_relaxed);
#endif
}

SLUICE_HD inline uint64_t Exchange(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  return atomicExch(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  return std::atomic_ref<uint64_t>(*p).exchange(v, std::memory_order_relaxed);
#endif
}

// A load that may race with atomic updates from other threads of the same pass.
SLUICE_HD inline uint32_t Load(const uint32_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const volatile uint32_t*>(p);
#else
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(p)).load(std::memory_order_relaxed);
#endif
}

SLUICE_HD inline uint64_t Load(const uint64_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const volatile uint64_t*>(p);
#else
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_relaxed);
#endif
}

SLUICE_HD inline void Store(uint32_t* p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<volatile uint32_t*>(p) = v;
#else
  std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_relaxed);
#endif
}

}  // namespace sluice::atomics

#endif  // SLUICE_KERNELS_ATOMICS_H_
