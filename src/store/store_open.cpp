// SPDX-License-Identifier: Apache-2.0
// Store::open: the backend is chosen by OpenOptions::url; and the backends'
// shared default of deposit_batch.
#include "nps/store/store.hpp"
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

}  // namespace nps::store
