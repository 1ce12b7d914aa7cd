// SPDX-License-Identifier: Apache-2.0
#include "layer_stream.hpp"

#include <fcntl.h>

#include <cerrno>

namespace nps::image::detail {

namespace {

// libarchive reads the blob in blocks of this size.
constexpr std::size_t kBlobBlockBytes = 1 << 20;

const char* compression_name(Compression compression)
{
    switch (compression) {
    case Compression::none: return "uncompressed";
    case Compression::gzip: return "gzip";
    case Compression::zstd: return "zstd";
    }
    return "?";
}

int expected_filter(Compression compression)
{
    switch (compression) {
    case Compression::none: return ARCHIVE_FILTER_NONE;
    case Compression::gzip: return ARCHIVE_FILTER_GZIP;
    case Compression::zstd: return ARCHIVE_FILTER_ZSTD;
    }
    return ARCHIVE_FILTER_NONE;
}

}  // namespace

LayerStream::~LayerStream()
{
    if (inner_ != nullptr)
        archive_read_free(inner_);
    if (outer_ != nullptr)
        archive_read_free(outer_);
}

Error LayerStream::failure(const char* what, archive* a)
{
    if (pull_error_)
        return *pull_error_;
    const char* text = a != nullptr ? archive_error_string(a) : nullptr;
    return internal_error(std::string("Failed to ") + what + " layer '" + blob_path_ +
                          "': " + (text != nullptr ? text : "unknown libarchive error"));
}

Result<void> LayerStream::open(const std::string& blob_path, Compression compression, std::uint64_t max_bytes)
{
    blob_path_ = blob_path;
    max_bytes_ = max_bytes;
    fd_ = UniqueFd(::open(blob_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd_)
        return system_error_errno("Failed to open layer blob '" + blob_path + "'");

    outer_ = archive_read_new();
    inner_ = archive_read_new();
    if (outer_ == nullptr || inner_ == nullptr)
        return internal_error("Failed to allocate a libarchive reader for '" + blob_path + "'");

    // Only the filter the media type names is registered: a blob that is
    // not what its media type says then fails the check below instead of
    // being decompressed by whichever filter bids.
    int r = ARCHIVE_OK;
    if (compression == Compression::gzip)
        r = archive_read_support_filter_gzip(outer_);
    else if (compression == Compression::zstd)
        r = archive_read_support_filter_zstd(outer_);
    // ARCHIVE_WARN means "through an external program": not for us.
    if (r != ARCHIVE_OK)
        return internal_error(std::string("libarchive cannot decompress ") + compression_name(compression) +
                              " in-process (layer '" + blob_path + "')");
    if (archive_read_support_format_raw(outer_) != ARCHIVE_OK ||
        archive_read_open_fd(outer_, fd_.get(), kBlobBlockBytes) != ARCHIVE_OK)
        return failure("open", outer_);
    archive_entry* raw = nullptr;
    r = archive_read_next_header(outer_, &raw);
    if (r == ARCHIVE_EOF)
        return internal_error("Failed to read layer '" + blob_path + "': the blob is empty");
    if (r < ARCHIVE_WARN)
        return failure("read", outer_);
    if (archive_filter_code(outer_, 0) != expected_filter(compression))
        return internal_error("Failed to read layer '" + blob_path + "': the blob is not " +
                              compression_name(compression) + " as its media type says (found " +
                              archive_filter_name(outer_, 0) + ")");

    if (archive_read_support_format_tar(inner_) != ARCHIVE_OK ||
        archive_read_open(inner_, this, nullptr, &LayerStream::read_callback, nullptr) != ARCHIVE_OK)
        return failure("open the tar stream of", inner_);
    return {};
}

la_ssize_t LayerStream::read_callback(archive*, void* self, const void** buffer)
{
    return static_cast<LayerStream*>(self)->pull(buffer);
}

// Hands the inner reader the next piece of the uncompressed stream, hashing
// and counting it; this is the only path by which stream bytes are consumed.
la_ssize_t LayerStream::pull(const void** buffer)
{
    if (pull_error_)
        return -1;
    std::size_t size = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(outer_, buffer, &size, &offset);
    if (r == ARCHIVE_EOF)
        return 0;
    if (r < ARCHIVE_WARN) {
        const char* text = archive_error_string(outer_);
        pull_error_ = internal_error("Failed to decompress layer '" + blob_path_ +
                                     "': " + (text != nullptr ? text : "unknown libarchive error"));
        archive_set_error(inner_, EIO, "%s", pull_error_->message.c_str());
        return -1;
    }
    bytes_ += size;
    if (bytes_ > max_bytes_) {
        pull_error_ = internal_error("Refusing layer '" + blob_path_ + "': its uncompressed tar stream exceeds " +
                                     std::to_string(max_bytes_) + " bytes (the layer byte limit)");
        archive_set_error(inner_, EFBIG, "%s", pull_error_->message.c_str());
        return -1;
    }
    hash_.update(*buffer, size);
    return static_cast<la_ssize_t>(size);
}

Result<archive_entry*> LayerStream::next_entry()
{
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(inner_, &entry);
    if (r == ARCHIVE_EOF)
        return static_cast<archive_entry*>(nullptr);
    // ARCHIVE_WARN covers names libarchive could not convert to the locale's
    // charset; the bytes are kept as they are in the archive, which is what
    // a layer means.
    if (r < ARCHIVE_WARN)
        return failure("read a tar header of", inner_);
    return entry;
}

Result<std::optional<DataBlock>> LayerStream::next_block()
{
    DataBlock block;
    la_int64_t offset = 0;
    int r = archive_read_data_block(inner_, &block.data, &block.size, &offset);
    if (r == ARCHIVE_EOF)
        return std::optional<DataBlock>();
    if (r < ARCHIVE_WARN)
        return failure("read file data of", inner_);
    block.offset = offset;
    return std::optional<DataBlock>(block);
}

Result<Sha256> LayerStream::finish()
{
    // The tar reader stops at the end-of-archive marker; the blocking
    // padding (and anything else) after it is still part of the diff_id.
    const void* buffer = nullptr;
    for (;;) {
        la_ssize_t n = pull(&buffer);
        if (n == 0)
            break;
        if (n < 0)
            return failure("read", outer_);
    }
    return hash_.finish();
}

}  // namespace nps::image::detail
