// SPDX-License-Identifier: Apache-2.0
// The blob directory: open, stat, verified reads, listing, removal.
#include "nps/image/blob_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"

namespace nps::image {

namespace {

constexpr std::size_t kReadChunk = 256 * 1024;
constexpr std::string_view kTempPrefix = ".tmp-";

std::string hex_name(std::string_view digest)
{
    return std::string(digest_hex(digest));
}

}  // namespace

Result<BlobStore> BlobStore::open(const std::string& blobs_dir)
{
    std::error_code ec;
    std::filesystem::create_directories(blobs_dir, ec);
    if (ec)
        return system_error("Failed to create the blob directory '" + blobs_dir + "'", ec.value());
    UniqueFd fd(::open(blobs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to open the blob directory '" + blobs_dir + "'");
    // Blobs are the image content: only root reads them; workers see the unpacked layers.
    if (::fchmod(fd.get(), 0700) != 0)
        return system_error_errno("Failed to set the mode of '" + blobs_dir + "'");
    return BlobStore(blobs_dir, std::move(fd));
}

std::string BlobStore::path(std::string_view digest) const
{
    return dir_ + "/" + hex_name(digest);
}

Result<BlobWriter> BlobStore::writer(BlobWriteOptions options) const
{
    if (options.expected_digest)
        NPS_TRY_VOID(check_digest(*options.expected_digest, "a blob to store"));
    if (options.max_bytes == 0)
        options.max_bytes = limits::kMaxImageBlobBytes;
    // mkostemp needs a path; the directory is ours, so the name is stable.
    std::string temp = dir_ + "/" + std::string(kTempPrefix) + "XXXXXX";
    UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to create a temporary blob in '" + dir_ + "'");
    if (::fchmod(fd.get(), 0600) != 0)
        return system_error_errno("Failed to set the mode of '" + temp + "'");
    std::string name = temp.substr(dir_.size() + 1);
    return BlobWriter(dir_fd_.get(), dir_, std::move(name), std::move(fd), std::move(options));
}

Result<std::string> BlobStore::put(std::string_view data, BlobWriteOptions options) const
{
    if (!options.expected_size)
        options.expected_size = data.size();
    auto w = NPS_TRY(writer(std::move(options)));
    NPS_TRY_VOID(w.write(data.data(), data.size()));
    return w.commit();
}

Result<std::optional<std::uint64_t>> BlobStore::stat(std::string_view digest) const
{
    NPS_TRY_VOID(check_digest(digest, "a blob lookup"));
    struct stat st{};
    if (::fstatat(dir_fd_.get(), hex_name(digest).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return std::optional<std::uint64_t>{};
        return system_error_errno("Failed to stat blob " + std::string(digest));
    }
    if (!S_ISREG(st.st_mode))
        return internal_error("Blob " + std::string(digest) + " in '" + dir_ + "' is not a regular file");
    return std::optional<std::uint64_t>{static_cast<std::uint64_t>(st.st_size)};
}

Result<VerifiedBlob> BlobStore::open_verified(std::string_view digest) const
{
    NPS_TRY_VOID(check_digest(digest, "a blob lookup"));
    const std::string name = hex_name(digest);
    UniqueFd fd(::openat(dir_fd_.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT)
            return internal_error("Blob " + std::string(digest) + " is missing from the image store ('" + path(digest) +
                                  "'); import the image again");
        return system_error_errno("Failed to open blob " + std::string(digest));
    }
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0)
        return system_error_errno("Failed to stat blob " + std::string(digest));
    if (!S_ISREG(st.st_mode))
        return internal_error("Blob " + std::string(digest) + " in '" + dir_ + "' is not a regular file");

    Sha256Stream hash;
    // No larger than the blob: an image config (read at every worker start)
    // is a few KiB, and a zero-filled 256 KiB buffer cost more than hashing it.
    std::vector<char> buf(static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, std::uint64_t(st.st_size) + 1)));
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return system_error_errno("Failed to read blob " + std::string(digest));
        }
        if (n == 0)
            break;
        hash.update(buf.data(), static_cast<std::size_t>(n));
        total += static_cast<std::uint64_t>(n);
    }
    const std::string actual = hash.finish_digest();
    if (actual != digest)
        return internal_error("Blob " + std::string(digest) + " in the image store is corrupt: its content hashes to " +
                              actual + " ('" + path(digest) + "'); remove the image and import it again");
    if (::lseek(fd.get(), 0, SEEK_SET) != 0)
        return system_error_errno("Failed to rewind blob " + std::string(digest));
    return VerifiedBlob{std::move(fd), total, path(digest)};
}

Result<void> BlobStore::verify(std::string_view digest) const
{
    NPS_TRY(open_verified(digest));
    return {};
}

Result<std::string> BlobStore::read_verified(std::string_view digest, std::size_t max_bytes) const
{
    auto blob = NPS_TRY(open_verified(digest));
    if (blob.size > max_bytes)
        return internal_error("Blob " + std::string(digest) + " is " + std::to_string(blob.size) +
                              " bytes, more than the limit of " + std::to_string(max_bytes));
    std::string data(blob.size, '\0');
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::read(blob.fd.get(), data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return system_error_errno("Failed to read blob " + std::string(digest));
        done += static_cast<std::size_t>(n);
    }
    // The bytes were hashed by open_verified; a change since would need a
    // writer replacing the inode, which rename never does in place.
    return data;
}

namespace {

template <class Fn>
Result<void> for_each_entry(int dir_fd, const std::string& dir, Fn&& fn)
{
    UniqueFd copy(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!copy)
        return system_error_errno("Failed to open '" + dir + "'");
    DIR* d = ::fdopendir(copy.get());
    if (!d)
        return system_error_errno("Failed to list '" + dir + "'");
    copy.release();
    errno = 0;
    while (dirent* e = ::readdir(d)) {
        fn(std::string_view(e->d_name));
        errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0)
        return system_error("Failed to list '" + dir + "'", err);
    return {};
}

}  // namespace

Result<std::vector<BlobFile>> BlobStore::list() const
{
    std::vector<std::string> names;
    NPS_TRY_VOID(for_each_entry(dir_fd_.get(), dir_, [&](std::string_view name) {
        if (is_sha256_hex(name))
            names.emplace_back(name);
    }));
    std::vector<BlobFile> out;
    for (const auto& name : names) {
        struct stat st{};
        if (::fstatat(dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;  // removed meanwhile
            return system_error_errno("Failed to stat '" + dir_ + "/" + name + "'");
        }
        out.push_back({sha256_digest_of_hex(name), static_cast<std::uint64_t>(st.st_size),
                       static_cast<std::uint64_t>(st.st_blocks) * 512});
    }
    return out;
}

Result<std::vector<std::string>> BlobStore::temp_files() const
{
    std::vector<std::string> out;
    NPS_TRY_VOID(for_each_entry(dir_fd_.get(), dir_, [&](std::string_view name) {
        if (name.substr(0, kTempPrefix.size()) == kTempPrefix)
            out.emplace_back(name);
    }));
    return out;
}

Result<std::uint64_t> BlobStore::remove(std::string_view digest) const
{
    NPS_TRY_VOID(check_digest(digest, "a blob to remove"));
    const std::string name = hex_name(digest);
    struct stat st{};
    std::uint64_t bytes = 0;
    if (::fstatat(dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        bytes = static_cast<std::uint64_t>(st.st_blocks) * 512;
    if (::unlinkat(dir_fd_.get(), name.c_str(), 0) != 0) {
        if (errno == ENOENT)
            return std::uint64_t{0};
        return system_error_errno("Failed to remove blob " + std::string(digest));
    }
    return bytes;
}

Result<void> BlobStore::remove_temp(const std::string& name) const
{
    if (name.substr(0, kTempPrefix.size()) != kTempPrefix || name.find('/') != std::string::npos)
        return internal_error("'" + name + "' is not a temporary blob name");
    if (::unlinkat(dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
        return system_error_errno("Failed to remove '" + dir_ + "/" + name + "'");
    return {};
}

}  // namespace nps::image
