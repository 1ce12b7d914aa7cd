// SPDX-License-Identifier: Apache-2.0
// Signed NDP announces through PUT /v1/ndp/announces/{nid} (issue 17 item 10):
// Ed25519 over the canonical form, trusted keys per NID, [ndp]
// require_signed; every refusal changes nothing.
#include <doctest/doctest.h>

#include "nps/proto/announce.hpp"
#include "nps/proto/ed25519.hpp"
#include "runner_process.hpp"

using nps::test::check_error;
using nps::test::http;
using Json = nlohmann::json;

namespace {

const std::string kAgent = "urn:nps:agent:sign.test:fetch";
const std::string kOther = "urn:nps:agent:sign.test:other";
const std::string kSeed(32, '\x07');
const std::string kWrongSeed(32, '\x09');

std::string public_key_text(const std::string& seed)
{
    return nps::proto::encode_ed25519(*nps::proto::ed25519_public_key(seed));
}

Json announce(const std::string& nid)
{
    return {{"nid", nid}, {"activation_mode", "ephemeral"}, {"spawn_spec_ref", "https://specs.example.com/a.json"},
            {"ttl", 300}};
}

Json signed_announce(const std::string& nid, const std::string& seed)
{
    Json body = announce(nid);
    auto signature = nps::proto::ndp::sign_announce(body.dump(), seed);
    REQUIRE(signature);
    body["signature"] = *signature;
    return body;
}

nps::test::Reply put(const nps::test::RunnerProcess& r, const std::string& nid, const Json& body)
{
    return http("PUT", r.url() + "/v1/ndp/announces/" + nid, body.dump());
}

bool registered(const nps::test::RunnerProcess& r, const std::string& nid)
{
    return http("GET", r.url() + "/v1/ndp/resolve?nid=" + nid).status == 200;
}

}  // namespace

TEST_CASE("[ndp] require_signed: only announces a trusted key of their NID signed are taken")
{
    nps::test::StartedRunner d("[ndp]\nrequire_signed = true\n[ndp.trusted_keys]\n\"" + kAgent + "\" = \"" +
                               public_key_text(kSeed) + "\"\n");
    auto& r = d.runner;
    auto ok = put(r, kAgent, signed_announce(kAgent, kSeed));
    REQUIRE_MESSAGE(ok.status == 200, ok.raw);
    CHECK(ok.body["signature"] == "verified");
    CHECK(registered(r, kAgent));

    // Unsigned, signed by another key, or altered after signing: 401, nothing changed.
    Json altered = signed_announce(kAgent, kSeed);
    altered["spawn_spec_ref"] = "https://evil.example.com/a.json";
    for (const Json& body : {announce(kAgent), signed_announce(kAgent, kWrongSeed), altered}) {
        CAPTURE(body.dump());
        check_error(put(r, kAgent, body), 401, "NDP-ANNOUNCE-SIGNATURE-INVALID");
    }
    CHECK(http("GET", r.url() + "/v1/ndp/resolve?nid=" + kAgent).body["spawn_spec_ref"] ==
          "https://specs.example.com/a.json");
    // A NID without a trusted key, even signed: refused, not registered.
    check_error(put(r, kOther, signed_announce(kOther, kSeed)), 400, "NDP-ANNOUNCE-NID-MISMATCH");
    check_error(put(r, kOther, announce(kOther)), 401, "NDP-ANNOUNCE-SIGNATURE-INVALID");
    CHECK_FALSE(registered(r, kOther));
}

TEST_CASE("by default unsigned local announces are taken; a signature that does not verify never is")
{
    nps::test::StartedRunner d("[ndp.trusted_keys]\n\"" + kAgent + "\" = [\"" + public_key_text(kWrongSeed) +
                               "\", \"" + public_key_text(kSeed) + "\"]\n");
    auto& r = d.runner;
    auto unsigned_reply = put(r, kOther, announce(kOther));
    REQUIRE(unsigned_reply.status == 200);
    CHECK(unsigned_reply.body["signature"] == "unverified");
    // The second of the NID's keys verifies (a rotated key).
    CHECK(put(r, kAgent, signed_announce(kAgent, kSeed)).body["signature"] == "verified");
    Json forged = announce(kAgent);
    forged["signature"] = "ed25519:" + std::string(86, 'A');
    check_error(put(r, kAgent, forged), 401, "NDP-ANNOUNCE-SIGNATURE-INVALID");
}

TEST_CASE("[ndp] configuration errors name the key")
{
    nps::test::TempDir dir("nps-ndp-config");
    for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
             {"[ndp]\nrequire_signd = true\n", "ndp.require_signd"},
             {"[ndp.trusted_keys]\n\"not-a-nid\" = \"ed25519:AAAA\"\n", "the key must be a NID"},
             {"[ndp.trusted_keys]\n\"" + kAgent + "\" = \"ed25519:AAAA\"\n", "ndp.trusted_keys"},
             {"[ndp.trusted_keys]\n\"" + kAgent + "\" = 7\n", "expected \"ed25519:"},
         }) {
        nps::test::write_file(dir.path() + "/config.toml", text);
        auto result = nps::test::run_command(
            {"serve", "--config", dir.path() + "/config.toml", "--state-dir", dir.path(), "--listen", "none", "--socket", "none"});
        CAPTURE(text);
        CHECK(result.exit_status != 0);
        CHECK(result.err.find(expected) != std::string::npos);
    }
}
