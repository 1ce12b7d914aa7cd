// SPDX-License-Identifier: Apache-2.0
#include "nps/image/sha256_stream.hpp"

#include <new>

#include "nps/base/digest.hpp"
#include "nps/lazy/crypto.hpp"

namespace nps::image {

struct Sha256Stream::State {
    EVP_MD_CTX* ctx = nullptr;
    ~State() { sym_EVP_MD_CTX_free(ctx); }
};

Sha256Stream::Sha256Stream() : state_(std::make_unique<State>())
{
    state_->ctx = sym_EVP_MD_CTX_new();
    // Only allocation (or loading libcrypto, said on stderr) can fail here;
    // treat it as the allocation failure it is.
    if (!state_->ctx || sym_EVP_DigestInit_ex(state_->ctx, sym_EVP_sha256(), nullptr) != 1)
        throw std::bad_alloc();
}

Sha256Stream::~Sha256Stream() = default;
Sha256Stream::Sha256Stream(Sha256Stream&&) noexcept = default;
Sha256Stream& Sha256Stream::operator=(Sha256Stream&&) noexcept = default;

void Sha256Stream::update(const void* data, std::size_t size)
{
    sym_EVP_DigestUpdate(state_->ctx, data, size);
}

Sha256 Sha256Stream::finish()
{
    Sha256 out{};
    unsigned int len = 0;
    sym_EVP_DigestFinal_ex(state_->ctx, out.data(), &len);
    return out;
}

std::string Sha256Stream::finish_digest()
{
    return "sha256:" + to_hex(finish());
}

}  // namespace nps::image
