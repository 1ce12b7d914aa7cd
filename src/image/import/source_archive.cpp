// SPDX-License-Identifier: Apache-2.0
// A tar archive (oci-archive, docker-archive) as an import source, read with
// libarchive in two passes: the first lists the members and keeps the small
// JSON ones (index.json, manifests, configs) in memory, the second streams
// the blobs the import needs, front to back, without extracting anything.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <vector>

#include "import_source.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

namespace {

constexpr std::size_t kBlockBytes = 64 * 1024;

struct ArchiveDeleter {
    void operator()(archive* a) const noexcept { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveDeleter>;

struct Member {
    enum class Kind { file, symlink, hardlink, other } kind = Kind::other;
    std::uint64_t size = 0;
    std::string link;                    // normalized target (links)
    std::optional<std::string> content;  // small JSON files kept from the first pass
    bool duplicate = false;
};

class ArchiveReader final : public ByteReader {
public:
    ArchiveReader(archive* a, std::string what) : a_(a), what_(std::move(what)) {}
    Result<std::size_t> read(char* data, std::size_t size) override
    {
        for (;;) {
            const la_ssize_t n = archive_read_data(a_, data, size);
            if (n >= 0)
                return static_cast<std::size_t>(n);
            if (n == ARCHIVE_RETRY)
                continue;
            const char* msg = archive_error_string(a_);
            return internal_error("Failed to read " + what_ + ": " + (msg ? msg : "archive error"));
        }
    }

private:
    archive* a_;
    std::string what_;
};

// The parent directory of a normalized member path ("" at the top).
std::string parent_of(const std::string& path)
{
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

class ArchiveSource final : public ImportSource {
public:
    explicit ArchiveSource(std::string path) : path_(std::move(path)) {}

    std::string describe() const override { return "'" + path_ + "'"; }

    // First pass: the member table and the small JSON files.
    Result<void> scan()
    {
        auto [fd, a] = NPS_TRY(open_archive());
        std::size_t entries = 0;
        std::size_t kept_bytes = 0;
        archive_entry* entry = nullptr;
        for (;;) {
            const int rc = archive_read_next_header(a.get(), &entry);
            if (rc == ARCHIVE_EOF)
                break;
            if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
                return archive_failure(a.get(), entries == 0);
            if (++entries > limits::kMaxImportArchiveEntries)
                return internal_error("Refusing " + describe() + ": more than " +
                                      std::to_string(limits::kMaxImportArchiveEntries) + " members");
            const char* raw = archive_entry_pathname(entry);
            auto name = raw ? normalize_member_path(raw) : std::nullopt;
            if (!name)
                continue;  // nothing an image names can live there
            Member m;
            const char* hardlink = archive_entry_hardlink(entry);
            const auto type = archive_entry_filetype(entry);
            if (hardlink) {
                m.kind = Member::Kind::hardlink;
                m.link = normalize_member_path(hardlink).value_or("");
            } else if (type == AE_IFLNK) {
                m.kind = Member::Kind::symlink;
                const char* target = archive_entry_symlink(entry);
                const std::string base = target && target[0] == '/' ? std::string() : parent_of(*name);
                m.link = normalize_member_path(base + "/" + (target ? target : "")).value_or("");
            } else if (type == AE_IFREG) {
                m.kind = Member::Kind::file;
                m.size = archive_entry_size_is_set(entry) ? static_cast<std::uint64_t>(archive_entry_size(entry)) : 0;
                m.content = NPS_TRY(keep_if_json(a.get(), *name, m.size, kept_bytes));
            }
            auto [it, inserted] = members_.emplace(*name, m);
            if (!inserted && m.kind != Member::Kind::other && it->second.kind != Member::Kind::other)
                it->second.duplicate = true;
            else if (!inserted)
                it->second = std::move(m);
        }
        return {};
    }

    Result<std::optional<std::string>> canonical(const std::string& path) override
    {
        std::string current = path;
        for (std::size_t hops = 0; hops <= limits::kMaxImportSymlinkHops; ++hops) {
            auto it = members_.find(current);
            if (it == members_.end())
                return std::optional<std::string>{};
            const Member& m = it->second;
            if (m.duplicate)
                return internal_error(describe() + " has two members named '" + current + "'; refusing to guess");
            switch (m.kind) {
            case Member::Kind::file:
                return std::optional<std::string>{current};
            case Member::Kind::symlink:
            case Member::Kind::hardlink:
                if (m.link.empty())
                    return internal_error(describe() + ": the link '" + current + "' points outside the archive");
                current = m.link;
                continue;
            case Member::Kind::other:
                return std::optional<std::string>{};
            }
        }
        return internal_error(describe() + ": more than " + std::to_string(limits::kMaxImportSymlinkHops) +
                              " links to follow from '" + path + "'");
    }

    Result<std::optional<std::uint64_t>> file_size(const std::string& path) override
    {
        auto real = NPS_TRY(canonical(path));
        if (!real)
            return std::optional<std::uint64_t>{};
        return std::optional<std::uint64_t>{members_.at(*real).size};
    }

    Result<std::string> read_small(const std::string& path, std::size_t max_bytes) override
    {
        auto real = NPS_TRY(canonical(path));
        if (!real)
            return internal_error(describe() + " has no " + path);
        const Member& m = members_.at(*real);
        if (m.size > max_bytes)
            return internal_error("Refusing " + path + " in " + describe() + ": " + std::to_string(m.size) +
                                  " bytes, more than the limit of " + std::to_string(max_bytes));
        if (!m.content)
            return internal_error("Refusing " + path + " in " + describe() +
                                  ": not a JSON document, or the archive's JSON exceeds " +
                                  std::to_string(limits::kMaxImportMetadataBytes) + " bytes in all");
        return *m.content;
    }

    Result<void> stream(const std::set<std::string>& paths, const StreamFn& fn) override
    {
        for (const auto& p : paths) {
            auto real = NPS_TRY(canonical(p));
            if (!real || *real != p)
                return internal_error(describe() + " has no regular member " + p);
        }
        if (paths.empty())
            return {};
        auto [fd, a] = NPS_TRY(open_archive());
        std::set<std::string> left = paths;
        archive_entry* entry = nullptr;
        while (!left.empty()) {
            const int rc = archive_read_next_header(a.get(), &entry);
            if (rc == ARCHIVE_EOF)
                break;
            if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
                return archive_failure(a.get(), false);
            const char* raw = archive_entry_pathname(entry);
            auto name = raw ? normalize_member_path(raw) : std::nullopt;
            if (!name || archive_entry_hardlink(entry) || archive_entry_filetype(entry) != AE_IFREG)
                continue;
            auto it = left.find(*name);
            if (it == left.end())
                continue;
            ArchiveReader reader(a.get(), *name + " in " + describe());
            NPS_TRY_VOID(fn(*name, reader));
            left.erase(it);
        }
        if (!left.empty())
            return internal_error(describe() + " changed while it was imported: " + *left.begin() + " is gone");
        return {};
    }

private:
    struct Opened {
        UniqueFd fd;
        ArchivePtr archive;
    };

    Result<Opened> open_archive() const
    {
        UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd)
            return system_error_errno("Failed to open '" + path_ + "'");
        ArchivePtr a(archive_read_new());
        if (!a)
            return internal_error("Failed to set up an archive reader for '" + path_ + "'");
        archive_read_support_format_tar(a.get());
        archive_read_support_filter_all(a.get());
        if (archive_read_open_fd(a.get(), fd.get(), kBlockBytes) != ARCHIVE_OK)
            return archive_failure(a.get(), true);
        return Opened{std::move(fd), std::move(a)};
    }

    Error archive_failure(archive* a, bool at_start) const
    {
        const char* msg = archive_error_string(a);
        const std::string why = msg ? msg : "archive error";
        if (at_start)
            return internal_error("'" + path_ + "' is neither an image directory nor a tar archive (" + why + ")");
        return internal_error("Failed to read the archive '" + path_ + "': " + why);
    }

    // Keeps a member in memory when it is small, looks like JSON and the
    // budget allows; its data is consumed either way.
    Result<std::optional<std::string>> keep_if_json(archive* a, const std::string& name, std::uint64_t size,
                                                    std::size_t& kept_bytes)
    {
        const std::size_t max_doc = std::max({limits::kMaxImageConfigBytes, limits::kMaxImageManifestBytes,
                                              limits::kMaxImageIndexBytes, limits::kMaxDockerManifestBytes});
        if (size == 0 || size > max_doc || kept_bytes + size > limits::kMaxImportMetadataBytes)
            return std::optional<std::string>{};
        ArchiveReader reader(a, name + " in " + describe());
        std::string data;
        char buf[kBlockBytes];
        for (;;) {
            const std::size_t n = NPS_TRY(reader.read(buf, sizeof buf));
            if (n == 0)
                break;
            if (data.empty()) {
                const std::string_view head(buf, n);
                const auto first = head.find_first_not_of(" \t\r\n");
                if (first == std::string_view::npos || (head[first] != '{' && head[first] != '['))
                    return std::optional<std::string>{};  // a layer or other binary: skip the rest
            }
            if (data.size() + n > size)
                return internal_error(name + " in " + describe() + " is longer than its header says");
            data.append(buf, n);
        }
        kept_bytes += data.size();
        return std::optional<std::string>{std::move(data)};
    }

    std::string path_;
    std::map<std::string, Member> members_;
};

}  // namespace

std::optional<std::string> normalize_member_path(std::string_view name)
{
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (start <= name.size()) {
        auto slash = name.find('/', start);
        if (slash == std::string_view::npos)
            slash = name.size();
        const std::string_view part = name.substr(start, slash - start);
        if (part == "..") {
            if (parts.empty())
                return std::nullopt;
            parts.pop_back();
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = slash + 1;
    }
    if (parts.empty())
        return std::nullopt;
    std::string out;
    for (const auto& part : parts) {
        if (!out.empty())
            out.push_back('/');
        out.append(part);
    }
    return out;
}

Result<std::unique_ptr<ImportSource>> open_import_source(const std::string& path)
{
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0)
        return system_error_errno("Failed to import '" + path + "'");
    if (S_ISDIR(st.st_mode)) {
        UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd)
            return system_error_errno("Failed to open '" + path + "'");
        return make_directory_source(path, std::move(fd));
    }
    if (!S_ISREG(st.st_mode))
        return internal_error("Failed to import '" + path + "': neither a directory nor a regular file");
    auto source = std::make_unique<ArchiveSource>(path);
    NPS_TRY_VOID(source->scan());
    return std::unique_ptr<ImportSource>(std::move(source));
}

}  // namespace nps::image::detail
