// SPDX-License-Identifier: Apache-2.0
// Writing one blob: temp file, hash while writing, verify, fsync, rename.
#include "nps/image/blob_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "nps/image/content_digest.hpp"

namespace nps::image {

BlobWriter::BlobWriter(int dir_fd, std::string dir, std::string temp_name, UniqueFd fd, BlobWriteOptions options)
    : dir_fd_(dir_fd), dir_(std::move(dir)), temp_name_(std::move(temp_name)), fd_(std::move(fd)),
      options_(std::move(options))
{
}

BlobWriter::BlobWriter(BlobWriter&& other) noexcept
    : dir_fd_(other.dir_fd_), dir_(std::move(other.dir_)), temp_name_(std::move(other.temp_name_)),
      fd_(std::move(other.fd_)), options_(std::move(other.options_)), hash_(std::move(other.hash_)),
      written_(other.written_), done_(other.done_)
{
    other.done_ = true;
}

BlobWriter::~BlobWriter()
{
    discard();
}

void BlobWriter::discard() noexcept
{
    if (done_)
        return;
    done_ = true;
    fd_.reset();
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
}

namespace {

std::string origin(const BlobWriteOptions& options)
{
    return options.source.empty() ? std::string() : " from " + options.source;
}

std::string blob_name(const BlobWriteOptions& options)
{
    return options.expected_digest ? "Blob " + *options.expected_digest : std::string("Blob");
}

}  // namespace

Result<void> BlobWriter::write(const void* data, std::size_t size)
{
    if (done_)
        return internal_error("Blob writer used after commit or failure");
    const std::uint64_t after = written_ + size;
    if (options_.expected_size && after > *options_.expected_size) {
        discard();
        return internal_error(blob_name(options_) + origin(options_) + " is corrupt: it is longer than the " +
                              std::to_string(*options_.expected_size) + " bytes its descriptor declares");
    }
    if (after > options_.max_bytes) {
        discard();
        return internal_error(blob_name(options_) + origin(options_) + " is larger than the limit of " +
                              std::to_string(options_.max_bytes) + " bytes");
    }
    hash_.update(data, size);
    const char* p = static_cast<const char*>(data);
    std::size_t left = size;
    while (left > 0) {
        const ssize_t n = ::write(fd_.get(), p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int err = errno;
            discard();
            return system_error("Failed to write blob" + origin(options_) + " to '" + dir_ + "'", err);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    written_ = after;
    return {};
}

Result<std::string> BlobWriter::commit()
{
    if (done_)
        return internal_error("Blob writer used after commit or failure");
    const std::string actual = hash_.finish_digest();
    if (options_.expected_size && written_ != *options_.expected_size) {
        discard();
        return internal_error(blob_name(options_) + origin(options_) + " is corrupt: it has " +
                              std::to_string(written_) + " bytes, its descriptor declares " +
                              std::to_string(*options_.expected_size));
    }
    if (options_.expected_digest && actual != *options_.expected_digest) {
        discard();
        return internal_error(blob_name(options_) + origin(options_) + " is corrupt: its content hashes to " + actual);
    }
    // Durable before visible: the data, then the name, then the directory.
    if (::fsync(fd_.get()) != 0) {
        const int err = errno;
        discard();
        return system_error("Failed to sync blob " + actual, err);
    }
    const std::string final_name(digest_hex(actual));
    if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, final_name.c_str()) != 0) {
        const int err = errno;
        discard();
        return system_error("Failed to move blob " + actual + " into '" + dir_ + "'", err);
    }
    done_ = true;
    fd_.reset();
    if (::fsync(dir_fd_) != 0)
        return system_error_errno("Failed to sync the blob directory '" + dir_ + "'");
    return actual;
}

}  // namespace nps::image
