// floodgate-cli top: a live view of the cluster in the terminal, from a node's admin port
// (its /overview: every member's figures, gathered by that node over the peer links).
#pragma once
#include <string>

namespace fgcli {

struct TopOptions {
  std::string admin = "127.0.0.1:8379";  // a node's admin port, host:port
  std::string token_file;                // the admin token (admin-token-file), if it wants one
  double interval_s = 1.0;
  bool once = false;  // print one frame and exit (no terminal needed)
};

// Runs until 'q' (or Ctrl-C); with `once`, prints one frame. Exit status: 0, or 2 when
// `once` could not reach the node.
int run_top(const TopOptions& o);

}  // namespace fgcli
