// Simple-string and error framing, with CR/LF sanitised.
#include "resp_writer.hpp"

namespace fg {

void RespWriter::line(char prefix, std::string_view s) {
  out_->push_back(prefix);
  const size_t start = out_->size();
  out_->append(s);
  for (size_t i = start; i < out_->size(); ++i) {
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') (*out_)[i] = ' ';
  }
  out_->append("\r\n", 2);
}

void RespWriter::error(std::string_view e) { line('-', e); }

}  // namespace fg
