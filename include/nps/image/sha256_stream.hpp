// SPDX-License-Identifier: Apache-2.0
// Incremental SHA-256 (libcrypto), for hashing blobs while they stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace nps::image {

class Sha256Stream {
public:
    Sha256Stream();
    ~Sha256Stream();
    Sha256Stream(Sha256Stream&&) noexcept;
    Sha256Stream& operator=(Sha256Stream&&) noexcept;

    void update(const void* data, std::size_t size);
    // "sha256:<hex>" of everything given; the stream is spent afterwards.
    std::string finish_digest();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace nps::image
