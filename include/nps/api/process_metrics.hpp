// SPDX-License-Identifier: Apache-2.0
// The daemon's own process and build in the Prometheus text format:
// nps_runner_build_info, process_resident_memory_bytes,
// process_cpu_seconds_total, process_open_fds, process_start_time_seconds
// (the client libraries' standard names), and nps_store_bytes (runner.db
// with its WAL). Read from /proc and the file system at each scrape.
#pragma once

#include <string>

namespace nps::api {

std::string render_process_metrics(const std::string& database_path);

}  // namespace nps::api
