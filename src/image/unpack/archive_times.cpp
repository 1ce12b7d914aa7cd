// SPDX-License-Identifier: Apache-2.0
#include "archive_times.hpp"

namespace nps::image::detail {

namespace {

#ifdef NPS_LIBRARY_TIME_T_IS_LONG
// libarchive's time_t is the C library's default, a long (32 bits on 32-bit
// architectures), whatever this program's _TIME_BITS says: the functions are
// declared again here, under their own symbol names, with that return type.
extern "C" long library_entry_mtime(archive_entry*) __asm__("archive_entry_mtime");
extern "C" long library_entry_atime(archive_entry*) __asm__("archive_entry_atime");
#else
long long library_entry_mtime(archive_entry* entry) { return archive_entry_mtime(entry); }
long long library_entry_atime(archive_entry* entry) { return archive_entry_atime(entry); }
#endif

}  // namespace

ArchiveTime entry_mtime(archive_entry* entry)
{
    return {library_entry_mtime(entry), archive_entry_mtime_nsec(entry)};
}

std::optional<ArchiveTime> entry_atime(archive_entry* entry)
{
    if (!archive_entry_atime_is_set(entry))
        return std::nullopt;
    return ArchiveTime{library_entry_atime(entry), archive_entry_atime_nsec(entry)};
}

}  // namespace nps::image::detail
