// SPDX-License-Identifier: Apache-2.0
// Store::open: the backend is chosen by OpenOptions::url; and the backends'
// shared defaults of deposit_batch and write_progress.
#include "nps/store/store.hpp"

#include <type_traits>
#include <variant>

#include "postgres/pg_store.hpp"
#include "sqlite_store.hpp"

namespace nps::store {

Result<std::unique_ptr<Store>> Store::open(const OpenOptions& options, const Clock& clock)
{
    if (options.url.empty())
        return detail::open_sqlite(options, clock);
    if (!is_postgres_url(options.url))
        return internal_error("Unsupported store URL '" + redact_store_url(options.url) +
                                "': give a postgresql:// URL, or none for the embedded runner.db");
    return pg::open_postgres(options, clock);
}

std::vector<Result<DepositResult>> Store::deposit_batch(const std::vector<DepositRequest>& requests)
{
    std::vector<Result<DepositResult>> results;
    results.reserve(requests.size());
    for (const auto& request : requests)
        results.push_back(deposit(request));
    return results;
}

ProgressWritten Store::write_progress(const std::vector<ProgressRecord>& records)
{
    ProgressWritten out;
    for (const ProgressRecord& record : records) {
        Result<void> written = std::visit(
            [this](const auto& r) -> Result<void> {
                using R = std::decay_t<decltype(r)>;
                if constexpr (std::is_same_v<R, ProgressEvent>) {
                    return append_event(r.task_id, r.name, r.detail_json, r.lease_holder);
                } else if constexpr (std::is_same_v<R, NodeResult>) {
                    auto recorded = record_node_result(r);
                    return recorded ? Result<void>{} : Result<void>(recorded.error());
                } else {
                    return complete(r.task_id, r.runner_nid, r.outcome);
                }
            },
            record);
        if (!written) {
            out.error = written.error();
            break;
        }
        ++out.written;
    }
    return out;
}

}  // namespace nps::store
