// Unpredictable identifiers: resource handles, instance tokens and session ids must not be
// guessable by another client, so they come from the operating system's entropy source.
#ifndef SLUICE_BASE_RANDOM_H_
#define SLUICE_BASE_RANDOM_H_

#include <cstdint>
#include <string>

namespace sluice {

// Returns a 64-bit value from a generator seeded by the OS entropy source; never 0.
// Thread-safe.
uint64_t SecureRandom64();

// Returns a random 128-bit identifier formatted as 32 lowercase hex digits. Thread-safe.
std::string RandomHexId();

}  // namespace sluice

#endif  // SLUICE_BASE_RANDOM_H_
