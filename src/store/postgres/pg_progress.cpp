// SPDX-License-Identifier: Apache-2.0
// PostgresStore::write_progress: a run's events, node records and end, in
// order, in one transaction and one commit (one WAL flush on the server
// instead of one per record). A refused record has written nothing (the
// *_locked contract), so it needs no savepoint: the batch ends there and
// what came before is committed. An SQL failure aborts the transaction,
// and with it the whole batch.
#include <type_traits>
#include <variant>

#include "../progress_rules.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

ProgressWritten PostgresStore::write_progress(const std::vector<ProgressRecord>& records)
{
    ProgressWritten out;
    if (records.empty())
        return out;
    auto committed = guarded<void>(
        [&] {
            return "Failed to write " + std::to_string(records.size()) + " records of a run, from " +
                   detail::describe_progress_record(records.front());
        },
        [&]() -> Result<void> {
            out = {};  // guarded() may run this again
            Work w(*this);
            for (const ProgressRecord& record : records) {
                Result<void> written = std::visit(
                    [&](const auto& r) -> Result<void> {
                        using R = std::decay_t<decltype(r)>;
                        if constexpr (std::is_same_v<R, ProgressEvent>) {
                            return append_event_locked(w, r.task_id, r.name, r.detail_json, r.lease_holder);
                        } else if constexpr (std::is_same_v<R, NodeResult>) {
                            NPS_TRY_VOID(record_node_result_locked(w, r));
                            return {};
                        } else {
                            return complete_locked(w, {r.task_id}, r.runner_nid, r.outcome);
                        }
                    },
                    record);
                if (!written) {
                    out.error = std::move(written).error();
                    break;
                }
                ++out.written;
            }
            if (out.written > 0)
                w.commit();
            return {};
        });
    if (!committed) {
        out.written = 0;
        out.error = std::move(committed).error();
    }
    return out;
}

}  // namespace nps::store::pg
