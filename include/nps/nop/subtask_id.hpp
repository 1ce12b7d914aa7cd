// SPDX-License-Identifier: Apache-2.0
// Subtask ids (DelegateFrame subtask_id, NPS-5 §3.2: UUID v4, stable across
// retries). They are derived, not random, so a runner that reclaims the task
// after a crash dispatches the same ids and workers can deduplicate: the
// first 16 bytes of SHA-256(task_id ‖ 0x00 ‖ node_id), with the version
// nibble set to 4 and the variant bits to 10, written as a lowercase
// 8-4-4-4-12 UUID. A node's compensation gets its own id, from
// SHA-256(task_id ‖ 0x00 ‖ node_id ‖ 0x00 ‖ "compensate").
#pragma once

#include <string>
#include <string_view>

namespace nps::nop {

std::string node_subtask_id(std::string_view task_id, std::string_view node_id);
std::string compensation_subtask_id(std::string_view task_id, std::string_view node_id);

}  // namespace nps::nop
