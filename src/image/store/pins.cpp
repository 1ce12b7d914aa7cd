// SPDX-License-Identifier: Apache-2.0
// Pin files: created and held by a live process, recognised as stale by
// whoever can lock them.
#include "nps/image/pins.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <random>
#include <vector>

#include "nps/base/digest.hpp"
#include "nps/image/content_digest.hpp"

namespace nps::image {

namespace {

constexpr std::string_view kPinSuffix = ".pin";
constexpr std::size_t kMaxPinFileBytes = 4096;

std::string random_name()
{
    std::random_device device;
    std::array<std::uint32_t, 4> words{};
    for (auto& w : words)
        w = device();
    return to_hex(std::string_view(reinterpret_cast<const char*>(words.data()), sizeof words));
}

// The manifest digest on the pin file's first line, or empty.
std::string read_digest(int fd)
{
    std::array<char, kMaxPinFileBytes> buf{};
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
    if (n <= 0)
        return {};
    std::string_view text(buf.data(), static_cast<std::size_t>(n));
    text = text.substr(0, text.find('\n'));
    return is_sha256_digest(text) ? std::string(text) : std::string();
}

}  // namespace

Result<ImagePin> ImagePin::create(const std::string& pins_dir, const std::string& manifest_digest,
                                  const std::string& holder)
{
    NPS_TRY_VOID(check_digest(manifest_digest, "a pin"));
    std::error_code ec;
    std::filesystem::create_directories(pins_dir, ec);
    if (ec)
        return system_error("Failed to create the pin directory '" + pins_dir + "'", ec.value());
    const std::string path = pins_dir + "/" + random_name() + std::string(kPinSuffix);
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd)
        return system_error_errno("Failed to create the pin '" + path + "'");
    ImagePin pin(path, manifest_digest, std::move(fd));
    // Held for the pin's lifetime; the kernel drops it when we die. Blocking:
    // a listing may be probing the new file for a moment.
    while (::flock(pin.fd_.get(), LOCK_EX) != 0)
        if (errno != EINTR)
            return system_error_errno("Failed to lock the pin '" + path + "'");
    std::string text = manifest_digest + "\n" + holder.substr(0, 1024) + "\n";
    if (::write(pin.fd_.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return system_error_errno("Failed to write the pin '" + path + "'");
    return pin;
}

ImagePin::ImagePin(ImagePin&& other) noexcept
    : path_(std::move(other.path_)), digest_(std::move(other.digest_)), fd_(std::move(other.fd_))
{
    other.path_.clear();
}

ImagePin& ImagePin::operator=(ImagePin&& other) noexcept
{
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        digest_ = std::move(other.digest_);
        fd_ = std::move(other.fd_);
        other.path_.clear();
    }
    return *this;
}

ImagePin::~ImagePin()
{
    release();
}

void ImagePin::release() noexcept
{
    // Unlink while still holding the lock: nobody can mistake the file for stale.
    if (!path_.empty() && fd_)
        ::unlink(path_.c_str());
    fd_.reset();
    path_.clear();
}

Result<PinScan> scan_pins(const std::string& pins_dir, PinCleanup cleanup)
{
    PinScan scan;
    UniqueFd dir_fd(::open(pins_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) {
        if (errno == ENOENT)
            return scan;
        return system_error_errno("Failed to open the pin directory '" + pins_dir + "'");
    }
    std::vector<std::string> names;
    {
        UniqueFd copy(::dup(dir_fd.get()));
        DIR* d = copy ? ::fdopendir(copy.get()) : nullptr;
        if (!d)
            return system_error_errno("Failed to list the pin directory '" + pins_dir + "'");
        copy.release();
        while (dirent* e = ::readdir(d)) {
            std::string_view name(e->d_name);
            if (name.size() > kPinSuffix.size() && name.substr(name.size() - kPinSuffix.size()) == kPinSuffix)
                names.emplace_back(name);
        }
        ::closedir(d);
    }
    for (const auto& name : names) {
        UniqueFd fd(::openat(dir_fd.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) {
            if (errno == ENOENT)
                continue;  // released meanwhile
            return system_error_errno("Failed to open the pin '" + pins_dir + "/" + name + "'");
        }
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
            // Nobody holds it: its process is gone.
            if (cleanup == PinCleanup::remove_stale) {
                if (::unlinkat(dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT)
                    return system_error_errno("Failed to remove the stale pin '" + pins_dir + "/" + name + "'");
                ++scan.stale_removed;
            }
            continue;
        }
        if (errno != EWOULDBLOCK)
            return system_error_errno("Failed to test the pin '" + pins_dir + "/" + name + "'");
        const std::string digest = read_digest(fd.get());
        if (!digest.empty())
            scan.live.insert(digest);
    }
    return scan;
}

}  // namespace nps::image
