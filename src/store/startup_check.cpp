// SPDX-License-Identifier: Apache-2.0
#include "nps/store/startup_check.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <optional>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>


namespace nps::store {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxQuickCheckLines = 5;  // of quick_check's answer, quoted in the refusal

constexpr const char* kWhatToDo =
    "stop every runner using it, then restore it from a backup, or move it aside to start with an empty store";

// A directory of the state dir that only a runner that once had a store makes.
std::optional<std::string> sign_of_use(const std::string& state_dir)
{
    for (const char* name : {"images", "workers", "logs"}) {
        std::error_code ec;
        const fs::path dir = fs::path(state_dir) / name;
        if (fs::is_directory(dir, ec) && !fs::is_empty(dir, ec) && !ec)
            return dir.string();
    }
    return std::nullopt;
}

}  // namespace

Result<void> check_store_at_start(const std::string& db_path, const std::string& state_dir)
{
    struct stat st{};
    if (::stat(db_path.c_str(), &st) < 0) {
        if (errno == ENOENT)
            return {};  // created by the first open
        return system_error_errno("Failed to stat runner.db at '" + db_path + "'");
    }
    if (st.st_size == 0) {
        if (auto used = sign_of_use(state_dir))
            return internal_error("runner.db at " + db_path + " is empty (zero bytes) but the state directory is in use (" +
                                  *used + " is not empty): the database was lost or truncated, and starting would " +
                                  "silently begin with an empty store; " + kWhatToDo);
        return {};
    }
    try {
        SQLite::Database db(db_path, SQLite::OPEN_READONLY);
        SQLite::Statement check(db, "PRAGMA quick_check");
        std::string problems;
        std::size_t lines = 0;
        while (check.executeStep()) {
            std::string line = check.getColumn(0).getString();
            if (line == "ok" && lines == 0)
                return {};
            if (lines++ < kMaxQuickCheckLines)
                problems += (problems.empty() ? "" : "; ") + line;
        }
        if (lines > kMaxQuickCheckLines)
            problems += "; …";
        return internal_error("runner.db at " + db_path + " is corrupt (quick_check: " + problems + "): " + kWhatToDo);
    } catch (const SQLite::Exception& e) {
        return internal_error("runner.db at " + db_path + " is corrupt or unreadable (" + e.what() + "): " + kWhatToDo);
    }
}

}  // namespace nps::store
