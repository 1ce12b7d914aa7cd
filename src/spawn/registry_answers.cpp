// SPDX-License-Identifier: Apache-2.0
// Registry answers are read with simdjson: bounded nesting without recursion,
// UTF-8 checked.
#include "registry_answers.hpp"

#include <simdjson.h>

#include <new>

#include "nps/base/limits.hpp"
#include "nps/proto/ip_policy.hpp"
#include "spec_rules.hpp"

namespace nps::spawn::detail {

namespace {

constexpr std::size_t kMaxAnswerDepth = 16;

Result<simdjson::dom::object> parse_object(simdjson::dom::parser& parser, std::string_view text)
{
    if (parser.allocate(std::max<std::size_t>(text.size(), 64), kMaxAnswerDepth) != simdjson::SUCCESS)
        return internal_error("cannot allocate the JSON parser");
    simdjson::dom::element root;
    if (const auto err = parser.parse(text.data(), text.size()).get(root); err != simdjson::SUCCESS)
        return internal_error(std::string("not valid JSON: ") + simdjson::error_message(err));
    simdjson::dom::object object;
    if (root.get(object) != simdjson::SUCCESS)
        return internal_error("not a JSON object");
    return object;
}

// nullopt when absent or null; an error for another type.
Result<std::optional<std::string_view>> optional_string(const simdjson::dom::object& object, std::string_view key)
{
    simdjson::dom::element value;
    if (object.at_key(key).get(value) != simdjson::SUCCESS || value.is_null())
        return std::optional<std::string_view>{};
    std::string_view text;
    if (value.get(text) != simdjson::SUCCESS)
        return internal_error("'" + std::string(key) + "' is not a string");
    return std::optional<std::string_view>{text};
}

bool valid_host(std::string_view host)
{
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (proto::parse_ip_literal(host))
        return true;
    if (host.empty() || host.size() > 253)
        return false;
    for (char c : host) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '-';
        if (!ok)
            return false;
    }
    return true;
}

}  // namespace

Result<store::Announce> decode_registry_announce(std::string_view json_text, const std::string& nid)
{
    try {
        simdjson::dom::parser parser;
        const auto object = NPS_TRY(parse_object(parser, json_text));
        const auto answered_nid = NPS_TRY(optional_string(object, "nid"));
        if (!answered_nid || *answered_nid != nid)
            return internal_error("it is for " + (answered_nid ? detail::quote_text(*answered_nid) : std::string("no NID")) +
                           ", not the NID asked for");
        store::Announce announce;
        announce.nid = nid;
        announce.activation_mode = std::string(NPS_TRY(optional_string(object, "activation_mode")).value_or("ephemeral"));
        if (announce.activation_mode != "ephemeral" && announce.activation_mode != "resident" &&
            announce.activation_mode != "hybrid")
            return internal_error("activation_mode " + detail::quote_text(announce.activation_mode) + " is not ephemeral, resident or hybrid");
        const auto ref = NPS_TRY(optional_string(object, "spawn_spec_ref"));
        if (ref && ref->size() > limits::kMaxSpawnSpecRefChars)
            return internal_error("spawn_spec_ref is longer than " + std::to_string(limits::kMaxSpawnSpecRefChars) +
                           " characters");
        announce.spawn_spec_ref = std::string(ref.value_or(""));
        simdjson::dom::element ttl;
        if (object.at_key("ttl").get(ttl) == simdjson::SUCCESS && !ttl.is_null()) {
            std::uint64_t seconds = 0;
            if (ttl.get(seconds) != simdjson::SUCCESS || seconds > 0xFFFFFFFFu)
                return internal_error("'ttl' is not an unsigned 32-bit integer");
            if (seconds == 0)
                return internal_error("the agent is offline (ttl 0)");
            announce.ttl_seconds = static_cast<std::uint32_t>(seconds);
        }
        announce.body_json = std::string(json_text);
        return announce;
    } catch (const std::bad_alloc&) {
        return internal_error("out of memory");
    }
}

Result<NwpEndpoint> decode_nwp_resolution(std::string_view json_text)
{
    try {
        simdjson::dom::parser parser;
        const auto object = NPS_TRY(parse_object(parser, json_text));
        simdjson::dom::object resolved;
        if (object.at_key("resolved").get(resolved) != simdjson::SUCCESS)
            return internal_error("no 'resolved' object");
        const auto host = NPS_TRY(optional_string(resolved, "host"));
        if (!host || !valid_host(*host))
            return internal_error("'resolved.host' is not a host name or IP address");
        std::uint64_t port = 0;
        if (resolved.at_key("port").get(port) != simdjson::SUCCESS || port == 0 || port > 65535)
            return internal_error("'resolved.port' is not a port number (1..65535)");
        NwpEndpoint endpoint;
        endpoint.host = std::string(*host);
        if (endpoint.host.size() >= 2 && endpoint.host.front() == '[')
            endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);
        endpoint.port = static_cast<std::uint16_t>(port);
        return endpoint;
    } catch (const std::bad_alloc&) {
        return internal_error("out of memory");
    }
}

}  // namespace nps::spawn::detail
