// SPDX-License-Identifier: Apache-2.0
// An image directory as an import source. Files are opened beneath the
// directory only (openat2 RESOLVE_BENEATH): a layout's symlinks cannot make
// the import read files elsewhere on the host.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "import_source.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

namespace {

class FdReader final : public ByteReader {
public:
    FdReader(int fd, std::string what) : fd_(fd), what_(std::move(what)) {}
    Result<std::size_t> read(char* data, std::size_t size) override
    {
        for (;;) {
            const ssize_t n = ::read(fd_, data, size);
            if (n >= 0)
                return static_cast<std::size_t>(n);
            if (errno != EINTR)
                return system_error_errno("Failed to read " + what_);
        }
    }

private:
    int fd_;
    std::string what_;
};

class DirectorySource final : public ImportSource {
public:
    DirectorySource(std::string root, UniqueFd root_fd) : root_(std::move(root)), root_fd_(std::move(root_fd)) {}

    std::string describe() const override { return "'" + root_ + "'"; }

    Result<std::optional<std::string>> canonical(const std::string& path) override
    {
        auto size = NPS_TRY(file_size(path));
        if (!size)
            return std::optional<std::string>{};
        return std::optional<std::string>{path};
    }

    Result<std::optional<std::uint64_t>> file_size(const std::string& path) override
    {
        auto fd = NPS_TRY(open_beneath(path, Missing::ok));
        if (!fd)
            return std::optional<std::uint64_t>{};
        struct stat st{};
        if (::fstat(fd.get(), &st) != 0)
            return system_error_errno("Failed to stat '" + root_ + "/" + path + "'");
        if (!S_ISREG(st.st_mode))
            return std::optional<std::uint64_t>{};
        return std::optional<std::uint64_t>{static_cast<std::uint64_t>(st.st_size)};
    }

    Result<std::string> read_small(const std::string& path, std::size_t max_bytes) override
    {
        UniqueFd fd = NPS_TRY(open_beneath(path, Missing::error));
        struct stat st{};
        if (::fstat(fd.get(), &st) != 0)
            return system_error_errno("Failed to stat '" + root_ + "/" + path + "'");
        if (!S_ISREG(st.st_mode))
            return internal_error("'" + root_ + "/" + path + "' is not a regular file");
        if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
            return internal_error("Refusing '" + root_ + "/" + path + "': " + std::to_string(st.st_size) +
                                  " bytes, more than the limit of " + std::to_string(max_bytes));
        std::string data;
        char buf[65536];
        FdReader reader(fd.get(), "'" + root_ + "/" + path + "'");
        for (;;) {
            const std::size_t n = NPS_TRY(reader.read(buf, sizeof buf));
            if (n == 0)
                break;
            if (data.size() + n > max_bytes)
                return internal_error("Refusing '" + root_ + "/" + path + "': more than " + std::to_string(max_bytes) +
                                      " bytes");
            data.append(buf, n);
        }
        return data;
    }

    Result<void> stream(const std::set<std::string>& paths, const StreamFn& fn) override
    {
        for (const auto& path : paths) {
            UniqueFd fd = NPS_TRY(open_beneath(path, Missing::error));
            FdReader reader(fd.get(), "'" + root_ + "/" + path + "'");
            NPS_TRY_VOID(fn(path, reader));
        }
        return {};
    }

private:
    enum class Missing { ok, error };

    Result<UniqueFd> open_beneath(const std::string& path, Missing missing)
    {
        open_how how{};
        how.flags = O_RDONLY | O_CLOEXEC;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        for (;;) {
            const long fd = ::syscall(SYS_openat2, root_fd_.get(), path.c_str(), &how, sizeof how);
            if (fd >= 0)
                return UniqueFd(static_cast<int>(fd));
            if (errno == EINTR || errno == EAGAIN)
                continue;
            if (errno == ENOENT && missing == Missing::ok)
                return UniqueFd();
            if (errno == ENOENT)
                return internal_error(describe() + " has no " + path);
            if (errno == EXDEV)
                return internal_error("'" + root_ + "/" + path + "' leads outside the image directory (a symlink)");
            return system_error_errno("Failed to open '" + root_ + "/" + path + "'");
        }
    }

    std::string root_;
    UniqueFd root_fd_;
};

}  // namespace

std::unique_ptr<ImportSource> make_directory_source(std::string root, UniqueFd root_fd)
{
    return std::make_unique<DirectorySource>(std::move(root), std::move(root_fd));
}

}  // namespace nps::image::detail
