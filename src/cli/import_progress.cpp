// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/import_progress.hpp"

#include <unistd.h>

#include "nps/image/content_digest.hpp"

namespace nps::cli {

namespace {

// Redraws at most this often; phase changes are always drawn.
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

std::string label(const std::string& blob)
{
    if (image::is_sha256_digest(blob))
        return "sha256:" + image::short_digest(blob);
    return blob;
}

}  // namespace

std::string format_bytes(std::uint64_t bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024)
        return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(units)) {
        value /= 1024;
        ++unit;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
    return buf;
}

std::string progress_line(const std::string& blob, std::uint64_t done, std::uint64_t total, double bytes_per_second,
                          const std::string& action)
{
    std::string line = action + " " + label(blob) + "  " + format_bytes(done);
    if (total > 0)
        line += " / " + format_bytes(total);
    if (bytes_per_second > 0)
        line += "  " + format_bytes(static_cast<std::uint64_t>(bytes_per_second)) + "/s";
    return line;
}

ImportProgressDisplay::ImportProgressDisplay(std::FILE* out, ProgressOutput mode, Now now, std::string action)
    : out_(out), mode_(mode), now_(now ? std::move(now) : Now([] { return std::chrono::steady_clock::now(); })),
      action_(std::move(action))
{
}

ProgressOutput ImportProgressDisplay::mode_for(int fd, bool quiet)
{
    return !quiet && ::isatty(fd) ? ProgressOutput::terminal : ProgressOutput::quiet;
}

void ImportProgressDisplay::draw(const std::string& text, bool final_line)
{
    // \r and erase-line: redraw in place.
    std::fprintf(out_, "\r\033[K%s%s", text.c_str(), final_line ? "\n" : "");
    std::fflush(out_);
    line_open_ = !final_line;
}

void ImportProgressDisplay::update(const image::ImportProgress& p)
{
    if (mode_ != ProgressOutput::terminal)
        return;
    using Phase = image::ImportProgress::Phase;
    const auto now = now_();
    switch (p.phase) {
    case Phase::checking_existing:
        draw("Verifying " + label(p.blob) + " already in the store (" + format_bytes(p.total_bytes) + ")", false);
        last_draw_ = now;
        return;
    case Phase::already_present:
        draw("Present   " + label(p.blob) + "  " + format_bytes(p.total_bytes), true);
        return;
    case Phase::stored:
        draw("Stored    " + label(p.blob) + "  " + format_bytes(p.done_bytes), true);
        blob_.clear();
        return;
    case Phase::copying:
        break;
    }
    if (p.blob != blob_) {
        blob_ = p.blob;
        started_ = now;
    } else if (now - last_draw_ < kRedrawInterval) {
        return;
    }
    last_draw_ = now;
    const double seconds = std::chrono::duration<double>(now - started_).count();
    const double rate = seconds > 0 ? static_cast<double>(p.done_bytes) / seconds : 0;
    draw(progress_line(p.blob, p.done_bytes, p.total_bytes, rate, action_), false);
}

void ImportProgressDisplay::finish()
{
    if (mode_ == ProgressOutput::terminal && line_open_) {
        std::fputs("\r\033[K", out_);
        std::fflush(out_);
        line_open_ = false;
    }
}

}  // namespace nps::cli
