// SPDX-License-Identifier: Apache-2.0
// The callback rules are the shared destination rules (destination_policy)
// with the callback error code and no operator allowlist.
#include "nps/proto/callback_policy.hpp"

#include <vector>

#include "message_text.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::proto {

namespace {

const DestinationRules& callback_rules()
{
    static const DestinationRules rules{.error_code = code::kNopCallbackInvalid};
    return rules;
}

}  // namespace

Result<void> check_callback_url(std::string_view url, std::string_view what)
{
    NPS_TRY(check_destination_url(url, callback_rules(), what));
    return {};
}

Result<void> check_callback_destination(std::string_view url, std::span<const std::string> resolved_ips,
                                        std::string_view what)
{
    const Destination destination = NPS_TRY(check_destination_url(url, callback_rules(), what));
    std::vector<IpAddress> addresses;
    for (const std::string& ip : resolved_ips) {
        const auto address = parse_ip_literal(ip);
        if (!address)
            return protocol_error(callback_rules().error_code,
                                  std::string(what) + ": resolved address " + detail::quote_text(ip) +
                                      " is not an IP address");
        addresses.push_back(*address);
    }
    return check_destination_addresses(destination, addresses, callback_rules(), what);
}

}  // namespace nps::proto
