// SPDX-License-Identifier: Apache-2.0
// SqliteStore::write_progress: a run's events, node records and end, in
// order, in one transaction and one commit, each in a savepoint of its own.
#include <type_traits>
#include <variant>

#include "progress_rules.hpp"
#include "sqlite_store.hpp"

namespace nps::store::detail {

ProgressWritten SqliteStore::write_progress(const std::vector<ProgressRecord>& records)
{
    ProgressWritten out;
    if (records.empty())
        return out;
    auto committed = guarded<void>(
        [&] { return "Failed to write " + std::to_string(records.size()) + " records of a run"; },
        [&]() -> Result<void> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            for (const ProgressRecord& record : records) {
                auto written = in_savepoint<void>(
                    [&] { return "Failed to " + describe_progress_record(record); },
                    [&]() -> Result<void> {
                        return std::visit(
                            [&](const auto& r) -> Result<void> {
                                using R = std::decay_t<decltype(r)>;
                                if constexpr (std::is_same_v<R, ProgressEvent>) {
                                    return append_event_locked(now, r.task_id, r.name, r.detail_json, r.lease_holder);
                                } else if constexpr (std::is_same_v<R, NodeResult>) {
                                    NPS_TRY_VOID(record_node_result_locked(now, r));
                                    return {};
                                } else {
                                    return complete_locked(now, {r.task_id}, r.runner_nid, r.outcome);
                                }
                            },
                            record);
                    });
                if (!written && !in_transaction())
                    return std::move(written).error();  // what came before went with it
                if (!written) {
                    out.error = std::move(written).error();
                    break;
                }
                ++out.written;
            }
            if (out.written > 0)
                txn.commit();
            return {};
        });
    if (!committed) {
        out.written = 0;
        out.error = std::move(committed).error();
    }
    return out;
}

}  // namespace nps::store::detail
