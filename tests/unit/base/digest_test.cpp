// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/base/digest.hpp"

TEST_CASE("sha256 hex of known inputs")
{
    CHECK(nps::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(nps::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("base64 and base64url round trips and rejections")
{
    CHECK(nps::base64_encode("foob") == "Zm9vYg==");
    CHECK(nps::base64_decode("Zm9vYg==").value() == "foob");
    CHECK(nps::base64_decode("Zm9vYg").value() == "foob");
    CHECK_FALSE(nps::base64_decode("Zm9v!g=="));
    CHECK_FALSE(nps::base64_decode("Z"));
    std::string bytes("\xfb\xff\x00\x01", 4);
    CHECK(nps::base64url_encode(bytes) == "-_8AAQ");
    CHECK(nps::base64url_decode("-_8AAQ").value() == bytes);
    CHECK_FALSE(nps::base64url_decode("+/8AAQ"));
    // 43 'A's decode to 32 zero bytes (the callback-secret vector).
    CHECK(nps::base64url_decode(std::string(43, 'A')).value() == std::string(32, '\0'));
}
