// SPDX-License-Identifier: Apache-2.0
// Reading records out of result rows (column lists in sqlite_store.hpp), and
// the JSON text the store writes.
#include <nlohmann/json.hpp>

#include "sqlite_store.hpp"
#include "state_columns.hpp"

namespace nps::store::detail {

std::string json_text(const nlohmann::json& value)
{
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> optional_text(const SQLite::Statement& stmt, int column)
{
    if (stmt.isColumnNull(column))
        return std::nullopt;
    return stmt.getColumn(column).getString();
}

void bind_optional(SQLite::Statement& stmt, int index, const std::optional<std::string>& value)
{
    if (value)
        stmt.bindNoCopy(index, *value);
    else
        stmt.bind(index);
}

Message read_message(const SQLite::Statement& stmt, int first)
{
    Message m;
    m.message_id = stmt.getColumn(first).getInt64();
    m.nid = stmt.getColumn(first + 1).getString();
    m.task_id = stmt.getColumn(first + 2).getString();
    m.content_type = stmt.getColumn(first + 3).getString();
    m.priority = stmt.getColumn(first + 4).getInt();
    m.enqueued_at_ms = stmt.getColumn(first + 5).getInt64();
    m.expires_at_ms = stmt.getColumn(first + 6).getInt64();
    return m;
}

TaskEvent read_event(const SQLite::Statement& stmt, int first)
{
    TaskEvent e;
    e.pos = stmt.getColumn(first).getInt64();
    e.seq = stmt.getColumn(first + 1).getInt64();
    e.at_ms = stmt.getColumn(first + 2).getInt64();
    e.name = stmt.getColumn(first + 3).getString();
    e.detail_json = stmt.getColumn(first + 4).getString();
    return e;
}

TaskRecord read_task(const SQLite::Statement& stmt, int first)
{
    TaskRecord t;
    t.task_id = stmt.getColumn(first).getString();
    t.nid = stmt.getColumn(first + 1).getString();
    t.state = task_state_column(stmt.getColumn(first + 2).getString(), t.task_id);
    t.error_code = optional_text(stmt, first + 3);
    t.error_message = optional_text(stmt, first + 4);
    t.aggregate_json = optional_text(stmt, first + 5);
    t.dag_hash = stmt.getColumn(first + 6).getString();
    t.dedup_key = stmt.getColumn(first + 7).getString();
    t.lease_owner = optional_text(stmt, first + 8);
    t.lease_expiry_ms = stmt.getColumn(first + 9).getInt64();
    t.claims = stmt.getColumn(first + 10).getUInt();
    t.created_at_ms = stmt.getColumn(first + 11).getInt64();
    t.updated_at_ms = stmt.getColumn(first + 12).getInt64();
    t.payload = stmt.getColumn(first + 13).getString();
    const auto optional_int = [&stmt](int column) -> std::optional<std::int64_t> {
        if (stmt.isColumnNull(column))
            return std::nullopt;
        return stmt.getColumn(column).getInt64();
    };
    t.finished_at_ms = optional_int(first + 14);
    t.results_expire_at_ms = optional_int(first + 15);
    t.results_expired_at_ms = optional_int(first + 16);
    return t;
}

}  // namespace nps::store::detail
