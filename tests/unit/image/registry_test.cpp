// SPDX-License-Identifier: Apache-2.0
// Pull references, where they are fetched from, WWW-Authenticate challenges,
// token answers and Retry-After.
#include <doctest/doctest.h>

#include "../../../src/image/registry/registry_http.hpp"
#include "nps/image/registry.hpp"
#include "nps/image/registry_auth.hpp"

using namespace nps::image;

namespace {

const std::string kHex(64, 'a');
const std::string kDigest = "sha256:" + kHex;

std::string why(const nps::Error& e)
{
    return e.describe();
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("pull references: registry, repository, tag and digest")
{
    struct Case {
        std::string text, registry, repository, tag, digest, asked, name;
    } cases[] = {
        {"busybox", "", "busybox", "", "", "latest", "busybox:latest"},
        {"busybox:1.36", "", "busybox", "1.36", "", "1.36", "busybox:1.36"},
        {"team/app:v2", "", "team/app", "v2", "", "v2", "team/app:v2"},
        {"127.0.0.1:5000/busybox", "127.0.0.1:5000", "busybox", "", "", "latest", "127.0.0.1:5000/busybox:latest"},
        {"localhost/a/b/c:x", "localhost", "a/b/c", "x", "", "x", "localhost/a/b/c:x"},
        {"reg.example.com/app@" + kDigest, "reg.example.com", "app", "", kDigest, kDigest,
         "reg.example.com/app:sha256-" + kHex},
        {"reg.example.com:443/app:1@" + kDigest, "reg.example.com:443", "app", "1", kDigest, kDigest,
         "reg.example.com:443/app:1"},
        {"Registry.Local/app", "Registry.Local", "app", "", "", "latest", "Registry.Local/app:latest"},
    };
    for (const auto& c : cases) {
        auto ref = parse_image_reference(c.text);
        REQUIRE_MESSAGE(ref, c.text);
        CHECK(ref->registry == c.registry);
        CHECK(ref->repository == c.repository);
        CHECK(ref->tag == c.tag);
        CHECK(ref->digest == c.digest);
        CHECK(ref->manifest_reference() == c.asked);
        CHECK(ref->default_name() == c.name);
    }
}

TEST_CASE("bad pull references say why")
{
    const std::pair<std::string, const char*> bad[] = {
        {"", "empty"},
        {"Busybox", "lowercase"},
        {"app@sha256:abc", "64 lowercase hex digits"},
        {"app@sha512:" + std::string(128, 'a'), "unsupported digest algorithm 'sha512'"},
        {"app@" + kDigest + "@" + kDigest, "more than one '@'"},
        {"app:@" + kDigest, "tag ''"},
        {"reg:x/app", "not a registry host"},
        {"https://reg/app", "Invalid image reference"},
    };
    for (const auto& [text, expect] : bad) {
        auto ref = parse_image_reference(text);
        REQUIRE_MESSAGE(!ref, text);
        INFO(why(ref.error()));
        CHECK(contains(why(ref.error()), "Invalid image reference"));
        CHECK(contains(why(ref.error()), expect));
    }
}

TEST_CASE("endpoints: explicit or default registry, https unless listed insecure, Docker Hub's spelling")
{
    RegistrySettings settings;
    auto ref = parse_image_reference("busybox:1");
    REQUIRE(ref);
    auto none = resolve_endpoint(*ref, settings);
    REQUIRE_FALSE(none);
    CHECK(contains(why(none.error()), "names no registry"));
    CHECK(contains(why(none.error()), "images.default_registry"));

    settings.default_registry = "Reg.Example.com:5000";
    auto e = resolve_endpoint(*ref, settings);
    REQUIRE(e);
    CHECK(e->registry == "reg.example.com:5000");
    CHECK(e->base_url == "https://reg.example.com:5000");
    CHECK(e->repository == "busybox");
    CHECK_FALSE(e->plain_http);

    settings.insecure_registries = {"REG.example.com:5000"};
    e = resolve_endpoint(*ref, settings);
    REQUIRE(e);
    CHECK(e->plain_http);
    CHECK(e->base_url == "http://reg.example.com:5000");

    // The listing is per host:port: another port is https.
    auto other = parse_image_reference("reg.example.com:5001/busybox");
    REQUIRE(other);
    e = resolve_endpoint(*other, settings);
    REQUIRE(e);
    CHECK(e->base_url == "https://reg.example.com:5001");

    auto hub = parse_image_reference("docker.io/busybox");
    REQUIRE(hub);
    e = resolve_endpoint(*hub, settings);
    REQUIRE(e);
    CHECK(e->registry == "docker.io");
    CHECK(e->base_url == "https://registry-1.docker.io");
    CHECK(e->repository == "library/busybox");
    auto hub_user = parse_image_reference("docker.io/someone/tool:1");
    REQUIRE(hub_user);
    e = resolve_endpoint(*hub_user, settings);
    REQUIRE(e);
    CHECK(e->repository == "someone/tool");
}

TEST_CASE("WWW-Authenticate: bearer and basic challenges")
{
    auto c = parse_www_authenticate(
        R"(Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:team/app:pull")");
    REQUIRE(c);
    REQUIRE(c->size() == 1);
    CHECK((*c)[0].scheme == "bearer");
    CHECK((*c)[0].params.at("realm") == "https://auth.example.com/token");
    CHECK((*c)[0].params.at("service") == "registry.example.com");
    CHECK((*c)[0].params.at("scope") == "repository:team/app:pull");

    // Case, spacing, tokens as values, escapes, several challenges in one value.
    c = parse_www_authenticate(R"(Basic realm="Registry \"main\"" , charset=UTF-8, BEARER Realm = x , error="insufficient_scope")");
    REQUIRE(c);
    REQUIRE(c->size() == 2);
    CHECK((*c)[0].scheme == "basic");
    CHECK((*c)[0].params.at("realm") == "Registry \"main\"");
    CHECK((*c)[0].params.at("charset") == "UTF-8");
    CHECK((*c)[1].scheme == "bearer");
    CHECK((*c)[1].params.at("realm") == "x");
    CHECK((*c)[1].params.at("error") == "insufficient_scope");

    // A scope with several actions contains a comma inside quotes.
    c = parse_www_authenticate(R"(Bearer realm="r",scope="repository:a:pull,push")");
    REQUIRE(c);
    CHECK((*c)[0].params.at("scope") == "repository:a:pull,push");

    // token68 and bare schemes.
    c = parse_www_authenticate("Negotiate, NTLM abc+/def==, Basic");
    REQUIRE(c);
    REQUIRE(c->size() == 3);
    CHECK((*c)[0].scheme == "negotiate");
    CHECK((*c)[1].token68 == "abc+/def==");
    CHECK((*c)[2].scheme == "basic");

    // "x=" alone cannot be a parameter (values are never empty): a token68.
    c = parse_www_authenticate("Bearer realm=");
    REQUIRE(c);
    CHECK((*c)[0].token68 == "realm=");

    c = parse_www_authenticate("   ");
    REQUIRE(c);
    CHECK(c->empty());
}

TEST_CASE("WWW-Authenticate: malformed values are errors")
{
    const std::pair<std::string, const char*> bad[] = {
        {R"(Bearer realm="unterminated)", "unterminated quoted string"},
        {R"(Bearer realm="a", service=)", "parameter 'service' has no value"},
        {R"(Bearer realm="a", realm="b")", "given twice"},
        {R"(Bearer realm="a" service="b")", "expected ','"},
        {"=x", "expected an authentication scheme"},
        {"Bearer realm=\"a\x01\"", "control character"},
        {"Bearer\"x\"", "expected a space after the scheme"},
        {std::string(20000, 'a'), "longer than"},
    };
    for (const auto& [text, expect] : bad) {
        auto r = parse_www_authenticate(text);
        REQUIRE_MESSAGE(!r, text);
        INFO(why(r.error()));
        CHECK(contains(why(r.error()), expect));
    }
    std::string many;
    for (int i = 0; i < 40; ++i)
        many += "p" + std::to_string(i) + "=v,";
    auto r = parse_www_authenticate("Bearer " + many);
    REQUIRE_FALSE(r);
    CHECK(contains(why(r.error()), "more than 32 parameters"));
    std::string schemes;
    for (int i = 0; i < 20; ++i)
        schemes += "S" + std::to_string(i) + ", ";
    r = parse_www_authenticate(schemes);
    REQUIRE_FALSE(r);
    CHECK(contains(why(r.error()), "more than 16 challenges"));
}

TEST_CASE("token answers: token or access_token, visible ASCII only")
{
    auto t = parse_token_response(R"({"token":"abc.def.ghi","expires_in":300})", "'https://auth/token'");
    REQUIRE(t);
    CHECK(*t == "abc.def.ghi");
    t = parse_token_response(R"({"access_token":"xyz"})", "x");
    REQUIRE(t);
    CHECK(*t == "xyz");
    t = parse_token_response(R"({"token":"","access_token":"xyz"})", "x");
    REQUIRE(t);
    CHECK(*t == "xyz");

    const std::pair<std::string, const char*> bad[] = {
        {R"({"expires_in":300})", "neither \"token\" nor \"access_token\""},
        {R"({"token":"a b"})", "visible ASCII"},
        {"{\"token\":\"a\\r\\nX-Evil: 1\"}", "visible ASCII"},
        {R"({"token":5})", "token"},
        {"not json", "token service"},
    };
    for (const auto& [text, expect] : bad) {
        auto r = parse_token_response(text, "x");
        REQUIRE_MESSAGE(!r, text);
        INFO(why(r.error()));
        CHECK(contains(why(r.error()), expect));
    }
}

TEST_CASE("Retry-After: delay-seconds or an HTTP date")
{
    using nps::image::detail::HttpAnswer;
    using nps::image::detail::retry_after_ms;
    HttpAnswer a;
    CHECK_FALSE(retry_after_ms(a));
    a.headers["retry-after"] = "0";
    CHECK(retry_after_ms(a) == 0);
    a.headers["retry-after"] = "7";
    CHECK(retry_after_ms(a) == 7000);
    a.headers["retry-after"] = "Wed, 21 Oct 2015 07:28:00 GMT";  // in the past: now
    CHECK(retry_after_ms(a) == 0);
    a.headers["retry-after"] = "soon";
    CHECK_FALSE(retry_after_ms(a));
    a.headers["retry-after"] = "99999999999999";
    CHECK(retry_after_ms(a) >= 60000);  // capped by the caller
}
