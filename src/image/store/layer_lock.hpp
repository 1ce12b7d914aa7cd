// SPDX-License-Identifier: Apache-2.0
// LayerLock: an exclusive flock() on a lock file in the layers directory,
// shared by every runner process using the same state directory.
//
// The holder unlinks the file before it unlocks, so lock files do not pile
// up; a waiter that wakes holding a lock on an unlinked file (or on one
// replaced meanwhile) starts over with the file now at the path.
#pragma once

#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

class LayerLock {
public:
    // Blocks until the lock `name` in `dir_fd` is held.
    static Result<LayerLock> acquire(int dir_fd, std::string name);

    LayerLock(LayerLock&&) noexcept = default;
    LayerLock& operator=(LayerLock&&) noexcept = delete;
    ~LayerLock();

private:
    LayerLock(int dir_fd, std::string name, UniqueFd fd) : dir_fd_(dir_fd), name_(std::move(name)), fd_(std::move(fd)) {}

    int dir_fd_;
    std::string name_;
    UniqueFd fd_;
};

}  // namespace nps::image::detail
