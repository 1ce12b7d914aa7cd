// SPDX-License-Identifier: Apache-2.0
#include "nps/base/digest.hpp"

#include <unistd.h>

#include <cstdlib>

#include "nps/lazy/crypto.hpp"

namespace nps {

Sha256 sha256(std::string_view data)
{
    Sha256 out{};
    unsigned int len = 0;
    // Fails only when libcrypto cannot be loaded (said on stderr): a broken
    // installation. A digest that is not one would make wrong dedup keys and
    // frame hashes, so nothing goes on.
    if (sym_EVP_Digest(data.data(), data.size(), out.data(), &len, sym_EVP_sha256(), nullptr) != 1 ||
        len != out.size()) {
        static constexpr char kMessage[] = "nps-runner: error: SHA-256 is unavailable without libcrypto; stopping\n";
        (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
        std::abort();
    }
    return out;
}

std::string to_hex(std::string_view bytes)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0xf]);
    }
    return out;
}

std::string to_hex(const Sha256& digest)
{
    return to_hex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string sha256_hex(std::string_view data)
{
    return to_hex(sha256(data));
}

namespace {

constexpr char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode(std::string_view in, const char* alphabet, bool pad)
{
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8) |
                          std::uint8_t(in[i + 2]);
        out.push_back(alphabet[(v >> 18) & 63]);
        out.push_back(alphabet[(v >> 12) & 63]);
        out.push_back(alphabet[(v >> 6) & 63]);
        out.push_back(alphabet[v & 63]);
    }
    std::size_t rest = in.size() - i;
    if (rest > 0) {
        std::uint32_t v = std::uint8_t(in[i]) << 16;
        if (rest == 2)
            v |= std::uint8_t(in[i + 1]) << 8;
        out.push_back(alphabet[(v >> 18) & 63]);
        out.push_back(alphabet[(v >> 12) & 63]);
        if (rest == 2)
            out.push_back(alphabet[(v >> 6) & 63]);
        if (pad)
            out.append(rest == 1 ? "==" : "=");
    }
    return out;
}

std::optional<std::string> decode(std::string_view in, const char* alphabet)
{
    while (!in.empty() && in.back() == '=')
        in.remove_suffix(1);
    if (in.size() % 4 == 1)
        return std::nullopt;
    signed char table[256];
    for (auto& t : table)
        t = -1;
    for (int k = 0; k < 64; ++k)
        table[static_cast<unsigned char>(alphabet[k])] = static_cast<signed char>(k);
    std::string out;
    out.reserve(in.size() * 3 / 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : in) {
        if (table[c] < 0)
            return std::nullopt;
        acc = (acc << 6) | static_cast<std::uint32_t>(table[c]);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    // Leftover bits must be zero for a canonical encoding.
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return std::nullopt;
    return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) { return encode(bytes, kStd, true); }
std::optional<std::string> base64_decode(std::string_view text) { return decode(text, kStd); }
std::string base64url_encode(std::string_view bytes) { return encode(bytes, kUrl, false); }
std::optional<std::string> base64url_decode(std::string_view text) { return decode(text, kUrl); }

}  // namespace nps
