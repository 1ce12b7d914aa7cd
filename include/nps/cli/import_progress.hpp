// SPDX-License-Identifier: Apache-2.0
// The progress display of `image import` and `image pull`: one line per
// blob, redrawn in place on a terminal (bytes done, total, rate), silent
// otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "nps/image/image_store.hpp"

namespace nps::cli {

// "0 B", "512 B", "1.5 KiB", "12.3 MiB", "2.0 GiB".
std::string format_bytes(std::uint64_t bytes);

// The line shown while a blob streams:
// "Copying sha256:0123456789ab   12.3 MiB / 45.6 MiB   8.1 MiB/s"
// (`action` is "Copying" for import, "Pulling" for pull).
std::string progress_line(const std::string& blob, std::uint64_t done, std::uint64_t total, double bytes_per_second,
                          const std::string& action = "Copying");

enum class ProgressOutput { terminal, quiet };

class ImportProgressDisplay {
public:
    using Now = std::function<std::chrono::steady_clock::time_point()>;

    // `out` is written only with ProgressOutput::terminal. `now` is a seam
    // for tests (default steady_clock). `action` starts the line of a blob
    // in transfer.
    ImportProgressDisplay(std::FILE* out, ProgressOutput mode, Now now = {}, std::string action = "Copying");

    void update(const image::ImportProgress& progress);
    // Clears a half-drawn line (call before printing anything else).
    void finish();

    // ProgressOutput::terminal when fd is a terminal and quiet is not asked for.
    static ProgressOutput mode_for(int fd, bool quiet);

private:
    void draw(const std::string& text, bool final_line);

    std::FILE* out_;
    ProgressOutput mode_;
    Now now_;
    std::string action_;
    std::string blob_;
    std::chrono::steady_clock::time_point started_{};
    std::chrono::steady_clock::time_point last_draw_{};
    bool line_open_ = false;
};

}  // namespace nps::cli
