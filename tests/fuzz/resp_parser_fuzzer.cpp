// libFuzzer target: any bytes, fed to the RESP parser in two pieces split where the input
// says, must parse the same as fed whole, never crash, and never consume past the end.
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "resp_parser.hpp"

namespace {
std::vector<std::vector<std::string>> parse_all(const std::string& in, size_t cut,
                                                std::string* err) {
  fg::ParserLimits lim;
  lim.max_bulk_len = 4096;
  lim.max_args = 64;
  lim.max_inline_len = 4096;
  fg::RespParser p(lim);
  std::vector<std::vector<std::string>> out;
  std::vector<std::string_view> args;
  std::deque<std::string> arena;
  std::string buf;
  size_t begin = 0;
  for (size_t end : {cut, in.size()}) {
    buf.assign(in, 0, end);
    for (;;) {
      fg::ParseResult r = p.parse(buf.data() + begin, buf.size() - begin, args, arena);
      if (r.status == fg::ParseStatus::kError) {
        *err = std::string(r.error);
        return out;
      }
      if (r.status == fg::ParseStatus::kNeedMore) break;
      if (r.consumed == 0 || begin + r.consumed > buf.size()) __builtin_trap();
      begin += r.consumed;
      out.emplace_back(args.begin(), args.end());
    }
  }
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t cut = data[0] % (size);
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string e1, e2;
  auto whole = parse_all(in, in.size(), &e1);
  auto split = parse_all(in, std::min(cut, in.size()), &e2);
  // Splitting the bytes must never change what was understood.
  if (whole != split || e1 != e2) __builtin_trap();
  return 0;
}
