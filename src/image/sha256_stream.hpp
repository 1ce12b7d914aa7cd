// SPDX-License-Identifier: Apache-2.0
// Sha256Stream: SHA-256 over data that arrives in pieces (libcrypto EVP).
#pragma once

#include <cstddef>
#include <memory>

#include "nps/base/digest.hpp"

struct evp_md_ctx_st;

namespace nps::image::detail {

class Sha256Stream {
public:
    Sha256Stream();
    ~Sha256Stream();
    Sha256Stream(Sha256Stream&&) noexcept;
    Sha256Stream& operator=(Sha256Stream&&) noexcept;

    void update(const void* data, std::size_t size);
    // The digest of everything so far; the stream is finished afterwards.
    Sha256 finish();

private:
    struct Free {
        void operator()(evp_md_ctx_st* ctx) const;
    };
    std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

}  // namespace nps::image::detail
