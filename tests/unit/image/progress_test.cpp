// SPDX-License-Identifier: Apache-2.0
// The import progress display: formatting, and silence off a terminal.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "nps/cli/import_progress.hpp"

using namespace nps::cli;
using Phase = nps::image::ImportProgress::Phase;

TEST_CASE("byte counts are human-readable")
{
    CHECK(format_bytes(0) == "0 B");
    CHECK(format_bytes(1023) == "1023 B");
    CHECK(format_bytes(1536) == "1.5 KiB");
    CHECK(format_bytes(12900000) == "12.3 MiB");
    CHECK(format_bytes(3ull << 30) == "3.0 GiB");
}

TEST_CASE("a progress line has the blob, bytes, total and rate")
{
    const std::string digest = "sha256:" + std::string(64, 'c');
    CHECK(progress_line(digest, 1 << 20, 4 << 20, 2 << 20) == "Copying sha256:cccccccccccc  1.0 MiB / 4.0 MiB  2.0 MiB/s");
    CHECK(progress_line("layer0/layer.tar", 10, 0, 0) == "Copying layer0/layer.tar  10 B");
}

namespace {

struct Captured {
    char* data = nullptr;
    std::size_t size = 0;
    std::FILE* file = open_memstream(&data, &size);
    ~Captured()
    {
        if (file)
            std::fclose(file);
        std::free(data);
    }
    std::string text()
    {
        std::fflush(file);
        return std::string(data, size);
    }
};

}  // namespace

TEST_CASE("on a terminal the line is redrawn in place, at most every 100 ms, and ends per blob")
{
    Captured out;
    auto now = std::chrono::steady_clock::time_point{};
    ImportProgressDisplay display(out.file, ProgressOutput::terminal, [&] { return now; });
    const std::string blob = "sha256:" + std::string(64, 'd');
    display.update({Phase::copying, blob, 1 << 20, 8 << 20});
    now += std::chrono::milliseconds(10);
    display.update({Phase::copying, blob, 2 << 20, 8 << 20});  // too soon: not drawn
    now += std::chrono::milliseconds(990);
    display.update({Phase::copying, blob, 4 << 20, 8 << 20});
    display.update({Phase::stored, blob, 8 << 20, 8 << 20});
    const std::string text = out.text();
    CHECK(text.find("\r\033[KCopying sha256:dddddddddddd  1.0 MiB / 8.0 MiB") != std::string::npos);
    CHECK(text.find("2.0 MiB / 8.0 MiB") == std::string::npos);
    CHECK(text.find("4.0 MiB / 8.0 MiB  4.0 MiB/s") != std::string::npos);
    CHECK(text.find("\r\033[KStored    sha256:dddddddddddd  8.0 MiB\n") != std::string::npos);
    display.update({Phase::already_present, blob, 5, 5});
    CHECK(out.text().find("Present   sha256:dddddddddddd  5 B\n") != std::string::npos);
    display.update({Phase::copying, blob, 1, 2});
    display.finish();
    CHECK(out.text().size() > 4);
    CHECK(out.text().substr(out.text().size() - 4) == "\r\033[K");
}

TEST_CASE("off a terminal nothing is written")
{
    Captured out;
    ImportProgressDisplay display(out.file, ProgressOutput::quiet);
    display.update({Phase::copying, "x", 1, 2});
    display.update({Phase::stored, "x", 2, 2});
    display.finish();
    CHECK(out.text().empty());
    CHECK(ImportProgressDisplay::mode_for(-1, false) == ProgressOutput::quiet);
}
