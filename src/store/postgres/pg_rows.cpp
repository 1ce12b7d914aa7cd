// SPDX-License-Identifier: Apache-2.0
// Reading records out of result rows (column lists in pg_store.hpp).
#include "../state_columns.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

Message read_message(const Rows& rows, int row, int first)
{
    Message m;
    m.message_id = rows.integer(row, first);
    m.nid = rows.text(row, first + 1);
    m.task_id = rows.text(row, first + 2);
    m.content_type = rows.text(row, first + 3);
    m.priority = static_cast<int>(rows.integer(row, first + 4));
    m.enqueued_at_ms = rows.integer(row, first + 5);
    m.expires_at_ms = rows.integer(row, first + 6);
    return m;
}

TaskEvent read_event(const Rows& rows, int row, int first)
{
    TaskEvent e;
    e.pos = rows.integer(row, first);
    e.seq = rows.integer(row, first + 1);
    e.at_ms = rows.integer(row, first + 2);
    e.name = rows.text(row, first + 3);
    e.detail_json = rows.text(row, first + 4);
    return e;
}

TaskRecord read_task(const Rows& rows, int row, int first)
{
    TaskRecord t;
    t.task_id = rows.text(row, first);
    t.nid = rows.text(row, first + 1);
    t.state = detail::task_state_column(rows.text(row, first + 2), t.task_id);
    t.error_code = rows.optional_text(row, first + 3);
    t.error_message = rows.optional_text(row, first + 4);
    t.aggregate_json = rows.optional_text(row, first + 5);
    t.dag_hash = rows.text(row, first + 6);
    t.dedup_key = rows.text(row, first + 7);
    t.lease_owner = rows.optional_text(row, first + 8);
    t.lease_expiry_ms = rows.integer(row, first + 9);
    t.claims = static_cast<std::uint32_t>(rows.integer(row, first + 10));
    t.created_at_ms = rows.integer(row, first + 11);
    t.updated_at_ms = rows.integer(row, first + 12);
    t.payload = rows.bytes(row, first + 13);
    t.finished_at_ms = rows.optional_integer(row, first + 14);
    t.results_expire_at_ms = rows.optional_integer(row, first + 15);
    t.results_expired_at_ms = rows.optional_integer(row, first + 16);
    return t;
}

}  // namespace nps::store::pg
