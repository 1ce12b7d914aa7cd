// SPDX-License-Identifier: Apache-2.0
#include "nps/nop/subtask_id.hpp"

#include "nps/base/digest.hpp"

namespace nps::nop {

namespace {

std::string uuid_from(std::string_view material)
{
    Sha256 digest = sha256(material);
    digest[6] = static_cast<std::uint8_t>((digest[6] & 0x0F) | 0x40);  // version 4
    digest[8] = static_cast<std::uint8_t>((digest[8] & 0x3F) | 0x80);  // RFC 4122 variant
    const std::string hex = to_hex(std::string_view(reinterpret_cast<const char*>(digest.data()), 16));
    return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
           hex.substr(20, 12);
}

}  // namespace

std::string node_subtask_id(std::string_view task_id, std::string_view node_id)
{
    std::string material(task_id);
    material += '\0';
    material += node_id;
    return uuid_from(material);
}

std::string compensation_subtask_id(std::string_view task_id, std::string_view node_id)
{
    std::string material(task_id);
    material += '\0';
    material += node_id;
    material += '\0';
    material += "compensate";
    return uuid_from(material);
}

}  // namespace nps::nop
