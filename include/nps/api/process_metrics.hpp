// SPDX-License-Identifier: Apache-2.0
// The daemon's own process and build in the Prometheus text format:
// nps_runner_build_info, process_resident_memory_bytes,
// process_cpu_seconds_total, process_open_fds, process_start_time_seconds
// (the client libraries' standard names), read from /proc at each scrape,
// and nps_store_bytes (Store::size_bytes(), when the store could tell).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nps::api {

std::string render_process_metrics(std::optional<std::int64_t> store_bytes);

}  // namespace nps::api
