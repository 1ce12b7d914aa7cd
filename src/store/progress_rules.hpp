// SPDX-License-Identifier: Apache-2.0
// Rules both backends apply to what a run writes (append_event,
// write_progress), as node_rules.hpp for node records.
#pragma once

#include <string>

#include "nps/base/result.hpp"
#include "nps/store/types.hpp"

namespace nps::store::detail {

// The event's detail as stored ("" becomes "{}"); an error for an empty
// name or a detail that is not JSON text.
Result<std::string> checked_event_detail(const std::string& task_id, const std::string& name,
                                         const std::string& detail_json);

// What a record of Store::write_progress is, for messages: "append event
// 'n1:worker' to task 't-1'", …
std::string describe_progress_record(const ProgressRecord& record);

}  // namespace nps::store::detail
