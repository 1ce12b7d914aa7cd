// SPDX-License-Identifier: Apache-2.0
#include "sha256_stream.hpp"

#include <openssl/evp.h>

#include <cstdlib>

namespace nps::image::detail {

void Sha256Stream::Free::operator()(evp_md_ctx_st* ctx) const
{
    EVP_MD_CTX_free(ctx);
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new())
{
    // Allocation or initialisation failing here leaves nothing sensible to
    // hash with; a digest we cannot compute must never be reported as one.
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
        std::abort();
}

Sha256Stream::~Sha256Stream() = default;
Sha256Stream::Sha256Stream(Sha256Stream&&) noexcept = default;
Sha256Stream& Sha256Stream::operator=(Sha256Stream&&) noexcept = default;

void Sha256Stream::update(const void* data, std::size_t size)
{
    EVP_DigestUpdate(ctx_.get(), data, size);
}

Sha256 Sha256Stream::finish()
{
    Sha256 out{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), out.data(), &len);
    return out;
}

}  // namespace nps::image::detail
