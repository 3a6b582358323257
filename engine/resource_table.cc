#include "sluice/engine/resource_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/random.h"
#include "sluice/base/status_macros.h"

namespace sluice {

ResourceTable::Pins::Pins(Pins&& other) noexcept
    : table_(std::exchange(other.table_, nullptr)),
      entries_(std::move(other.entries_)),
      buffers_(std::move(other.buffers_)) {}

ResourceTable::Pins& ResourceTable::Pins::operator=(Pins&& other) noexcept {
  if (this != &other) {
    Release();
    table_ = std::exchange(other.table_, nullptr);
    entries_ = std::move(other.entries_);
    buffers_ = std::move(other.buffers_);
  }
  return *this;
}

ResourceTable::Pins::~Pins() { Release(); }

void ResourceTable::Pins::Release() {
  if (table_ != nullptr) table_->Unpin(entries_);
  table_ = nullptr;
  entries_.clear();
  buffers_.clear();
}

ResourceTable::ResourceTable(Device* device, const Options& options)
    : device_(device), options_(options) {}

ResourceTable::~ResourceTable() {
  absl::MutexLock lock(&mu_);
  for (auto& [handle, entry] : live_) ReleaseMemory(entry);
  for (auto& [handle, entry] : deferred_) ReleaseMemory(entry);
  live_.clear();
  deferred_.clear();
}

void ResourceTable::ReleaseMemory(const Entry& entry) {
  device_->Free(entry.buffer);
  const uint64_t counted = Counted(entry.buffer.bytes);
  bytes_ -= counted;
  if (options_.shared_quota != nullptr) options_.shared_quota->Release(counted);
}

namespace {

absl::Status HandleInUseError(uint64_t handle) {
  return absl::AlreadyExistsError(
      absl::StrFormat("the session already holds a buffer with handle %016x", handle));
}

}  // namespace

absl::StatusOr<uint64_t> ResourceTable::Allocate(uint64_t bytes, uint64_t chosen) {
  const uint64_t counted = Counted(bytes);
  {
    absl::MutexLock lock(&mu_);
    if (chosen != 0 && (live_.contains(chosen) || deferred_.contains(chosen))) {
      return HandleInUseError(chosen);
    }
    if (live_.size() + deferred_.size() + allocating_ >= options_.max_buffers) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("session holds the most buffers allowed (%d)", options_.max_buffers));
    }
    if (counted > options_.memory_quota || bytes_ > options_.memory_quota - counted) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "session memory quota: %d bytes requested%s, %d of %d in use", bytes,
          counted == bytes ? "" : absl::StrFormat(" (a buffer counts %d)", counted), bytes_,
          options_.memory_quota));
    }
    if (options_.shared_quota != nullptr) {
      const std::string& quota = options_.shared_quota->name();
      RETURN_IF_ERROR(options_.shared_quota->Reserve(
          counted, quota.empty() ? "the client's memory quota" : quota.c_str()));
    }
    // Reserve the bytes and the buffer slot now, so that concurrent allocations cannot
    // overshoot either limit together.
    bytes_ += counted;
    ++allocating_;
  }
  absl::StatusOr<DeviceBuffer> buffer = device_->Allocate(bytes);
  absl::MutexLock lock(&mu_);
  --allocating_;
  if (!buffer.ok()) {
    bytes_ -= counted;
    if (options_.shared_quota != nullptr) options_.shared_quota->Release(counted);
    if (options_.discreet && absl::IsResourceExhausted(buffer.status())) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the device has no room for %d more bytes now (its memory is shared with other "
          "sessions): retry, or allocate less",
          bytes));
    }
    return buffer.status();
  }
  uint64_t handle = chosen;
  if (handle != 0 && (live_.contains(handle) || deferred_.contains(handle))) {
    // Taken meanwhile by a concurrent allocation of the same handle.
    ReleaseMemory(Entry{.buffer = *buffer});
    return HandleInUseError(handle);
  }
  while (handle == 0 || live_.contains(handle) || deferred_.contains(handle)) {
    handle = SecureRandom64();
  }
  live_.emplace(handle, Entry{.buffer = *buffer});
  return handle;
}

absl::Status ResourceTable::Free(uint64_t handle) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(handle);
  if (it == live_.end()) {
    return absl::NotFoundError(absl::StrFormat("no buffer with handle %016x", handle));
  }
  if (it->second.pins > 0) {
    deferred_.emplace(handle, it->second);
  } else {
    ReleaseMemory(it->second);
  }
  live_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ResourceTable::Size(uint64_t handle) const {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(handle);
  if (it == live_.end()) {
    return absl::NotFoundError(absl::StrFormat("no buffer with handle %016x", handle));
  }
  return it->second.buffer.bytes;
}

absl::StatusOr<ResourceTable::Pins> ResourceTable::Pin(absl::Span<const uint64_t> handles,
                                                        size_t* failed_index) {
  Pins pins;
  pins.buffers_.reserve(handles.size());
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < handles.size(); ++i) {
    const uint64_t handle = handles[i];
    auto it = live_.find(handle);
    if (it == live_.end()) {
      if (failed_index != nullptr) *failed_index = i;
      return absl::NotFoundError(absl::StrFormat("no buffer with handle %016x", handle));
    }
    pins.buffers_.push_back(it->second.buffer);
  }
  pins.entries_.assign(handles.begin(), handles.end());
  std::sort(pins.entries_.begin(), pins.entries_.end());
  pins.entries_.erase(std::unique(pins.entries_.begin(), pins.entries_.end()),
                      pins.entries_.end());
  for (uint64_t handle : pins.entries_) ++live_[handle].pins;
  pins.table_ = this;
  return pins;
}

void ResourceTable::Unpin(absl::Span<const uint64_t> keys) {
  absl::MutexLock lock(&mu_);
  for (uint64_t handle : keys) {
    if (auto it = live_.find(handle); it != live_.end()) {
      --it->second.pins;
      continue;
    }
    auto it = deferred_.find(handle);
    if (it == deferred_.end()) continue;  // the table freed everything already
    if (--it->second.pins == 0) {
      ReleaseMemory(it->second);
      deferred_.erase(it);
    }
  }
}

size_t ResourceTable::FreeAll() {
  absl::MutexLock lock(&mu_);
  const size_t freed = live_.size();
  for (auto& [handle, entry] : live_) {
    if (entry.pins > 0) {
      deferred_.emplace(handle, entry);
    } else {
      ReleaseMemory(entry);
    }
  }
  live_.clear();
  return freed;
}

size_t ResourceTable::buffer_count() const {
  absl::MutexLock lock(&mu_);
  return live_.size();
}

uint64_t ResourceTable::bytes_in_use() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace sluice
