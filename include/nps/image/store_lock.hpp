// SPDX-License-Identifier: Apache-2.0
// The image store lock: flock(2) on <images>/lock, across processes.
//
// Shared: anything that writes blobs or records images (import, pull) and
// pinning (pins.hpp); these may run at the same time. Exclusive: gc and rm,
// which delete. So a deletion never races a half-done import, and a pin is
// either seen by a whole gc sweep or taken after it. The lock dies with its
// holder (the kernel drops flock locks of a dead process).
#pragma once

#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image {

enum class LockMode { shared, exclusive };

class StoreLock {
public:
    // Blocks until the lock is granted (EINTR is retried).
    static Result<StoreLock> acquire(const std::string& lock_file, LockMode mode);

    StoreLock(StoreLock&&) noexcept = default;
    StoreLock& operator=(StoreLock&&) noexcept = default;
    // Releases the lock (closing the descriptor).
    ~StoreLock() = default;

private:
    explicit StoreLock(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

}  // namespace nps::image
