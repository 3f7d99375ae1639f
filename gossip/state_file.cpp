// A node's state on disk: the file format of state_file.hpp, and atomic writes.
#include "state_file.hpp"

#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {
namespace {

constexpr std::string_view kMagic = "FGSNAP01";
constexpr uint32_t kFileVersion = 1;
constexpr uint32_t kEnd = 0xffffffff;
constexpr size_t kChunkBytes = 4 << 20;
constexpr size_t kDigest = SHA256_DIGEST_LENGTH;

void put_u32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 4);
}

bool get_u32(std::string_view& in, uint32_t& v) {
  if (in.size() < 4) return false;
  v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(in[i])} << (8 * i);
  in.remove_prefix(4);
  return true;
}

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

std::string encode_snapshot_file(const SnapshotData& d) {
  wire::SnapshotHead head;
  head.set_version(kFileVersion);
  head.set_node_id(d.node_id);
  head.set_cluster(d.cluster);
  head.set_epoch(d.epoch);
  head.set_saved_at_ms(d.saved_at_ms);
  head.set_keys(d.entries.size());
  head.set_book(Book::encode(d.book));
  std::string out(kMagic);
  const std::string h = head.SerializeAsString();
  put_u32(out, static_cast<uint32_t>(h.size()));
  out += h;
  // Chunks of about kChunkBytes, encoded from the entries where they are.
  size_t from = 0;
  size_t bytes = 0;
  for (size_t i = 0; i <= d.entries.size(); ++i) {
    if (i == d.entries.size() ? i > from : bytes > kChunkBytes) {
      const std::string c = encode_state(d.entries.data() + from, d.entries.data() + i);
      put_u32(out, static_cast<uint32_t>(c.size()));
      out += c;
      from = i;
      bytes = 0;
    }
    if (i < d.entries.size()) bytes += approx_encoded_bytes(d.entries[i]);
  }
  put_u32(out, kEnd);
  unsigned char digest[kDigest];
  SHA256(reinterpret_cast<const unsigned char*>(out.data()), out.size(), digest);
  out.append(reinterpret_cast<const char*>(digest), kDigest);
  return out;
}

Result<SnapshotData> decode_snapshot_file(std::string_view bytes) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return Error{bytes.substr(0, 6) == "FGSNAP" ? "a snapshot of another format version"
                                                : "not a Floodgate snapshot (bad magic)"};
  }
  if (bytes.size() < kMagic.size() + 8 + kDigest) {
    return Error{"truncated snapshot (" + std::to_string(bytes.size()) + " bytes)"};
  }
  unsigned char digest[kDigest];
  const std::string_view body = bytes.substr(0, bytes.size() - kDigest);
  SHA256(reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest);
  if (std::memcmp(digest, bytes.data() + body.size(), kDigest) != 0) {
    return Error{"checksum mismatch: the file is truncated or corrupt"};
  }
  std::string_view in = body.substr(kMagic.size());
  uint32_t n = 0;
  wire::SnapshotHead head;
  if (!get_u32(in, n) || n > in.size() || !head.ParseFromArray(in.data(), static_cast<int>(n))) {
    return Error{"unreadable snapshot head"};
  }
  in.remove_prefix(n);
  if (head.version() > kFileVersion) {
    return Error{"snapshot version " + std::to_string(head.version()) +
                 " is newer than this build's " + std::to_string(kFileVersion)};
  }
  SnapshotData d;
  d.node_id = head.node_id();
  d.cluster = head.cluster();
  d.epoch = head.epoch();
  d.saved_at_ms = head.saved_at_ms();
  if (!Book::decode(head.book(), d.book)) {
    return Error{"unreadable settings book"};
  }
  for (;;) {
    if (!get_u32(in, n)) {
      return Error{"snapshot ends without its end mark"};
    }
    if (n == kEnd) break;
    std::vector<EntrySnapshot> part;
    if (n > in.size() || !decode_state(in.substr(0, n), part)) {
      return Error{"unreadable state chunk after " + std::to_string(d.entries.size()) + " keys"};
    }
    in.remove_prefix(n);
    if (d.entries.empty()) {
      d.entries = std::move(part);
    } else {
      d.entries.insert(d.entries.end(), std::make_move_iterator(part.begin()),
                       std::make_move_iterator(part.end()));
    }
  }
  if (!in.empty()) {
    return Error{"bytes after the end mark"};
  }
  if (d.entries.size() != head.keys()) {
    return Error{"the snapshot says " + std::to_string(head.keys()) + " keys but holds " +
                 std::to_string(d.entries.size())};
  }
  return d;
}

Status write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Error{errno_text("cannot create", tmp)};
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      Error failed{errno_text("cannot write", tmp)};
      ::close(fd);
      ::unlink(tmp.c_str());
      return failed;
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    Error failed{errno_text("cannot fsync", tmp)};
    ::close(fd);
    ::unlink(tmp.c_str());
    return failed;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error failed{errno_text("cannot rename to", path)};
    ::unlink(tmp.c_str());
    return failed;
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // (the rename is durable once the directory is)
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<std::string> read_whole_file(const std::string& path, bool* missing) {
  if (missing) *missing = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (missing) *missing = errno == ENOENT;
    return Error{errno_text("cannot open", path)};
  }
  std::string got;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      Error failed{errno_text("cannot read", path)};
      ::close(fd);
      return failed;
    }
    if (r == 0) break;
    got.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return got;
}

}  // namespace fg
