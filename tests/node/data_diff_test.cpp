// The data commands against the real thing: redis-server (Debian's) and a Floodgate node get
// the same seeded, generated command sequences — wrong arities, bad numbers, overflows,
// options in every combination, expired keys — and every reply must be the same bytes.
// Replies that tell the time (TTL, PTTL, EXPIRETIME, PEXPIRETIME) may differ by the moment
// between the two requests. Relative TTLs are never short enough to run out between them.
//
// In the suite: a fixed set of seeds. On demand, longer:
//   FG_DIFF_SEED=1234 FG_DIFF_COMMANDS=100000 ./node_test --gtest_filter='DataDiff.*'
// On a difference the test prints the seed, the command and both replies, and stops.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <random>
#include <set>
#include <thread>

#include "errors.hpp"
#include "node_process.hpp"
#include "redis_server.hpp"
#include "script_engine.hpp"

namespace fg::testing {
namespace {

// Seeded command sequences over a handful of keys (two of them in one slot, so multi-key
// commands find keys together and apart).
class Generator {
 public:
  Generator(uint64_t seed, std::string prefix) : rng_(seed), prefix_(std::move(prefix)) {}

  std::vector<std::string> next() {
    // Transactions: MULTI, a few commands (queued, or refused while queueing), then EXEC
    // or DISCARD; now and then a nested MULTI or an EXEC/DISCARD without one.
    if (in_multi_ < 0 && pick(25) == 0) {
      in_multi_ = pick(5);
      return {"MULTI"};
    }
    if (in_multi_ == 0) {
      in_multi_ = -1;
      return {one<std::string>({"EXEC", "EXEC", "EXEC", "DISCARD", "exec"})};
    }
    if (in_multi_ > 0) --in_multi_;
    // (A MULTI the generator does not count on only inside a transaction: nested.)
    if (pick(200) == 0 && in_multi_ >= 0) return {one<std::string>({"MULTI", "NOSUCH"})};
    if (pick(200) == 0 && in_multi_ < 0) return {one<std::string>({"EXEC", "DISCARD", "NOSUCH"})};
    // WATCH (outside a transaction mostly: inside, an error) and UNWATCH, so EXEC meets
    // watched keys changed, expired, deleted or left alone since; now and then a flush.
    if (pick(30) == 0) {
      std::vector<std::string> w = {one<std::string>({"WATCH", "WATCH", "watch"})};
      for (int n = 1 + pick(3); n > 0; --n) w.push_back(key());
      return w;
    }
    if (pick(120) == 0) return {"UNWATCH"};
    if (pick(700) == 0) {
      std::vector<std::string> w = {one<std::string>({"FLUSHALL", "FLUSHDB", "flushall"})};
      const int o = pick(5);
      if (o == 1) w.push_back("ASYNC");
      if (o == 2) w.push_back("sync");
      if (o == 3) w.push_back("now");
      return w;
    }
    std::vector<std::string> w = command();
    // Now and then a word too many or too few: arity errors, and options cut short.
    const int r = pick(40);
    if (r == 0 && w.size() > 1) w.pop_back();
    if (r == 1) w.push_back(increment());  // (short: keys are at most 4096 bytes here)
    return w;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  template <class T>
  const T& one(const std::vector<T>& v) {
    return v[static_cast<size_t>(pick(static_cast<int>(v.size())))];
  }
  std::string key() { return prefix_ + one<std::string>({"a", "b", "c", "{t}x", "{t}y"}); }
  std::string field() { return one<std::string>({"f1", "f2", "tokens", "ts", "", "F1"}); }
  // (Short: a Redis hash with a value over 64 bytes lists its fields in another order.)
  std::string short_value() {
    return one<std::string>(
        {"0", "1", "-1", "abc", "", "3.5", "9223372036854775807", "1e3", "01", "10", "-0", "2.5"});
  }
  std::string member() { return one<std::string>({"m1", "m2", "m3", "req:1", "req:2", ""}); }
  std::string score() {
    return one<std::string>({"1", "2", "1.5", "-3", "0", "inf", "-inf", "1e3", "abc", "",
                             "1700000000000", "1700000060000", " 1", "0.1", "-0"});
  }
  std::string bound() {
    return one<std::string>({"-inf", "+inf", "0", "(1", "2", "(1.5", "1700000000000",
                             "(1700000000000", "x", "", "inf", "1e3"});
  }
  std::string rank() { return one<std::string>({"0", "1", "-1", "-2", "2", "10", "x", "-100"}); }
  std::string pattern() {
    return prefix_ + one<std::string>({"*", "?", "{t}*", "[ab]", "[^a]*", "a", "nomatch*", "\\*"});
  }
  std::string any_value() {
    return one<std::string>({"0",
                             "1",
                             "-1",
                             "10",
                             "abc",
                             "",
                             "3.5",
                             "9223372036854775807",
                             "-9223372036854775808",
                             "01",
                             "1e3",
                             " 2",
                             "007",
                             "-0",
                             "+5",
                             "99999999999999999999",
                             "0x10",
                             "4.0",
                             "-2.50",
                             std::string(5000, 'v')});
  }
  std::string increment() {
    return one<std::string>({"1", "-1", "0", "5", "-7", "9223372036854775807",
                             "-9223372036854775808", "x", "1.5", "", "100", "01"});
  }
  std::string float_increment() {
    return one<std::string>({"1.5", "-0.25", "0", "1e3", "abc", "inf", "-inf", "3", "1e400", "0.1",
                             "5.0e3", "", "-3", " 1", "1 ", "nan", "2.5e-3", "10"});
  }
  // A relative TTL no other in this run equals (so GT/LT never compare two deadlines that
  // differ only by when each server read its clock), or a bad one.
  std::string relative(bool ms) {
    switch (pick(8)) {
      case 0:
        return one<std::string>(
            {"0", "-5", "abc", "", "9223372036854775807", "-9223372036854775808", "1.5"});
      default: {
        int64_t s;
        do s = 100 + pick(1'000'000);
        while (!used_.insert(s).second);
        return std::to_string(ms ? s * 1000 : s);
      }
    }
  }
  // An absolute deadline: long past (the key goes at once), far future, or bad.
  std::string absolute(bool ms) {
    const int64_t s = one<int64_t>(
        {1, 1000, 1'500'000'000, 4'000'000'000, 5'000'000'000, -1, 0, 253'402'300'799});
    if (pick(10) == 0) return "x";
    return std::to_string(ms ? s * 1000 : s);
  }
  std::vector<std::string> expire_options() {
    std::vector<std::string> o;
    const int n = pick(4) == 0 ? pick(3) : 0;
    for (int i = 0; i < n; ++i)
      o.push_back(one<std::string>({"NX", "XX", "GT", "LT", "gt", "FOO"}));
    return o;
  }

  std::vector<std::string> command() {
    std::vector<std::string> w;
    switch (pick(56)) {
      case 0:
      case 1:
        return {"GET", key()};
      case 2:
      case 3: {
        w = {"SET", key(), any_value()};
        const int n = pick(4);
        for (int i = 0; i < n; ++i) {
          switch (pick(9)) {
            case 0:
              w.push_back("NX");
              break;
            case 1:
              w.push_back("XX");
              break;
            case 2:
              w.push_back("GET");
              break;
            case 3:
              w.push_back("KEEPTTL");
              break;
            case 4:
              w.insert(w.end(), {"EX", relative(false)});
              break;
            case 5:
              w.insert(w.end(), {"PX", relative(true)});
              break;
            case 6:
              w.insert(w.end(), {"EXAT", absolute(false)});
              break;
            case 7:
              w.insert(w.end(), {"PXAT", absolute(true)});
              break;
            default:
              w.push_back(one<std::string>({"ex", "BOGUS", "px"}));
              break;
          }
        }
        return w;
      }
      case 4:
        return {"SETNX", key(), any_value()};
      case 5:
        return {one<std::string>({"SETEX", "PSETEX"}), key(), relative(pick(2) == 0), any_value()};
      case 6:
        return {"GETDEL", key()};
      case 7: {
        w = {"GETEX", key()};
        const int n = pick(3);
        for (int i = 0; i < n; ++i) {
          switch (pick(5)) {
            case 0:
              w.insert(w.end(), {"EX", relative(false)});
              break;
            case 1:
              w.insert(w.end(), {"PX", relative(true)});
              break;
            case 2:
              w.insert(w.end(), {"EXAT", absolute(false)});
              break;
            case 3:
              w.insert(w.end(), {"PXAT", absolute(true)});
              break;
            default:
              w.push_back("PERSIST");
              break;
          }
        }
        return w;
      }
      case 8:
      case 9:
        return {one<std::string>({"INCR", "DECR"}), key()};
      case 10:
        return {one<std::string>({"INCRBY", "DECRBY"}), key(), increment()};
      case 11:
        return {"INCRBYFLOAT", key(), float_increment()};
      case 12: {
        w = {"MGET"};
        const int n = 1 + pick(4);
        for (int i = 0; i < n; ++i) w.push_back(key());
        return w;
      }
      case 13: {
        w = {"MSET"};
        const int n = 1 + pick(3);
        for (int i = 0; i < n; ++i) w.insert(w.end(), {key(), any_value()});
        return w;
      }
      case 14: {
        w = {one<std::string>({"DEL", "UNLINK", "EXISTS", "EXISTS", "TOUCH"})};
        const int n = 1 + pick(4);
        for (int i = 0; i < n; ++i) w.push_back(key());
        return w;
      }
      case 15:
        return {"TYPE", key()};
      case 16:
      case 17: {
        w = {one<std::string>({"EXPIRE", "PEXPIRE"}), key()};
        w.push_back(relative(w[0] == "PEXPIRE"));
        for (auto& o : expire_options()) w.push_back(o);
        return w;
      }
      case 18: {
        w = {one<std::string>({"EXPIREAT", "PEXPIREAT"}), key()};
        w.push_back(absolute(w[0] == "PEXPIREAT"));
        for (auto& o : expire_options()) w.push_back(o);
        return w;
      }
      case 19:
      case 20:
        return {one<std::string>({"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), key()};
      case 21:
        // (Not in a transaction: EXEC's array would carry them in each server's order.)
        if (in_multi_ < 0 && pick(3) == 0) return {"KEYS", pattern()};
        if (in_multi_ < 0 && pick(3) == 0) {
          w = {"SCAN", one<std::string>({"0", "0", "0", "x", "-", "", "-0", "+0", " 0"})};
          const int n = pick(4);
          for (int i = 0; i < n; ++i) {
            switch (pick(4)) {
              case 0:
                w.insert(w.end(), {"MATCH", pattern()});
                break;
              case 1:
                w.insert(w.end(), {"COUNT", one<std::string>({"1", "10", "0", "x"})});
                break;
              case 2:
                w.insert(w.end(), {"TYPE", one<std::string>({"string", "STRING", "hash"})});
                break;
              default:
                w.push_back("BOGUS");
                break;
            }
          }
          return w;
        }
        return {"PERSIST", key()};
      case 24:
      case 25: {
        w = {one<std::string>({"HSET", "HSET", "HMSET"}), key()};
        const int n = 1 + pick(3);
        for (int i = 0; i < n; ++i) w.insert(w.end(), {field(), short_value()});
        return w;
      }
      case 26:
        return {one<std::string>({"HGET", "HEXISTS", "HSETNX"}), key(), field(), short_value()};
      case 27:
        if (pick(2) == 0) return {"HINCRBY", key(), field(), increment()};
        return {"HINCRBYFLOAT", key(), field(), float_increment()};
      case 28: {
        w = {one<std::string>({"HMGET", "HDEL"}), key()};
        const int n = 1 + pick(3);
        for (int i = 0; i < n; ++i) w.push_back(field());
        return w;
      }
      case 29:
        return {one<std::string>({"HGETALL", "HLEN"}), key()};
      case 30:
      case 31: {
        w = {"ZADD", key()};
        const int o = pick(3) == 0 ? pick(3) : 0;
        for (int i = 0; i < o; ++i)
          w.push_back(one<std::string>({"NX", "XX", "GT", "LT", "CH", "INCR", "ch"}));
        const int n = 1 + pick(3);
        for (int i = 0; i < n; ++i) w.insert(w.end(), {score(), member()});
        return w;
      }
      case 32:
        switch (pick(4)) {
          case 0:
            return {"ZREM", key(), member(), member()};
          case 1:
            return {"ZCARD", key()};
          case 2:
            return {"ZSCORE", key(), member()};
          default:
            return {"ZPOPMIN", key(), one<std::string>({"1", "2", "0", "-1", "x", "5"})};
        }
      case 33:
        return {one<std::string>({"ZCOUNT", "ZREMRANGEBYSCORE"}), key(), bound(), bound()};
      case 34: {
        w = {one<std::string>({"ZRANGE", "ZRANGE", "ZRANGEBYSCORE"}), key()};
        const bool by_score = w[0] == "ZRANGEBYSCORE" || pick(2) == 0;
        if (by_score) {
          w.insert(w.end(), {bound(), bound()});
        } else {
          w.insert(w.end(), {rank(), rank()});
        }
        if (w[0] == "ZRANGE" && by_score) w.push_back("BYSCORE");
        const int n = pick(3);
        for (int i = 0; i < n; ++i) {
          switch (pick(4)) {
            case 0:
              w.push_back("WITHSCORES");
              break;
            case 1:
              w.insert(w.end(), {"LIMIT", one<std::string>({"0", "1", "-1", "5"}),
                                 one<std::string>({"1", "2", "-1", "0"})});
              break;
            case 2:
              w.push_back("REV");
              break;
            default:
              w.push_back(one<std::string>({"BYSCORE", "bogus"}));
              break;
          }
        }
        return w;
      }
      case 35:
        return {"ZREMRANGEBYRANK", key(), rank(), rank()};
      case 36: {
        w = {one<std::string>({"LPUSH", "RPUSH"}), key()};
        const int n = 1 + pick(3);
        for (int i = 0; i < n; ++i) w.push_back(short_value());
        return w;
      }
      case 37:
        if (pick(2) == 0) return {one<std::string>({"LPOP", "RPOP", "LLEN"}), key()};
        return {one<std::string>({"LPOP", "RPOP"}), key(),
                one<std::string>({"1", "2", "0", "-1", "x", "10"})};
      case 38:
        if (pick(3) == 0) return {"LINDEX", key(), rank()};
        return {one<std::string>({"LRANGE", "LRANGE", "LTRIM"}), key(), rank(), rank()};
      case 39:
        switch (pick(4)) {
          case 0:
            return {"APPEND", key(), any_value()};
          case 1:
            return {"STRLEN", key()};
          case 2:
            return {"GETSET", key(), any_value()};
          default:
            return {one<std::string>({"GETRANGE", "SUBSTR", "getrange"}), key(), rank(), rank()};
        }
      case 40:
        return {
            "SETRANGE", key(),
            one<std::string>({"0", "1", "3", "-1", "x", "100", "4096", "", "9223372036854775807"}),
            one<std::string>({"", "ab", "xyz", "0", "12"})};
      case 41:
        if (pick(3) == 0) {
          w = {"HSCAN", key(), one<std::string>({"0", "0", "0", "x", "17", "-1", "", "+"})};
          for (int n = pick(3); n > 0; --n) {
            switch (pick(4)) {
              case 0:
                w.insert(w.end(), {"MATCH", one<std::string>({"f*", "*", "t?", "[ft]*", "F*"})});
                break;
              case 1:
                w.insert(w.end(), {"COUNT", one<std::string>({"1", "10", "0", "-1", "x"})});
                break;
              case 2:
                w.push_back(one<std::string>({"MATCH", "TYPE", "count"}));
                break;
              default:
                w.insert(w.end(), {"TYPE", "hash"});
                break;
            }
          }
          return w;
        }
        if (pick(2) == 0) return {one<std::string>({"HKEYS", "HVALS"}), key()};
        return {"HSTRLEN", key(), field()};
      case 42: {
        w = {one<std::string>({"LPUSHX", "RPUSHX"}), key()};
        const int n = 1 + pick(2);
        for (int i = 0; i < n; ++i) w.push_back(short_value());
        return w;
      }
      case 43:
        switch (pick(3)) {
          case 0:
            return {"LSET", key(), rank(), short_value()};
          case 1:
            return {"LINSERT", key(), one<std::string>({"BEFORE", "after", "AFTER", "middle"}),
                    short_value(), short_value()};
          default:
            return {"LREM", key(),
                    one<std::string>({"0", "1", "-1", "2", "-2", "x", "-9223372036854775808"}),
                    short_value()};
        }
      case 44: {
        w = {"LPOS", key(), short_value()};
        for (int n = pick(3); n > 0; --n) {
          w.push_back(one<std::string>({"RANK", "COUNT", "MAXLEN", "rank", "BOGUS"}));
          w.push_back(
              one<std::string>({"1", "-1", "2", "-2", "0", "x", "3", "-9223372036854775808"}));
        }
        return w;
      }
      case 45:
        switch (pick(4)) {
          case 0:
            return {"ZINCRBY", key(), float_increment(), member()};
          case 1:
            return {one<std::string>({"ZRANK", "ZREVRANK"}), key(), member()};
          case 2:
            return {"ZMSCORE", key(), member(), member()};
          default:
            return {"ZPOPMAX", key(), one<std::string>({"1", "2", "0", "-1", "x", "5"})};
        }
      case 46: {
        if (pick(2) == 0) {
          w = {"ZREVRANGE", key(), rank(), rank()};
        } else {
          w = {"ZREVRANGEBYSCORE", key(), bound(), bound()};
        }
        for (int n = pick(3); n > 0; --n) {
          switch (pick(4)) {
            case 0:
              w.push_back("WITHSCORES");
              break;
            case 1:
              w.insert(w.end(), {"LIMIT", rank(), rank()});
              break;
            case 2:
              w.push_back(one<std::string>({"REV", "BYSCORE", "BYLEX"}));
              break;
            default:
              w.push_back("withscores");
              break;
          }
        }
        return w;
      }
      case 47: {
        auto lex = [&] {
          return one<std::string>(
              {"-", "+", "[m1", "(m1", "[m2", "(req:1", "[", "(", "[req:", "m1", "", "+x", "[M"});
        };
        switch (pick(4)) {
          case 0:
            return {"ZLEXCOUNT", key(), lex(), lex()};
          case 1:
            return {"ZREMRANGEBYLEX", key(), lex(), lex()};
          default: {
            w = {one<std::string>({"ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZRANGE"}), key(), lex(),
                 lex()};
            if (w[0] == "ZRANGE") w.push_back(one<std::string>({"BYLEX", "BYLEX", "REV"}));
            for (int n = pick(3); n > 0; --n) {
              if (pick(3) == 0) {
                w.push_back(one<std::string>({"WITHSCORES", "REV", "BYLEX"}));
              } else {
                w.insert(w.end(), {"LIMIT", rank(), rank()});
              }
            }
            return w;
          }
        }
      }
      case 48:
      case 49: {  // sets: members that are integers and members that are not (intset or not)
        w = {one<std::string>({"SADD", "SADD", "SREM", "sadd"}), key()};
        for (int n = 1 + pick(3); n > 0; --n) w.push_back(short_value());
        return w;
      }
      case 50:
        switch (pick(7)) {
          case 0:
            return {"SCARD", key()};
          case 1:
            return {"SISMEMBER", key(), short_value()};
          case 2:
            return {"SMISMEMBER", key(), short_value(), short_value()};
          case 3:
            return {"OBJECT", "ENCODING", key()};
          case 4:
            // (Redis pages a set held as a table: followed to its end, outside transactions)
            w = {"SSCAN", key(), one<std::string>({"0", "0", "x"})};
            if (pick(2) == 0) w.insert(w.end(), {"MATCH", one<std::string>({"1*", "*", "a?c"})});
            return w;
          case 5:  // (counts that take every member, or none: the same answer from both)
            return {"SPOP", key(), one<std::string>({"100", "0", "-1", "x", "1 "})};
          default:
            return {"SRANDMEMBER", key(),
                    one<std::string>({"100", "0", "x", "-9223372036854775808"})};
        }
      case 51: {  // set algebra over keys on several shards
        w = {one<std::string>({"SINTER", "SUNION", "SDIFF", "SINTERSTORE", "SUNIONSTORE",
                               "SDIFFSTORE", "SMEMBERS", "SINTERCARD", "SMOVE"})};
        if (w[0] == "SINTERCARD") {
          w.push_back(one<std::string>({"1", "2", "3", "0", "x", "-1"}));
          for (int n = 2; n > 0; --n) w.push_back(key());
          if (pick(2) == 0) w.insert(w.end(), {"LIMIT", one<std::string>({"1", "0", "-1", "x"})});
          return w;
        }
        if (w[0] == "SMOVE") return {"SMOVE", key(), key(), short_value()};
        for (int n = 1 + pick(3); n > 0; --n) w.push_back(key());
        return w;
      }
      case 52:  // keys moved and copied whole, of any type, with their TTLs
        switch (pick(6)) {
          case 0:
            return {one<std::string>({"RENAME", "RENAMENX"}), key(), key()};
          case 1: {
            w = {"COPY", key(), key()};
            if (pick(2) == 0) w.push_back(one<std::string>({"REPLACE", "replace", "BOGUS"}));
            if (pick(4) == 0)
              w.insert(w.end(), {"DB", one<std::string>({"0", "16", "x"})});  // (one database)
            return w;
          }
          case 2:
            return {"RPOPLPUSH", key(), key()};
          case 3:
            return {"LMOVE", key(), key(), one<std::string>({"LEFT", "right", "up"}),
                    one<std::string>({"RIGHT", "left"})};
          default:
            w = {"MSETNX"};
            for (int n = 1 + pick(2); n > 0; --n) w.insert(w.end(), {key(), short_value()});
            return w;
        }
      case 53: {  // sorted-set algebra (sets count as sorted sets scored 1)
        w = {one<std::string>({"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZUNION", "ZINTER",
                               "ZDIFF", "ZINTERCARD"})};
        if (w[0].size() > 6 && w[0].substr(w[0].size() - 5) == "STORE") w.push_back(key());
        const int n = 1 + pick(3);
        w.push_back(pick(12) == 0 ? one<std::string>({"0", "x", "9"}) : std::to_string(n));
        for (int i = 0; i < n; ++i) w.push_back(key());
        for (int o = pick(3); o > 0; --o) {
          switch (pick(4)) {
            case 0:
              w.push_back("WEIGHTS");
              for (int i = 0; i < n; ++i)
                w.push_back(one<std::string>({"1", "2", "-1", "0.5", "x"}));
              break;
            case 1:
              w.insert(w.end(), {"AGGREGATE", one<std::string>({"SUM", "min", "MAX", "avg"})});
              break;
            case 2:
              w.push_back("WITHSCORES");
              break;
            default:
              w.insert(w.end(), {"LIMIT", one<std::string>({"1", "0", "-1"})});
              break;
          }
        }
        return w;
      }
      case 54:
        switch (pick(5)) {
          case 0:  // (counts that take every field, or none)
            w = {one<std::string>({"HRANDFIELD", "ZRANDMEMBER"}), key(),
                 one<std::string>({"100", "0", "x", "-9223372036854775808"})};
            if (pick(2) == 0) w.push_back(one<std::string>({"WITHVALUES", "WITHSCORES", "x"}));
            return w;
          case 1:
            w = {"ZSCAN", key(), one<std::string>({"0", "0", "x"})};
            if (pick(2) == 0) w.insert(w.end(), {"MATCH", one<std::string>({"m*", "*", "r?q*"})});
            return w;
          case 2:
            w = {"ZRANGESTORE", key(), key(), rank(), rank()};
            if (pick(2) == 0) w.push_back(one<std::string>({"REV", "BYSCORE", "WITHSCORES"}));
            return w;
          default:
            w = {one<std::string>({"ZMPOP", "LMPOP"}), one<std::string>({"1", "2", "0", "x"}),
                 key(), key(), one<std::string>({"MIN", "MAX", "LEFT", "RIGHT", "up"})};
            if (pick(2) == 0) w.insert(w.end(), {"COUNT", one<std::string>({"1", "2", "0", "x"})});
            return w;
        }
      case 55:  // blocking pops that find elements, or give up at once (a 10 ms timeout)
        switch (pick(5)) {
          case 0:
            return {one<std::string>({"BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX"}), key(), key(),
                    one<std::string>({"0.01", "0.01", "-1", "x"})};
          case 1:
            return {"BRPOPLPUSH", key(), key(), "0.01"};
          case 2:
            return {"BLMOVE", key(), key(), "LEFT", "RIGHT", "0.01"};
          default:
            w = {one<std::string>({"BLMPOP", "BZMPOP"}),           "0.01", "2", key(), key(),
                 one<std::string>({"LEFT", "RIGHT", "MIN", "MAX"})};
            if (pick(2) == 0) w.insert(w.end(), {"COUNT", one<std::string>({"2", "0"})});
            return w;
        }
      default:
        return {"INCRBY", key(), one<std::string>({"3", "-3", "1000000"})};
    }
  }

  std::mt19937_64 rng_;
  std::string prefix_;
  std::set<int64_t> used_;
  int in_multi_ = -1;  // commands left before EXEC/DISCARD; -1: not in a transaction
};

// The keys of a KEYS reply (or of every SCAN page), sorted; the reply itself if it is not
// an array (an error).
std::vector<std::string> sorted_keys(const std::string& reply, size_t from = 0) {
  std::vector<std::string> keys;
  if (reply.compare(from, 1, "*") != 0) return {reply};
  size_t pos = reply.find("\r\n", from) + 2;
  const long n = std::stol(reply.substr(from + 1));
  for (long i = 0; i < n; ++i) {
    const size_t eol = reply.find("\r\n", pos);
    const size_t len = std::stoul(reply.substr(pos + 1, eol - pos - 1));
    keys.push_back(reply.substr(eol + 2, len));
    pos = eol + 2 + len + 2;
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// SCAN followed to its end: the keys of every page, sorted and without repeats.
// (`at`: where the cursor is: SCAN's second word, SSCAN's third)
std::vector<std::string> scan_all(Client& c, std::vector<std::string> words, size_t at = 1) {
  std::vector<std::string> all;
  for (int page = 0; page < 10000; ++page) {
    if (!c.send(encode(words))) return {"(connection failed)"};
    const std::string r = read_value(c);
    if (r.rfind("*2\r\n$", 0) != 0) return {r};
    const size_t eol = r.find("\r\n", 4);
    const size_t len = std::stoul(r.substr(5, eol - 5));
    const std::string cursor = r.substr(eol + 2, len);
    for (auto& k : sorted_keys(r, eol + 2 + len + 2)) all.push_back(k);
    if (cursor == "0") break;
    words[at] = cursor;
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// How far two replies that tell the time may differ (0: not such a reply).
int64_t time_slack(const std::string& cmd) {
  if (cmd == "TTL" || cmd == "EXPIRETIME") return 1;
  if (cmd == "PTTL" || cmd == "PEXPIRETIME") return 250;
  return 0;
}

// One whole RESP value of `s` at `pos`, as its bytes; advances `pos`.
std::string value_at(const std::string& s, size_t& pos) {
  const size_t start = pos;
  const size_t eol = s.find("\r\n", pos);
  if (eol == std::string::npos) return "";
  const std::string line = s.substr(pos, eol - pos);
  pos = eol + 2;
  if (line[0] == '$' && line != "$-1") pos += std::stoul(line.substr(1)) + 2;
  if (line[0] == '*' && line != "*-1") {
    const long n = std::stol(line.substr(1));
    for (long i = 0; i < n; ++i) value_at(s, pos);
  }
  return s.substr(start, pos - start);
}

// HGETALL's field-value pairs, sorted (a Redis hash that outgrew its small encoding lists
// them in its table's order; a node in the order they were set).
std::vector<std::pair<std::string, std::string>> sorted_pairs(const std::string& reply) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::string> flat = [&] {
    std::vector<std::string> v;
    if (reply.rfind("*", 0) != 0) return v;
    size_t pos = reply.find("\r\n") + 2;
    const long n = std::stol(reply.substr(1));
    for (long i = 0; i < n; ++i) v.push_back(value_at(reply, pos));
    return v;
  }();
  for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
  std::sort(out.begin(), out.end());
  return out;
}

// An array's elements, sorted (HKEYS, HVALS: see sorted_pairs).
std::vector<std::string> sorted_items(const std::string& reply) {
  std::vector<std::string> v;
  if (reply.rfind("*", 0) != 0) return v;
  size_t pos = reply.find("\r\n") + 2;
  const long n = std::stol(reply.substr(1));
  for (long i = 0; i < n; ++i) v.push_back(value_at(reply, pos));
  std::sort(v.begin(), v.end());
  return v;
}

bool same_reply(const std::string& cmd, const std::string& fg, const std::string& redis) {
  if (fg == redis) return true;
  // A Redis hash that outgrew its small encoding lists its fields in its table's order.
  const bool arrays = fg.size() == redis.size() && fg.rfind("*", 0) == 0;
  if (cmd == "HGETALL" && arrays) return sorted_pairs(fg) == sorted_pairs(redis);
  if ((cmd == "HKEYS" || cmd == "HVALS") && arrays) return sorted_items(fg) == sorted_items(redis);
  // A set held as a hash table lists its members in the table's order.
  const bool unordered = cmd == "SMEMBERS" || cmd == "SINTER" || cmd == "SUNION" ||
                         cmd == "SDIFF" || cmd == "SPOP" || cmd == "SRANDMEMBER" ||
                         cmd == "HRANDFIELD";
  if (unordered && arrays) return sorted_items(fg) == sorted_items(redis);
  if (cmd == "SSCAN" && arrays && fg.rfind("*2\r\n", 0) == 0) {
    size_t a = 4, b = 4;
    if (value_at(fg, a) != value_at(redis, b)) return false;  // the cursor
    return sorted_items(value_at(fg, a)) == sorted_items(value_at(redis, b));
  }
  if (cmd == "HSCAN" && arrays && fg.rfind("*2\r\n", 0) == 0) {
    size_t a = 4, b = 4;
    if (value_at(fg, a) != value_at(redis, b)) return false;  // the cursor
    return sorted_pairs(value_at(fg, a)) == sorted_pairs(value_at(redis, b));
  }
  const int64_t slack = time_slack(cmd);
  if (slack == 0 || fg.empty() || redis.empty() || fg[0] != ':' || redis[0] != ':') return false;
  const int64_t a = std::stoll(fg.substr(1)), b = std::stoll(redis.substr(1));
  return a >= 0 && b >= 0 && std::llabs(a - b) <= slack;
}

// EXEC's replies, element by element, each as its queued command's reply.
bool same_exec(const std::vector<std::string>& queued, const std::string& fg,
               const std::string& redis) {
  if (fg == redis) return true;
  if (fg.empty() || fg[0] != '*' || redis.empty() || redis[0] != '*') return false;
  size_t a = fg.find("\r\n") + 2, b = redis.find("\r\n") + 2;
  if (fg.substr(0, a) != redis.substr(0, b)) return false;
  for (const std::string& cmd : queued) {
    if (!same_reply(cmd, value_at(fg, a), value_at(redis, b))) return false;
  }
  return a == fg.size() && b == redis.size();
}

void run_seed(uint64_t seed, int commands, Client& fg, Client& redis) {
  Generator gen(seed, "diff:" + std::to_string(seed) + ":");
  std::vector<std::string> queued, executed;  // the transaction's commands, upper case
  std::deque<std::string> recent;             // the commands before it, for the failure
  auto before = [&] {
    std::string t = "\n  after:";
    for (const auto& c : recent) t += "\n    " + c;
    return t;
  };
  for (int i = 0; i < commands; ++i) {
    const std::vector<std::string> w = gen.next();
    if (recent.size() == 24) recent.pop_front();
    recent.push_back(printable(w));
    executed = queued;
    if (queued.empty() && w[0] == "SSCAN") {
      const auto a = scan_all(fg, w, 2), b = scan_all(redis, w, 2);
      ASSERT_EQ(a, b) << "seed " << seed << ", command " << i << ": " << printable(w) << before();
      continue;
    }
    if (queued.empty() && (w[0] == "SCAN" || w[0] == "KEYS")) {
      // Redis pages through its table; a node answers every match at once: same keys.
      const auto a = w[0] == "SCAN" ? scan_all(fg, w) : sorted_keys(ask(fg, w));
      const auto b = w[0] == "SCAN" ? scan_all(redis, w) : sorted_keys(ask(redis, w));
      ASSERT_EQ(a, b) << "seed " << seed << ", command " << i << ": " << printable(w) << before();
      continue;
    }
    ASSERT_TRUE(fg.send(encode(w)));
    ASSERT_TRUE(redis.send(encode(w)));
    const std::string a = read_value(fg), b = read_value(redis);
    ASSERT_FALSE(a.empty()) << "Floodgate closed the connection after " << printable(w);
    std::string cmd = w[0];
    for (char& ch : cmd) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const bool exec = cmd == "EXEC" && !queued.empty();
    if (b == "+QUEUED\r\n") queued.push_back(cmd);
    if (cmd == "EXEC" || cmd == "DISCARD") queued.clear();
    ASSERT_TRUE(exec ? same_exec(executed, a, b) : same_reply(cmd, a, b))
        << "seed " << seed << ", command " << i << ": " << printable(w) << "\n  floodgate: " << a
        << "\n  redis:     " << b << before();
  }
}

TEST(DataDiff, SeededSequencesAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});  // (keys apart on shards: multi-shard steps)
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(fg.connected());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  std::vector<uint64_t> seeds = {1, 2, 3, 20261123, 424242};
  int commands = 3000;
  if (const char* s = std::getenv("FG_DIFF_SEED")) seeds = {std::strtoull(s, nullptr, 10)};
  if (const char* n = std::getenv("FG_DIFF_COMMANDS")) commands = std::atoi(n);
  for (uint64_t seed : seeds) {
    run_seed(seed, commands, fg, rc);
    if (HasFatalFailure()) return;
  }
}

// Keyspace notifications against the real thing: the same seeded sequences as above (every
// data type, transactions, WATCH, flushes) to redis-server and to a node, each with a
// subscriber to every keyspace and keyevent channel, and every message compared in order.
TEST(NotifyDiff, SeededSequencesPublishAsRedisServerDoes) {
  std::vector<uint64_t> seeds = {1, 2, 20261207};
  int commands = 1500;
  if (const char* s = std::getenv("FG_DIFF_SEED")) seeds = {std::strtoull(s, nullptr, 10)};
  if (const char* n = std::getenv("FG_DIFF_COMMANDS")) commands = std::atoi(n);
  for (uint64_t seed : seeds) {
    Generator gen(seed, "notify:" + std::to_string(seed) + ":");
    expect_same_notifications([&] { return gen.next(); }, commands, "seed " + std::to_string(seed));
    if (HasFatalFailure()) return;
  }
}

// Glob patterns, as redis-server reads them: one key at a time (so no order to sort out),
// seeded patterns and names over the bytes that mean something to a glob (classes, ranges,
// escapes, stars), through KEYS and SSCAN's MATCH — an empty name included, which "*" does
// not match in Redis.
TEST(GlobDiff, PatternsMatchAsRedisServerMatchesThem) {
  RedisServer redis;
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  std::mt19937_64 rng(20261128);
  const std::string pattern_bytes = "ab*?[]^-\\*a";
  const std::string name_bytes = "abA-]^[*\\";
  auto draw = [&](const std::string& from, size_t max) {
    std::string out(rng() % (max + 1), ' ');
    for (char& c : out) c = from[rng() % from.size()];
    return out;
  };
  for (int i = 0; i < 1500; ++i) {
    const std::string name = i % 50 == 0 ? "" : draw(name_bytes, 7);
    const std::string p = i % 7 == 0 ? "*" : draw(pattern_bytes, 8);
    const std::vector<std::vector<std::string>> steps = {
        {"FLUSHALL"},
        {"SET", name, "1"},
        {"KEYS", p},
        {"SADD", "s", name},
        {"SSCAN", "s", "0", "MATCH", p, "COUNT", "10"}};
    for (const auto& w : steps) {
      ASSERT_EQ(ask(fg, w), ask(rc, w)) << "pattern '" << p << "' name '" << name << "'";
    }
  }
}

// A value grown a piece at a time (APPEND, SETRANGE) is held to proto-max-bulk-len, as
// redis-server holds it: both at 1mb, the same replies at and past the edge.
TEST(DataDiff, GrowingAStringStopsAtProtoMaxBulkLenAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--proto-max-bulk-len", "1048576"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  ASSERT_EQ(ask(rc, {"CONFIG", "SET", "proto-max-bulk-len", "1mb"}), "+OK\r\n");
  const std::vector<std::vector<std::string>> steps = {
      {"SETRANGE", "big", "1048576", "x"},
      {"SETRANGE", "big", "1048575", "x"},
      {"STRLEN", "big"},
      {"GETRANGE", "big", "-3", "-1"},
      {"APPEND", "big", "y"},
      {"SETRANGE", "big", "1048575", "yz"},
      {"SETRANGE", "big", "9223372036854775807", "z"},
      {"SETRANGE", "big", "5", ""},
      {"STRLEN", "big"},
      {"APPEND", "small", std::string(1000, 'a')},
      {"SETRANGE", "small", "1048000", "b"},
      {"APPEND", "small", std::string(1000, 'c')},
      {"STRLEN", "small"},
  };
  for (const auto& w : steps) {
    EXPECT_EQ(ask(fg, w), ask(rc, w)) << w[0] << " " << w[1] << " " << w[2].substr(0, 20);
  }
}

// With proto-max-bulk-len raised past max-query-bytes, a value built a piece at a time is
// still held to what one command could send: one small SETRANGE cannot make a node
// allocate gigabytes.
TEST(DataDiff, ABuiltStringStopsAtMaxQueryBytesWhenThatIsSmaller) {
  NodeProcess node({"--proto-max-bulk-len", "4294967296", "--max-query-bytes", "2000000"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port());
  EXPECT_EQ(ask(fg, {"SETRANGE", "huge", "4000000000", "x"}),
            "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
  EXPECT_EQ(ask(fg, {"SETRANGE", "huge", "1999999", "x"}), ":2000000\r\n");
  EXPECT_EQ(ask(fg, {"APPEND", "huge", "y"}),
            "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
  EXPECT_EQ(ask(fg, {"STRLEN", "huge"}), ":2000000\r\n");
}

// WATCH against another connection's writes, side by side: two connections to each server
// run the same script, and every reply must match.
TEST(DataDiff, WatchAgainstAnotherConnectionAnswersAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});
  ASSERT_TRUE(node.alive());
  Client f1(node.port()), f2(node.port()), r1(redis.port()), r2(redis.port());
  ASSERT_TRUE(r1.connected() && r2.connected()) << "redis-server did not start";
  struct Step {
    int who;  // 1: the transaction's connection, 2: the other one; 0: wait 150 ms
    std::vector<std::string> words;
  };
  const std::vector<Step> script = {
      {1, {"SET", "w:a", "1"}},
      {1, {"WATCH", "w:a", "w:b"}},
      {2, {"GET", "w:a"}},
      {2, {"INCR", "w:c"}},
      {1, {"MULTI"}},
      {1, {"INCR", "w:a"}},
      {1, {"INCR", "w:b"}},
      {1, {"EXEC"}},  // (nothing watched changed: it runs)
      {1, {"WATCH", "w:a"}},
      {2, {"SET", "w:a", "7"}},
      {1, {"MULTI"}},
      {1, {"INCR", "w:a"}},
      {1, {"EXEC"}},  // (changed by the other: null)
      {1, {"GET", "w:a"}},
      {1, {"WATCH", "w:new"}},
      {2, {"SET", "w:new", "x"}},
      {1, {"MULTI"}},
      {1, {"GET", "w:new"}},
      {1, {"EXEC"}},
      {1, {"WATCH", "w:a"}},
      {1, {"MULTI"}},
      {2, {"DEL", "w:a"}},
      {1, {"SET", "w:b", "z"}},
      {1, {"EXEC"}},  // (changed while queueing)
      {1, {"WATCH", "w:b"}},
      {1, {"UNWATCH"}},
      {2, {"SET", "w:b", "q"}},
      {1, {"MULTI"}},
      {1, {"GET", "w:b"}},
      {1, {"EXEC"}},
      {2, {"SET", "w:t", "1", "PX", "50"}},
      {1, {"WATCH", "w:t"}},
      {0, {}},
      {1, {"MULTI"}},
      {1, {"GET", "w:t"}},
      {1, {"EXEC"}},  // (expired since WATCH: null)
      {2, {"SET", "w:t", "1", "PX", "50"}},
      {0, {}},
      {1, {"WATCH", "w:t"}},
      {1, {"MULTI"}},
      {1, {"GET", "w:t"}},
      {1, {"EXEC"}},  // (expired before WATCH: runs)
      {1, {"WATCH", "w:a", "w:b"}},
      {2, {"FLUSHALL"}},
      {1, {"MULTI"}},
      {1, {"DBSIZE"}},
      {1, {"EXEC"}},
      {1, {"WATCH", "w:a"}},
      {2, {"FLUSHDB"}},  // (w:a is gone already: no change)
      {1, {"MULTI"}},
      {1, {"INCR", "w:a"}},
      {1, {"EXEC"}},
      {1, {"WATCH", "w:a"}},
      {1, {"INCR", "w:a"}},  // (its own write counts too)
      {1, {"MULTI"}},
      {1, {"INCR", "w:a"}},
      {1, {"EXEC"}},
      {1, {"WATCH", "w:a"}},
      {1, {"MULTI"}},
      {1, {"DISCARD"}},
      {2, {"INCR", "w:a"}},
      {1, {"MULTI"}},
      {1, {"INCR", "w:a"}},
      {1, {"EXEC"}},  // (DISCARD let go of the watch: runs)
      {1, {"MULTI"}},
      {1, {"SHUTDOWN"}},  // (no_multi: refused while queueing, and the transaction goes)
      {1, {"SAVE"}},
      {1, {"INCR", "w:a"}},
      {1, {"EXEC"}},
      {1, {"GET", "w:a"}},
  };
  std::deque<std::string> recent;
  for (size_t i = 0; i < script.size(); ++i) {
    const Step& st = script[i];
    if (st.who == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      continue;
    }
    recent.push_back(std::to_string(st.who) + ": " + printable(st.words));
    Client& f = st.who == 1 ? f1 : f2;
    Client& r = st.who == 1 ? r1 : r2;
    const std::string a = ask(f, st.words), b = ask(r, st.words);
    std::string trail;
    for (const auto& c : recent) trail += "\n    " + c;
    ASSERT_EQ(a, b) << "step " << i << trail;
  }
}

// Floodgate's own limit (Redis has none): a connection watches at most kMaxWatchedKeys keys;
// past it WATCH says why and watches nothing more, and UNWATCH makes room again.
TEST(Transactions, AConnectionWatchesABoundedNumberOfKeys) {
  NodeProcess node({"--shards", "4"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  std::vector<std::string> watch = {"WATCH"};
  for (size_t i = 0; i < err::kMaxWatchedKeys; ++i) watch.push_back("w:" + std::to_string(i));
  EXPECT_EQ(ask(c, watch), "+OK\r\n");
  EXPECT_EQ(ask(c, {"WATCH", "w:0"}), "+OK\r\n");  // (already watched: nothing new)
  EXPECT_EQ(ask(c, {"WATCH", "one-more"}), "-" + err::too_many_watched() + "\r\n");
  EXPECT_EQ(ask(c, {"UNWATCH"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"WATCH", "one-more"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"MULTI"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"INCR", "one-more"}), "+QUEUED\r\n");
  EXPECT_EQ(ask(c, {"EXEC"}), "*1\r\n:1\r\n");
}

}  // namespace
}  // namespace fg::testing

namespace fg::testing {
namespace {

// Scripts against the real thing: the same EVAL, EVALSHA and SCRIPT commands to both, every
// reply the same bytes — conversions both ways, errors with their script and line, the
// limiter scripts people run (INCR then EXPIRE, the token bucket in a hash, the sliding log
// in a sorted set), keys the script did not declare, the sandbox's texts.
TEST(ScriptDiff, ScriptsAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4"});  // (undeclared keys on other shards: one step)
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  const std::string incr_expire =
      "local c = redis.call('INCR', KEYS[1]) "
      "if c == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return c";
  const std::string bucket =  // tokens and a timestamp in a hash, refilled on each call
      "local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts') "
      "local cap, rate, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) "
      "local tokens = tonumber(b[1]) or cap local ts = tonumber(b[2]) or now "
      "tokens = math.min(cap, tokens + (now - ts) * rate) local ok = 0 "
      "if tokens >= 1 then tokens = tokens - 1 ok = 1 end "
      "redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now) "
      "redis.call('PEXPIRE', KEYS[1], 60000) return {ok, tostring(tokens)}";
  const std::string log =  // a sliding log: trim, count, add
      "redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, tonumber(ARGV[1]) - tonumber(ARGV[2])) "
      "local n = redis.call('ZCARD', KEYS[1]) if n >= tonumber(ARGV[3]) then return 0 end "
      "local id = redis.call('INCR', KEYS[1] .. ':seq') "
      "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1] .. '-' .. id) "
      "redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1";
  const std::vector<std::vector<std::string>> cmds = {
      {"EVAL", "return 1", "0"},
      {"EVAL", "return redis.call('randomkey')", "0"},  // (none yet: nil)
      // Errors and their handlers, bounded here by the budget, answer as redis-server's when
      // they end: a raised table read through its metamethods, xpcall's handler (results,
      // its own errors until it answers, "error in error handling"), sorting and repeating.
      {"EVAL", "error(setmetatable({}, {__index = function(t, k) return 'ERR via ' .. k end}))",
       "0"},
      {"EVAL", "error({err = 'MYERR raised', source = 'elsewhere', line = 9})", "0"},
      {"EVAL", "return {xpcall(function() error('x') end, function(e) error('y') end)}", "0"},
      {"EVAL", "return {xpcall(function() error('x') end, function(e) return 'h:' .. e end)}", "0"},
      {"EVAL",
       "local n = 0 return {xpcall(function() error('x') end, function(e) n = n + 1 "
       "if n < 3 then error('again') end return n .. e end)}",
       "0"},
      {"EVAL", "return {xpcall(function() return 1, 2, 3 end, error)}", "0"},
      {"EVAL", "return {pcall(xpcall, function() end)}", "0"},
      {"EVAL", "return {xpcall(function() error({err = 'T'}) end, function(e) return e end)}", "0"},
      {"EVAL", "local t = {5, 3, 9, 1} table.sort(t) return t", "0"},
      {"EVAL", "local t = {5, 3, 9, 1} table.sort(t, function(a, b) return a > b end) return t",
       "0"},
      {"EVAL", "return {pcall(table.sort, {1, 'a', 2})}", "0"},
      {"EVAL", "return {pcall(table.sort, {3, 2, 1, 5, 4}, function(a, b) return true end)}", "0"},
      {"EVAL", "return {pcall(table.sort, {1, 2}, 3)}", "0"},
      {"EVAL", "return {string.rep('ab', 3), string.rep('x', 0), string.rep('x', -2)}", "0"},
      {"EVAL", "return {pcall(string.rep)}", "0"},
      {"EVAL", "return {pcall(string.rep, 'x', 'y')}", "0"},
      {"EVAL", "return cjson.encode({1, 'a\\\"/\\n', {x = true}})", "0"},
      {"EVAL", "return {pcall(cjson.decode, '[1, 2')}", "0"},
      // Redis 7's shebang line: its errors, its flags (no-writes makes a script read-only;
      // *_RO refuses a script that may write), and line numbers that still count it.
      {"EVAL", "#!lua\nreturn 1", "0"},
      {"EVAL", "#!not-lua\nreturn 1", "0"},
      {"EVAL", "#!lua badger=data\nreturn 1", "0"},
      {"EVAL", "#!lua flags=allow-oom,what?\nreturn 1", "0"},
      {"EVAL", "#!lua flags=no-writes,\nreturn 1", "0"},
      {"EVAL", "#!lua flags=\nreturn 1", "0"},
      {"EVAL", "#!lua flags=no-writes,allow-stale\nreturn redis.call('set', KEYS[1], 1)", "1",
       "sb:x"},
      {"EVAL_RO", "#!lua\nreturn 1", "0"},
      {"EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "sb:x"},
      {"EVAL", "#!lua", "0"},
      {"EVAL", "#!lua\n\nerror('x')", "0"},
      {"EVAL", "#!  \nreturn 1", "0"},
      {"SCRIPT", "LOAD", "#!lua flags=bad\nreturn 1"},
      {"SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 3"},
      {"EVALSHA_RO", "50ad2340de91fe7294d5c746ad721ff185c16fc5", "0"},
      {"EVAL", "return {1, 'a', false, {ok='x'}, 3.9, true, nil, 4}", "0"},
      {"EVAL", "return {err='bad thing'}", "0"},
      {"EVAL", "return redis.error_reply('My Error')", "0"},
      {"EVAL", "return redis.error_reply('oops')", "0"},
      {"EVAL", "return redis.status_reply('FINE')", "0"},
      {"EVAL", "return redis.sha1hex('abc')", "0"},
      {"EVAL", "return cjson.encode({1, 2, 'x'})", "0"},
      {"EVAL", "return cjson.decode('[1,2,3]')[2]", "0"},
      {"EVAL", "return bit.bxor(12, 10)", "0"},
      {"EVAL", "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", "2", "k{1}", "k{2}", "a", "b"},
      {"EVAL", incr_expire, "1", "s:hits", "60"},
      {"EVAL", incr_expire, "1", "s:hits", "60"},
      {"TTL", "s:hits"},
      {"EVAL", "return redis.call('exists', redis.call('randomkey'))", "0"},
      {"RANDOMKEY"},  // (one key so far)
      {"EVAL", bucket, "1", "s:bucket", "5", "0.5", "1000"},
      {"EVAL", bucket, "1", "s:bucket", "5", "0.5", "1000"},
      {"EVAL", bucket, "1", "s:bucket", "5", "0.5", "1003"},
      {"HGETALL", "s:bucket"},
      {"EVAL", log, "1", "s:log", "1000", "500", "2"},
      {"EVAL", log, "1", "s:log", "1100", "500", "2"},
      {"EVAL", log, "1", "s:log", "1200", "500", "2"},
      {"EVAL", log, "1", "s:log", "1700", "500", "2"},
      {"ZRANGE", "s:log", "0", "-1", "WITHSCORES"},
      {"GET", "s:log:seq"},
      {"EVAL", "return redis.call('mget', 'k1', 'nokey', 's:log:seq')", "0"},
      {"EVAL", "return redis.call('del', 's:hits', 'zz', 's:log:seq')", "0"},
      {"EVAL", "redis.call('set', KEYS[1], 'v') return redis.call('get', KEYS[1] .. ':x')", "1",
       "undeclared"},
      {"SET", "str", "abc"},
      {"EVAL", "return redis.pcall('incr', 'str')", "0"},
      {"EVAL", "return redis.call('incr', 'str')", "0"},
      {"EVAL", "return redis.call('hget', 'str', 'f')", "0"},
      {"EVAL", "return redis.call('nosuch')", "0"},
      {"EVAL", "return redis.call('get')", "0"},
      {"EVAL", "return redis.call()", "0"},
      {"EVAL", "return redis.call('get', {})", "0"},
      {"EVAL", "return redis.call('set', 'n', 3.5)", "0"},
      {"GET", "n"},
      {"EVAL", "x = 1", "0"},
      {"EVAL", "return y", "0"},
      {"EVAL", "error('boom')", "0"},
      {"EVAL", "return os", "0"},
      {"EVAL", "return (", "0"},
      {"EVAL", "return 1", "-1"},
      {"EVAL", "return 1", "2", "a"},
      {"EVAL", "return 1", "x"},
      {"EVAL", "return 1"},
      {"EVALSHA", "0123456789012345678901234567890123456789", "0"},
      {"EVALSHA", "short", "0"},
      {"SCRIPT", "LOAD", "return 'loaded'"},
      {"EVALSHA", "b534286061d4b9e4026607613b95c06c06015ae8", "0"},
      {"EVALSHA", "B534286061D4B9E4026607613B95C06C06015AE8", "0"},
      {"SCRIPT", "EXISTS", "b534286061d4b9e4026607613b95c06c06015ae8",
       "ffffffffffffffffffffffffffffffffffffffff"},
      {"SCRIPT", "LOAD", "return ("},
      {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "n"},
      {"EVAL_RO", "return redis.call('set', KEYS[1], 'b')", "1", "n"},
      {"SCRIPT", "FLUSH"},
      {"SCRIPT", "EXISTS", "b534286061d4b9e4026607613b95c06c06015ae8"},
      {"EVALSHA", "b534286061d4b9e4026607613b95c06c06015ae8", "0"},
      {"SCRIPT", "FLUSH", "bogus"},
      {"SCRIPT", "LOAD"},
      {"SCRIPT", "NOPE"},
      {"MULTI"},
      {"EVAL", "return redis.call('incr', KEYS[1])", "1", "in-multi"},
      {"EVAL", "return redis.call('incr', KEYS[1])", "1", "in-multi"},
      {"EXEC"},
  };
  for (const auto& words : cmds) {
    ASSERT_TRUE(fg.send(encode(words)) && rc.send(encode(words)));
    const std::string f = read_value(fg), r = read_value(rc);
    EXPECT_EQ(f, r) << "after " << words[0] << " " << (words.size() > 1 ? words[1] : "");
  }
}

std::string lua_quote(const std::string& s);

// The libraries Redis loads besides Lua's own (struct, cmsgpack; cjson and bit above),
// math.random, the read-only library tables, and the RESP3 conversions both ways
// (redis.setresp(3), {map=}, {set=}, {double=}, {big_number=}, {verbatim_string=},
// booleans), to a RESP2 and to a RESP3 connection.
TEST(ScriptDiff, LibrariesAndRespThreeAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "2"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port()), fg3(node.port()), rc3(redis.port());
  ASSERT_TRUE(rc.connected() && rc3.connected()) << "redis-server did not start";
  for (Client* c : {&fg3, &rc3}) {  // (the HELLO replies differ: server names and versions)
    ASSERT_TRUE(c->send(encode({"HELLO", "3"})));
    ASSERT_FALSE(read_value(*c).empty());
  }
  const std::vector<std::string> scripts = {
      // struct
      "return struct.pack('>i4hb', 1, -2, 3)",
      "return {struct.unpack('>i4hb', struct.pack('>i4hb', 1, -2, 3))}",
      "return {struct.unpack('<!8bd s', struct.pack('<!8bd s', 1, 2.5, 'hi'))}",
      "return {struct.unpack('bc0', struct.pack('bc0', 3, 'abc'))}",
      "return {struct.unpack('I3 i2 L', struct.pack('I3 i2 L', 70000, -300, 2^40), 1)}",
      "return {struct.unpack('f d', struct.pack('f d', 0.25, -1e300))}",
      "return struct.size('!4bi4d') .. ' ' .. struct.size('>c7hxT')",
      "return struct.pack('q')",
      "return struct.pack('i')",
      "return struct.pack('c5', 'ab')",
      "return struct.pack('i40', 1)",
      "return struct.pack('!3i', 1)",
      "return struct.size('s')",
      "return struct.size('c0')",
      "return struct.unpack('c0', 'abc')",
      "return struct.unpack('i4', 'ab')",
      "return struct.unpack('s', 'abc')",
      "return struct.unpack('b', 'a', 0)",
      // cmsgpack
      "return cmsgpack.pack({1, 2, 3}, 'abc', -1, 300, -300, 70000, -70000, 2^40, -2^40, 1.5, "
      "0.1, {a = 1}, true, false, nil, {}, string.rep('x', 40), string.rep('y', 300))",
      "local t = {cmsgpack.unpack(cmsgpack.pack({1, 2, {x = 'y'}}, 'abc', -1, 2^40, -2^40, 1.5))} "
      "return {t[1][1], t[1][3].x, t[2], t[3], tostring(t[4]), tostring(t[5]), tostring(t[6])}",
      "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}",
      "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}",
      "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 1)}",
      "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 0)}",
      "local s = cmsgpack.pack({[1] = 'a', [3] = 'c'}) return {#s, s}",
      "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)",
      "return cmsgpack.unpack('\\193')",
      "return cmsgpack.unpack('\\205')",
      "return cmsgpack.pack()",
      "return {cmsgpack.unpack_limit('abc', -1)}",
      "return {cmsgpack.unpack_one('abc', 9)}",
      // math.random (seeded: redis-server's generator is process-wide)
      "math.randomseed(42) return {math.random(1000000), math.random(5, 10), "
      "tostring(math.random())}",
      "math.randomseed(-7) return math.random(3)",
      "return math.random(0)",
      // the libraries are read-only, and can still be read and walked
      "string.foo = 1",
      "rawset(string, 'foo', 1)",
      "setmetatable(_G, nil)",
      "getmetatable('').__index.upper = nil",
      "redis.call = nil",
      "math.random = nil",
      "cjson.encode = nil",
      "return ('abc'):upper()",
      "for k in pairs(string) do return k end",
      "local n = 0 for k in pairs(math) do n = n + 1 end return n",
      "local n = 0 for k in pairs(_G) do n = n + 1 end return n",
      "local t = {} for k, v in pairs(cjson) do t[#t + 1] = k end table.sort(t) return t",
      "return {rawget(string, 'len') ~= nil, next(bit) ~= nil, next({})}",
      "local t = {} rawset(t, 'a', 1) setmetatable(t, {}) return t.a",
      "local t = {} for k, v in pairs(redis) do t[#t + 1] = k .. '=' .. type(v) end "
      "table.sort(t) return t",
      "return {redis.acl_check_cmd('set', 'a', 'b'), redis.breakpoint()}",
      "return redis.acl_check_cmd('nosuch')",
      // RESP3: what the script gets, what it answers
      "redis.setresp(3) redis.call('SET', 'k1', 'v') "
      "return {redis.call('GET', 'nokey') == nil, redis.call('GET', 'k1')}",
      "redis.setresp(3) redis.call('HSET', 'h1', 'a', '1') return redis.call('HGETALL', "
      "'h1').map.a",
      "redis.setresp(3) return redis.call('HGETALL', 'h1')",
      "redis.setresp(3) redis.call('ZADD', 'z1', '1.5', 'a') "
      "return tostring(redis.call('ZSCORE', 'z1', 'a').double)",
      "redis.setresp(3) return redis.call('ZSCORE', 'z1', 'a')",
      "redis.setresp(3) return redis.call('GET', 'nokey')",
      "redis.setresp(3) return {false, true}",
      "return {false, true}",
      "return {map = {a = 1}}",
      "return {set = {a = true}}",
      "return {double = 1.5}",
      "return {big_number = '12345'}",
      "return {verbatim_string = {format = 'txt', string = 'hello'}}",
      "return {verbatim_string = {format = 'txt'}}",
      "redis.setresp(4)",
      "redis.setresp()",
  };
  for (const auto& body : scripts) {
    for (auto [f, r] : {std::pair{&fg, &rc}, std::pair{&fg3, &rc3}}) {
      const auto words = std::vector<std::string>{"EVAL", body, "0"};
      ASSERT_TRUE(f->send(encode(words)) && r->send(encode(words)));
      EXPECT_EQ(read_value(*f), read_value(*r)) << (f == &fg3 ? "RESP3: " : "RESP2: ") << body;
    }
  }
  // Seeded bytes, mostly MessagePack type bytes, unpacked (or refused) alike; and struct
  // formats read from them.
  std::mt19937_64 rng(20261123);
  const std::string kTypes =
      "\x80\x81\x90\x92\xa1\xa3\xc0\xc1\xc2\xc3\xc4\xca\xcb\xcc\xcd"
      "\xce\xcf\xd0\xd1\xd2\xd3\xd9\xda\xdb\xdc\xdd\xde\xdf\xe0\xff\x01\x7f";
  const std::string kFormats = "<>!248 xbBhHlLTiIfdc0s";
  for (int i = 0; i < 300; ++i) {
    std::string bytes, format;
    for (size_t n = 1 + rng() % 12; n > 0; --n) {
      bytes += rng() % 3 ? kTypes[rng() % kTypes.size()] : static_cast<char>(rng() % 256);
    }
    for (size_t n = 1 + rng() % 5; n > 0; --n) format += kFormats[rng() % kFormats.size()];
    const std::string body =
        "local function show(v, d) if type(v) ~= 'table' then return type(v) .. ':' .. "
        "tostring(v) end if d > 20 then return '...' end local ks = {} for k in pairs(v) do "
        "ks[#ks + 1] = k end table.sort(ks, function(x, y) return tostring(x) < tostring(y) end) "
        "local out = {} for _, k in ipairs(ks) do out[#out + 1] = tostring(k) .. '=' .. "
        "show(v[k], d + 1) end return '{' .. table.concat(out, ',') .. '}' end "
        "local s = " +
        lua_quote(bytes) +
        " return {show({pcall(cmsgpack.unpack, s)}, 0), "
        "show({pcall(struct.unpack, " +
        lua_quote(format) + ", s)}, 0)}";
    const auto words = std::vector<std::string>{"EVAL", body, "0"};
    ASSERT_TRUE(fg.send(encode(words)) && rc.send(encode(words)));
    EXPECT_EQ(read_value(fg), read_value(rc)) << body;
  }
}

// The bit library at every argument's edges (CVE-2024-31449: Debian's lua-bitop crashes on
// bit.tohex(x, -2^31); redis-server's fixed copy, and ours, answer): every function with
// numbers around 0, 2^31, 2^32, 2^51, 2^52, 2^53, fractions, negatives, infinities, NaN,
// numeric strings, wrong types and missing arguments, answered alike.
TEST(ScriptDiff, TheBitLibraryAnswersAsRedisServerAtEveryEdge) {
  RedisServer redis;
  NodeProcess node({"--shards", "1"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  const std::vector<std::string> edges = {
      "0",          "1",           "-1",          "31",          "32",         "33",
      "-31",        "-32",         "-33",         "8",           "9",          "-8",
      "-9",         "2147483647",  "-2147483648", "-2147483647", "2147483648", "4294967295",
      "4294967296", "-4294967296", "2^51",        "-2^51",       "2^52",       "2^53",
      "2^63",       "-2^63",       "1.5",         "-1.5",        "0.5",        "2.5",
      "1e308",      "-1e308",      "1/0",         "-1/0",        "0/0",        "'12'",
      "'0x10'",     "' 7 '",       "'abc'",       "{}",          "nil",        "true"};
  const std::vector<std::string> unary = {"tobit", "bnot", "bswap", "tohex"};
  const std::vector<std::string> binary = {"band",    "bor", "bxor", "lshift", "rshift",
                                           "arshift", "rol", "ror",  "tohex"};
  std::vector<std::string> bodies;
  for (const auto& f : unary)
    for (const auto& x : edges) bodies.push_back("return bit." + f + "(" + x + ")");
  for (const auto& f : binary)
    for (const auto& n : edges) {
      bodies.push_back("return bit." + f + "(65535, " + n + ")");
      bodies.push_back("return bit." + f + "(-1985229329, " + n + ")");
      bodies.push_back("return bit." + f + "(" + n + ", 3)");
    }
  bodies.push_back("return bit.tohex(65535, -2147483648)");
  bodies.push_back("return {bit.band(), 1}");
  bodies.push_back("return bit.band(1, 2, 3, 7, 15)");
  bodies.push_back("return bit.bor(1, 2, 4, 8, 16, 2^31)");
  bodies.push_back("return bit.bxor(1, 3, 'x')");
  bodies.push_back("local t = {} for k in pairs(bit) do t[#t + 1] = k end table.sort(t) return t");
  for (const auto& body : bodies) {
    // (tostring: a number's digits as Lua prints them, not as the reply's integer cut)
    const std::string shown =
        "local ok, v = pcall(function() " + body +
        " end) "
        "if type(v) == 'table' then return v end return {tostring(ok), type(v), tostring(v)}";
    const auto words = std::vector<std::string>{"EVAL", shown, "0"};
    ASSERT_TRUE(fg.send(encode(words)) && rc.send(encode(words)));
    ASSERT_EQ(read_value(fg), read_value(rc)) << body;
  }
  // The call that took Debian's library down, bare: the node answers and goes on.
  ASSERT_TRUE(fg.send(encode({"EVAL", "return bit.tohex(65535, -2147483648)", "0"})));
  EXPECT_EQ(read_value(fg), "$8\r\n0000FFFF\r\n");
  ASSERT_TRUE(fg.send(encode({"PING"})));
  EXPECT_EQ(read_value(fg), "+PONG\r\n");
}

// A script past its budget is aborted, whatever it catches, and none of its writes stay;
// the node goes on serving (redis-server would run it until SCRIPT KILL or SHUTDOWN NOSAVE).
// A Lua string literal holding any bytes.
std::string lua_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 32 || c >= 127) {
      out += "\\" + std::to_string(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Whether a word can be written as a Lua number literal (then sent as a Lua number, which
// redis.call turns back into text its own way).
bool lua_number(const std::string& w) {
  if (w.empty() || w.size() > 15) return false;
  size_t i = w[0] == '-' ? 1 : 0, digits = 0, dots = 0;
  for (; i < w.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(w[i]))) {
      ++digits;
    } else if (w[i] == '.') {
      ++dots;
    } else {
      return false;
    }
  }
  return digits > 0 && dots <= 1 && w.back() != '.' &&
         w[w.size() > 1 && w[0] == '-' ? 1 : 0] != '.';
}

// Seeded scripts made of generated commands: each line calls one (redis.pcall mostly,
// redis.call now and then, so an error stops the script at its line), some arguments as
// Lua numbers, and the script returns one reply, several, or only the type of one whose
// value depends on timing or order (TTLs, HGETALL, KEYS).
std::string generated_script(Generator& gen, std::mt19937_64& rng) {
  // (and a set held as a table lists its members in the table's order)
  static const std::set<std::string> kUnstable = {
      "HGETALL", "HKEYS",      "HVALS",       "HSCAN",      "KEYS",     "SCAN",   "TTL",
      "PTTL",    "EXPIRETIME", "PEXPIRETIME", "TIME",       "SMEMBERS", "SINTER", "SUNION",
      "SDIFF",   "SPOP",       "SRANDMEMBER", "HRANDFIELD", "SSCAN"};
  const int lines = 1 + static_cast<int>(rng() % 4);
  std::string body;
  std::vector<std::string> shown;
  for (int j = 1; j <= lines; ++j) {
    std::vector<std::string> w = gen.next();
    std::string name = w[0];
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // (refused from scripts where Redis allows them: api/COMMANDS.md, Scripts, differences)
    if (name == "FLUSHALL" || name == "FLUSHDB" || name == "SCAN") {
      --j;
      continue;
    }
    const std::string var = "r" + std::to_string(j);
    body += "local " + var + " = redis." + (rng() % 5 == 0 ? "call(" : "pcall(");
    for (size_t k = 0; k < w.size(); ++k) {
      if (k) body += ", ";
      body += k > 0 && lua_number(w[k]) && rng() % 2 ? w[k] : lua_quote(w[k]);
    }
    body += ")\n";
    shown.push_back(kUnstable.count(name) ? "type(" + var + ")" : var);
  }
  switch (rng() % 3) {
    case 0:
      return body + "return " + shown.back();
    case 1: {
      std::string all;
      for (const auto& v : shown) all += (all.empty() ? "" : ", ") + v;
      return body + "return {" + all + "}";  // (a nil ends the array, as Redis converts it)
    }
    default:  // a reply inside a table, next to a string and its type
      return body + "return {" + lua_quote(std::to_string(shown.size())) + ", type(" +
             shown.front() + "), " + shown.front() + "}";
  }
}

TEST(ScriptDiff, SeededGeneratedScriptsAnswerAsRedisServerDoes) {
  RedisServer redis;
  NodeProcess node({"--shards", "4", "--script-cache-max-scripts", "50000"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  std::vector<uint64_t> seeds = {11, 12, 13, 20261124};
  int scripts = 400;
  if (const char* s = std::getenv("FG_DIFF_SEED")) seeds = {std::strtoull(s, nullptr, 10)};
  if (const char* n = std::getenv("FG_DIFF_COMMANDS")) scripts = std::atoi(n);
  for (uint64_t seed : seeds) {
    Generator gen(seed, "sdiff:" + std::to_string(seed) + ":");
    std::mt19937_64 rng(seed);
    for (int i = 0; i < scripts; ++i) {
      const std::string script = generated_script(gen, rng);
      std::vector<std::string> w = {"EVAL", script, "0"};
      if (rng() % 3 == 0) {  // by SHA, once loaded
        const std::string sha = sha1_hex(script);
        ASSERT_EQ(ask(fg, {"SCRIPT", "LOAD", script}), ask(rc, {"SCRIPT", "LOAD", script}));
        w = {"EVALSHA", sha, "0"};
      }
      const std::string a = ask(fg, w), b = ask(rc, w);
      ASSERT_FALSE(a.empty()) << "Floodgate closed the connection after script:\n" << script;
      ASSERT_EQ(a, b) << "seed " << seed << ", script " << i << ":\n" << script;
    }
  }
}

TEST(Scripts, ARunawayScriptIsAbortedAndItsWritesUndone) {
  NodeProcess node({"--shards", "4", "--script-time-limit-ms", "20"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  auto ask = [&](const std::vector<std::string>& w) {
    EXPECT_TRUE(c.send(encode(w)));
    return read_value(c);
  };
  EXPECT_EQ(ask({"SET", "r:a", "before"}), "+OK\r\n");
  const std::string spin =
      "redis.call('SET', KEYS[1], 'changed') redis.call('INCR', KEYS[2]) "
      "redis.call('HSET', 'r:undeclared', 'f', 1) "
      "while true do pcall(function() while true do end end) end";
  const std::string reply = ask({"EVAL", spin, "2", "r:a", "r:b"});
  EXPECT_NE(reply.find("ran past its budget of 20 ms"), std::string::npos) << reply;
  EXPECT_EQ(reply.find("-ERR"), 0u) << reply;
  EXPECT_EQ(ask({"GET", "r:a"}), "$6\r\nbefore\r\n");
  EXPECT_EQ(ask({"EXISTS", "r:b", "r:undeclared"}), ":0\r\n");
  EXPECT_EQ(ask({"EVAL", "return redis.call('INCR', KEYS[1])", "1", "r:b"}), ":1\r\n");
  const std::string info = ask({"INFO", "stats"});
  EXPECT_NE(info.find("script_runs_over_budget:1\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("script_runs:2\r\n"), std::string::npos) << info;
}

TEST(Scripts, TheCacheHasACapAndAnEvalPastItStillRuns) {
  NodeProcess node({"--script-cache-max-scripts", "2"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  auto ask = [&](const std::vector<std::string>& w) {
    EXPECT_TRUE(c.send(encode(w)));
    return read_value(c);
  };
  EXPECT_EQ(ask({"SCRIPT", "LOAD", "return 1"}).substr(0, 4), "$40\r");
  EXPECT_EQ(ask({"EVAL", "return 2", "0"}), ":2\r\n");
  const std::string full = ask({"SCRIPT", "LOAD", "return 3"});
  EXPECT_EQ(full.find("-ERR the script cache is full (2 scripts"), 0u) << full;
  EXPECT_EQ(ask({"EVAL", "return 3", "0"}), ":3\r\n");  // runs, is not kept
  EXPECT_EQ(ask({"EVALSHA", sha1_hex("return 3"), "0"}),
            "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_EQ(ask({"EVALSHA", sha1_hex("return 2"), "0"}), ":2\r\n");
  const std::string info = ask({"INFO"});
  EXPECT_NE(info.find("number_of_cached_scripts:2\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("used_memory_scripts_eval:16\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("script_evals_not_cached:1\r\n"), std::string::npos) << info;
  EXPECT_EQ(ask({"SCRIPT", "FLUSH"}), "+OK\r\n");
  EXPECT_EQ(ask({"EVALSHA", sha1_hex("return 2"), "0"}),
            "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_EQ(ask({"SCRIPT", "LOAD", "return 3"}).substr(0, 4), "$40\r");
  EXPECT_EQ(ask({"EVALSHA", sha1_hex("return 3"), "0"}), ":3\r\n");
}

// INCREX (Redis 8.8, with Valkey 9.2's NX and XX): no redis-server here has it, so these are
// the published command docs' cases, reply by reply.
TEST(Increx, AnswersAsTheCommandDocsSay) {
  NodeProcess node;
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  auto pair = [](const std::string& a, const std::string& b) {
    return "*2\r\n:" + a + "\r\n:" + b + "\r\n";
  };
  auto fpair = [](const std::string& a, const std::string& b) {
    return "*2\r\n$" + std::to_string(a.size()) + "\r\n" + a + "\r\n$" + std::to_string(b.size()) +
           "\r\n" + b + "\r\n";
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"INCREX", "hits", "EX", "60", "ENX"}, pair("1", "1")},  // (bun's example)
      {{"INCREX", "hits", "BYINT", "5"}, pair("6", "5")},
      {{"TTL", "hits"}, ":60\r\n"},                              // (kept, as INCR keeps it)
      {{"INCREX", "hits", "EX", "600", "ENX"}, pair("7", "1")},  // (ENX: it has one)
      {{"TTL", "hits"}, ":60\r\n"},
      {{"INCREX", "hits", "PX", "600000"}, pair("8", "1")},
      {{"TTL", "hits"}, ":600\r\n"},
      {{"INCREX", "hits", "PERSIST"}, pair("9", "1")},
      {{"TTL", "hits"}, ":-1\r\n"},
      // Out of bounds: not applied, the key and its deadline untouched.
      {{"INCREX", "hits", "BYINT", "2", "UBOUND", "10", "EX", "5"}, pair("9", "0")},
      {{"TTL", "hits"}, ":-1\r\n"},
      {{"INCREX", "hits", "BYINT", "2", "UBOUND", "10", "SATURATE"}, pair("10", "1")},
      {{"INCREX", "hits", "BYINT", "-20", "LBOUND", "0", "SATURATE"}, pair("0", "-10")},
      {{"INCREX", "none", "BYINT", "-1", "LBOUND", "0"}, pair("0", "0")},
      {{"EXISTS", "none"}, ":0\r\n"},
      {{"INCREX", "max", "BYINT", "9223372036854775807"},
       pair("9223372036854775807", "9223372036854775807")},
      {{"INCREX", "max"}, pair("9223372036854775807", "0")},  // (the type's limit)
      {{"INCREX", "max", "SATURATE"}, pair("9223372036854775807", "0")},
      // BYFLOAT: long doubles as INCRBYFLOAT writes them; RESP2 bulk strings.
      {{"INCREX", "f", "BYFLOAT", "1.5", "UBOUND", "2"}, fpair("1.5", "1.5")},
      {{"INCREX", "f", "BYFLOAT", "1.5", "UBOUND", "2"}, fpair("1.5", "0")},
      {{"INCREX", "f", "BYFLOAT", "1.5", "UBOUND", "2", "SATURATE"}, fpair("2", "0.5")},
      {{"INCREX", "f"}, pair("3", "1")},  // ("2" is an integer)
      {{"SET", "half", "0.5"}, "+OK\r\n"},
      {{"INCREX", "half"}, "-ERR value is not an integer or out of range\r\n"},
      // NX / XX: the key's existence first.
      {{"INCREX", "n", "XX"}, "$-1\r\n"},
      {{"INCREX", "n", "NX"}, pair("1", "1")},
      {{"INCREX", "n", "NX"}, "$-1\r\n"},
      {{"INCREX", "n", "XX"}, pair("2", "1")},
      // Errors.
      {{"INCREX", "n", "ENX"}, "-ERR syntax error\r\n"},
      {{"INCREX", "n", "PERSIST", "ENX"}, "-ERR syntax error\r\n"},
      {{"INCREX", "n", "NX", "XX"}, "-ERR syntax error\r\n"},
      {{"INCREX", "n", "EX", "1", "PX", "1"}, "-ERR syntax error\r\n"},
      {{"INCREX", "n", "BYINT", "1", "BYFLOAT", "1"}, "-ERR syntax error\r\n"},
      {{"INCREX", "n", "BYINT", "1.5"}, "-ERR value is not an integer or out of range\r\n"},
      {{"INCREX", "n", "BYFLOAT", "x"}, "-ERR value is not a valid float\r\n"},
      {{"INCREX", "n", "LBOUND", "5", "UBOUND", "1"},
       "-ERR LBOUND must not be greater than UBOUND\r\n"},
      {{"INCREX", "n", "EX", "0"}, "-ERR invalid expire time in 'increx' command\r\n"},
      {{"INCREX", "n", "EX", "x"}, "-ERR value is not an integer or out of range\r\n"},
      {{"LPUSH", "l", "x"}, ":1\r\n"},
      {{"INCREX", "l"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
      {{"INCREX"}, "-ERR wrong number of arguments for 'increx' command\r\n"},
      // From a script, and in a transaction.
      {{"EVAL", "return redis.call('increx', KEYS[1], 'BYINT', 3)", "1", "s"}, pair("3", "3")},
      {{"MULTI"}, "+OK\r\n"},
      {{"INCREX", "s", "EX", "30"}, "+QUEUED\r\n"},
      {{"EXEC"}, "*1\r\n" + pair("4", "1")},
      {{"TTL", "s"}, ":30\r\n"},
  };
  for (const auto& [words, want] : cases) {
    EXPECT_EQ(ask(c, words), want) << words[0] << " " << (words.size() > 1 ? words[1] : "") << " "
                                   << (words.size() > 2 ? words[2] : "");
  }
  // RESP3: BYFLOAT answers doubles, BYINT integers.
  EXPECT_EQ(ask(c, {"HELLO", "3"}).substr(0, 1), "%");
  EXPECT_EQ(ask(c, {"INCREX", "g", "BYFLOAT", "0.25"}), "*2\r\n,0.25\r\n,0.25\r\n");
  EXPECT_EQ(ask(c, {"INCREX", "h"}), "*2\r\n:1\r\n:1\r\n");
}

}  // namespace
}  // namespace fg::testing
