// Every error text a client can receive, in one place. Where Redis has a wording, it is
// Redis's, so client libraries recognise it (prefix before the first space is the code).
#pragma once

namespace fg::err {

inline constexpr char kNotInteger[] = "ERR value is not an integer or out of range";
inline constexpr char kNotPositive[] = "ERR value is out of range, must be positive";
inline constexpr char kSyntax[] = "ERR syntax error";
inline constexpr char kWrongType[] =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr char kNoAuth[] = "NOAUTH Authentication required.";
inline constexpr char kWrongPass[] =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr char kAuthNoPassword[] =
    "ERR AUTH <password> called without any password configured for the default user. Are "
    "you sure your configuration is correct?";
inline constexpr char kHelloNoAuth[] =
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
    "<proto> AUTH <user> <pass> option can be used to authenticate the client and select the "
    "RESP protocol version at the same time";
inline constexpr char kNoProto[] = "NOPROTO unsupported protocol version";
inline constexpr char kDbIndex[] = "ERR DB index is out of range";
inline constexpr char kMaxClients[] = "ERR max number of clients reached";
inline constexpr char kClientName[] =
    "ERR Client names cannot contain spaces, newlines or special characters.";
inline constexpr char kKeyLimit[] =
    "OOM command not allowed when the node holds max-keys keys (idle keys expire on their own)";
inline constexpr char kKeyTooLong[] = "ERR key is too long (at most 4096 bytes)";
inline constexpr char kBadLease[] = "ERR invalid lease id";
inline constexpr char kConcurrencyPolicy[] =
    "ERR policy is a concurrency limit: use FG.ACQUIRE / FG.RELEASE";
inline constexpr char kNotConcurrencyPolicy[] =
    "ERR policy is not a concurrency limit: use FG.TAKE";

}  // namespace fg::err

namespace fg::err {

inline constexpr char kClusterDisabled[] = "ERR This instance has cluster support disabled";
inline constexpr char kClusterDown[] = "CLUSTERDOWN Hash slot not served";
inline constexpr char kNoQuorum[] = "CLUSTERDOWN The cluster is down";
inline constexpr char kNotReplicated[] =
    "TRYAGAIN no replica acknowledged the change in time; it may have been counted";
inline constexpr char kSlotMoving[] =
    "TRYAGAIN the key's slot changed owner while the request was on its way; try again";

}  // namespace fg::err
