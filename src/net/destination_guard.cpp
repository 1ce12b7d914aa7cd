// SPDX-License-Identifier: Apache-2.0
#include "nps/net/destination_guard.hpp"

namespace nps::net {

DestinationGuard::DestinationGuard(proto::DestinationRules rules, const HostResolver& resolver)
    : rules_(std::move(rules)), resolver_(resolver)
{
}

Result<AdmittedDestination> DestinationGuard::admit(std::string_view url, std::string_view what, int timeout_ms) const
{
    AdmittedDestination admitted;
    admitted.destination = NPS_TRY(proto::check_destination_url(url, rules_, what));
    if (admitted.destination.literal) {
        admitted.addresses.push_back(*admitted.destination.literal);
    } else {
        auto answers = resolver_.resolve(admitted.destination.host, timeout_ms);
        if (!answers)
            return protocol_error(rules_.error_code, std::string(what) + ": " + answers.error().describe());
        admitted.addresses = std::move(*answers);
    }
    NPS_TRY_VOID(proto::check_destination_addresses(admitted.destination, admitted.addresses, rules_, what));
    return admitted;
}

}  // namespace nps::net
