// Requests and outcomes in forward.proto's form, both ways. The sender encodes what it
// resolved; the owner trusts nothing it cannot check (a limit is validated again).
#pragma once
#include <deque>
#include <string_view>
#include <vector>

#include "forward.pb.h"
#include "request.hpp"
#include "result.hpp"

namespace fg {

// `holder`: the holder the request carries (a BOUND lease's is resolved by the sender).
void encode_forwarded(const Request& r, std::string_view holder, forward::ForwardedRequest& out);
// Views in the result point into `in`; a data command's list of words is kept in `argvs`.
Result<Request> decode_forwarded(const forward::ForwardedRequest& in,
                                 std::deque<std::vector<std::string_view>>& argvs);

void encode_outcome(const Outcome& o, Verb verb, forward::ForwardOutcome& out);
// A data command's reply is decoded into `replies`.
void decode_outcome(const forward::ForwardOutcome& in, Verb verb, Outcome& out,
                    std::deque<DataReply>& replies);

}  // namespace fg
