// SPDX-License-Identifier: Apache-2.0
// Store::open: the backend is chosen by OpenOptions::url.
#include "nps/store/store.hpp"
#include "postgres/pg_store.hpp"
#include "sqlite_store.hpp"

namespace nps::store {

Result<std::unique_ptr<Store>> Store::open(const OpenOptions& options, const Clock& clock)
{
    if (options.url.empty())
        return detail::open_sqlite(options, clock);
    if (!pg::is_postgres_url(options.url))
        return internal_error("Unsupported store URL '" + pg::redact_conninfo(options.url) +
                                "': give a postgresql:// URL, or none for the embedded runner.db");
    return pg::open_postgres(options, clock);
}

bool is_postgres_url(std::string_view url)
{
    return pg::is_postgres_url(url);
}

std::string redact_store_url(const std::string& url)
{
    return pg::redact_conninfo(url);
}

}  // namespace nps::store
