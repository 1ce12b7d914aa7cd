// SPDX-License-Identifier: Apache-2.0
// Callback destination policy and X-NPS-Signature (NPS-5 §9.4).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "nps/base/digest.hpp"
#include "nps/proto/callback_policy.hpp"
#include "nps/proto/callback_signature.hpp"

using namespace nps::proto;

namespace {

const std::string kSecret(43, 'A');  // 32 zero bytes
const std::string kBody = R"({"task_id":"task-callback","state":"completed"})";
const std::string kSignature = "sha256=7c6eb105f5e2f06f2e75fa7112058c4b0ad6701140494968e044d94e56879a59";

std::string url_error(std::string_view url)
{
    auto result = check_callback_url(url);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == "NOP-CALLBACK-INVALID");
    return result.error().message;
}

}  // namespace

TEST_CASE("callback url: accepted")
{
    for (const char* url : {"https://hooks.example.com/cb", "HTTPS://hooks.example.com:8443/cb?x=1",
                            "https://8.8.8.8/callback", "https://[2001:4860:4860::8888]/cb", "https://example.com",
                            "https://example.com./cb"}) {
        CAPTURE(url);
        CHECK(check_callback_url(url).has_value());
    }
}

TEST_CASE("callback url: rejected with a reason")
{
    CHECK(url_error("http://example.com/cb") == "callback_url: scheme must be https, got 'http'");
    CHECK(url_error("https://user:secret@example.test/cb") == "callback_url: user-info in the URL is not allowed");
    CHECK(url_error("https://@example.test/cb") == "callback_url: user-info in the URL is not allowed");
    CHECK(url_error("https:///cb") == "callback_url: the URL has no host");
    CHECK(url_error("https://10.0.0.8/cb") == "callback_url: host '10.0.0.8' is not a public address");
    CHECK(url_error("https://[::1]/cb") == "callback_url: host '::1' is not a public address");
    CHECK(url_error("https://[::ffff:127.0.0.1]/cb") == "callback_url: host '::ffff:127.0.0.1' is not a public address");
    CHECK(url_error("https://127.1/cb") == "callback_url: host '127.1' is a non-standard numeric address");
    CHECK(url_error("https://2130706433/cb") == "callback_url: host '2130706433' is a non-standard numeric address");
    CHECK(url_error("https://localhost/cb") == "callback_url: host 'localhost' is a loopback name");
    CHECK(url_error("https://api.LOCALHOST./cb") == "callback_url: host 'api.LOCALHOST.' is a loopback name");
    CHECK(url_error("https://exa_mple.com/cb") == "callback_url: host 'exa_mple.com' is not a valid DNS name");
    CHECK(url_error("https://-bad.com/cb") == "callback_url: host '-bad.com' is not a valid DNS name");
    CHECK(url_error("https://ex%61mple.com/cb") == "callback_url: host 'ex%61mple.com' is not a valid DNS name");
    CHECK(url_error("https://example.com:0/cb") == "callback_url: not an absolute URL: 'https://example.com:0/cb'");
    CHECK(url_error("https://example.com:99999/") ==
          "callback_url: not an absolute URL: 'https://example.com:99999/'");
    CHECK(url_error("https://example.com\\@evil.com/") ==
          "callback_url: not an absolute URL: 'https://example.com\\x5c@evil.com/'");
    CHECK(url_error("https://exa mple.com/") == "callback_url: not an absolute URL: 'https://exa mple.com/'");
    CHECK(url_error("example.com/cb") == "callback_url: not an absolute URL: 'example.com/cb'");
    CHECK(url_error("https://" + std::string(2048, 'a')).find("longer than 2048") != std::string::npos);
}

TEST_CASE("callback destination: every resolved address must be public")
{
    const std::vector<std::string> public_ips{"8.8.8.8", "2001:4860:4860::8888"};
    CHECK(check_callback_destination("https://cb.example.com/h", public_ips).has_value());

    const auto denied = [](std::string_view url, std::vector<std::string> ips) {
        auto result = check_callback_destination(url, ips, "callback redirect");
        REQUIRE_FALSE(result.has_value());
        CHECK(result.error().code == "NOP-CALLBACK-INVALID");
        return result.error().message;
    };
    CHECK(denied("https://cb.example.com/h", {}) == "callback redirect: the host resolved to no addresses");
    CHECK(denied("https://cb.example.com/h", {"8.8.4.4", "127.0.0.1"}) ==
          "callback redirect: the host resolves to non-public address '127.0.0.1'");
    CHECK(denied("https://cb.example.com/h", {"not-an-ip"}) ==
          "callback redirect: resolved address 'not-an-ip' is not an IP address");
    CHECK(denied("http://cb.example.com/h", {"8.8.8.8"}) == "callback redirect: scheme must be https, got 'http'");
}

TEST_CASE("callback signature: sign and verify")
{
    auto signature = sign_callback_body(kSecret, kBody);
    REQUIRE(signature);
    CHECK(*signature == kSignature);
    CHECK(verify_callback_signature(kSecret, kBody, kSignature).has_value());
    // Padding on the secret is optional.
    CHECK(verify_callback_signature(kSecret + "=", kBody, kSignature).has_value());
    // An empty body is signed too.
    auto empty = sign_callback_body(kSecret, "");
    REQUIRE(empty);
    CHECK(empty->size() == 7 + 64);
}

TEST_CASE("callback signature: rejections")
{
    const auto code = [](std::string_view secret, std::string_view body, std::optional<std::string_view> sig) {
        auto result = verify_callback_signature(secret, body, sig);
        REQUIRE_FALSE(result.has_value());
        return result.error().code;
    };
    CHECK(code(kSecret, kBody, std::nullopt) == "NOP-CALLBACK-HMAC-MISSING");
    CHECK(code(kSecret, kBody, "") == "NOP-CALLBACK-HMAC-MISSING");
    CHECK(code(kSecret, R"({"task_id":"task-callback","state":"failed"})", kSignature) == "NOP-CALLBACK-HMAC-INVALID");
    std::string upper = kSignature;
    for (char& c : upper)
        if (c >= 'a' && c <= 'f')
            c = static_cast<char>(c - 'a' + 'A');
    CHECK(code(kSecret, kBody, upper) == "NOP-CALLBACK-HMAC-INVALID");
    CHECK(code(kSecret, kBody, kSignature.substr(7)) == "NOP-CALLBACK-HMAC-INVALID");
    CHECK(code(kSecret, kBody, kSignature + "0") == "NOP-CALLBACK-HMAC-INVALID");
    CHECK(code(kSecret, kBody, "sha1=abc") == "NOP-CALLBACK-HMAC-INVALID");
    CHECK(code("short", kBody, kSignature) == "NOP-CALLBACK-INVALID");
    CHECK(code(std::string(44, 'A'), kBody, kSignature) == "NOP-CALLBACK-INVALID");  // 33 bytes
    CHECK(code(nps::base64_encode(std::string(32, '\xfb')), kBody, kSignature) == "NOP-CALLBACK-INVALID");
}

TEST_CASE("callback secret decoding")
{
    auto key = decode_callback_secret(kSecret);
    REQUIRE(key);
    CHECK(*key == std::string(32, '\0'));
    auto wrong = decode_callback_secret(std::string(42, 'A'));
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().message == "callback_secret: decodes to 31 bytes, expected 32");
}
