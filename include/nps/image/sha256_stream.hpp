// SPDX-License-Identifier: Apache-2.0
// Incremental SHA-256 (libcrypto), for hashing blobs while they stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "nps/base/digest.hpp"

namespace nps::image {

class Sha256Stream {
public:
    Sha256Stream();
    ~Sha256Stream();
    Sha256Stream(Sha256Stream&&) noexcept;
    Sha256Stream& operator=(Sha256Stream&&) noexcept;

    void update(const void* data, std::size_t size);
    // The digest of everything given; the stream is spent afterwards.
    Sha256 finish();
    // The same as "sha256:<hex>".
    std::string finish_digest();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace nps::image
