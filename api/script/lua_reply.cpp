// Replies between Lua and Redis, both ways, with Redis's conversion rules.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "errors.hpp"
#include "script_run.hpp"

namespace fg {
namespace script {

// Redis's error table: {err = "CODE message"} ("ERR" when the text has no code of its own).
void push_error_table(lua_State* L, std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) text.remove_suffix(1);
  lua_newtable(L);
  lua_pushstring(L, "err");
  if (!text.empty() && text[0] == '-') {
    text.remove_prefix(1);
    if (text.find(' ') == std::string_view::npos) {
      lua_pushstring(L, "ERR ");
      lua_pushlstring(L, text.data(), text.size());
      lua_concat(L, 2);
    } else {
      lua_pushlstring(L, text.data(), text.size());
    }
  } else {
    lua_pushstring(L, "ERR ");
    lua_pushlstring(L, text.data(), text.size());
    lua_concat(L, 2);
  }
  lua_settable(L, -3);
}

// A reply as Lua sees it. RESP2 (the default): integers as numbers, bulk strings as
// strings, nil as false, status as {ok=...}, errors as {err=...}, arrays (and maps, flat) as
// tables. RESP3 (redis.setresp(3)): nil as nil, maps as {map={k=v}}, sets as {set={m=true}},
// doubles as {double=n}, booleans as booleans, big numbers as {big_number="..."}.
size_t push_reply(lua_State* L, const DataReply& r, size_t i, bool resp3) {
  using T = ReplyItem::Type;
  if (i >= r.items.size()) {
    lua_pushboolean(L, 0);
    return i;
  }
  const ReplyItem& it = r.items[i];
  auto wrap = [L](const char* field) {  // {field = <what push_reply pushes next>}
    lua_createtable(L, 0, 1);
    lua_pushstring(L, field);
  };
  switch (it.type) {
    case T::kInt:
      lua_pushnumber(L, static_cast<lua_Number>(it.n));
      return i + 1;
    case T::kBulk:
      lua_pushlstring(L, it.s.data(), it.s.size());
      return i + 1;
    case T::kDouble:
    case T::kBigNumber:
    case T::kVerbatim:
      if (!resp3) {
        const size_t skip = it.type == T::kVerbatim ? std::min<size_t>(4, it.s.size()) : 0;
        lua_pushlstring(L, it.s.data() + skip, it.s.size() - skip);
      } else if (it.type == T::kDouble) {
        wrap("double");
        lua_pushnumber(L, std::strtod(it.s.c_str(), nullptr));
        lua_settable(L, -3);
      } else if (it.type == T::kBigNumber) {
        wrap("big_number");
        lua_pushlstring(L, it.s.data(), it.s.size());
        lua_settable(L, -3);
      } else {
        wrap("verbatim_string");
        lua_createtable(L, 0, 2);
        lua_pushlstring(L, it.s.data(), std::min<size_t>(3, it.s.size()));
        lua_setfield(L, -2, "format");
        const size_t skip = std::min<size_t>(4, it.s.size());
        lua_pushlstring(L, it.s.data() + skip, it.s.size() - skip);
        lua_setfield(L, -2, "string");
        lua_settable(L, -3);
      }
      return i + 1;
    case T::kNull:
    case T::kNullArray:
      if (resp3) {
        lua_pushnil(L);
      } else {
        lua_pushboolean(L, 0);
      }
      return i + 1;
    case T::kBool:
      if (resp3) {
        lua_pushboolean(L, it.n != 0);
      } else {
        lua_pushnumber(L, static_cast<lua_Number>(it.n));
      }
      return i + 1;
    case T::kStatus:
      lua_createtable(L, 0, 1);
      lua_pushstring(L, "ok");
      lua_pushlstring(L, it.s.data(), it.s.size());
      lua_settable(L, -3);
      return i + 1;
    case T::kError:
      lua_createtable(L, 0, 1);
      lua_pushstring(L, "err");
      lua_pushlstring(L, it.s.data(), it.s.size());
      lua_settable(L, -3);
      return i + 1;
    case T::kArray:
    case T::kMap:
    case T::kSet: {
      lua_checkstack(L, 6);
      size_t j = i + 1;
      if (resp3 && it.type != T::kArray) {
        const bool map = it.type == T::kMap;
        wrap(map ? "map" : "set");
        lua_createtable(L, 0, static_cast<int>(std::min<int64_t>(it.n, 1 << 20)));
        for (int64_t k = 0; k < it.n; ++k) {
          j = push_reply(L, r, j, true);
          if (map) {
            j = push_reply(L, r, j, true);
          } else {
            lua_pushboolean(L, 1);
          }
          lua_settable(L, -3);
        }
        lua_settable(L, -3);
        return j;
      }
      const int64_t n = ReplyItem::children(it.type, it.n);
      lua_createtable(L, static_cast<int>(std::min<int64_t>(n, 1 << 20)), 0);
      for (int64_t k = 1; k <= n; ++k) {
        j = push_reply(L, r, j, resp3);
        lua_rawseti(L, -2, static_cast<int>(k));
      }
      return j;
    }
  }
  return i + 1;
}

// The string field `name` of the table at `idx` (negative: below the top), or null; the
// string is left pushed.
const char* string_field(lua_State* L, const char* name, size_t* len, int idx = -1) {
  lua_pushstring(L, name);
  lua_rawget(L, idx - 1);
  if (lua_type(L, -1) == LUA_TSTRING) return lua_tolstring(L, -1, len);  // (left pushed)
  lua_pop(L, 1);
  return nullptr;
}

// The value at the top of the stack as a reply (Redis's rules): strings bulk, numbers
// truncated to integers, true 1 and false nil (RESP3 scripts: booleans), {err=} an error,
// {ok=} a status, {double=} a double, {big_number=} and {verbatim_string={format=,
// string=}} their RESP3 types, {map=} a map, {set=} a set, other tables arrays up to their
// first nil. (A RESP2 client gets RESP3 types as their RESP2 equivalents.)
void to_reply(lua_State* L, DataReply& out, int depth, bool resp3) {
  if (depth > kMaxReplyDepth || !lua_checkstack(L, 6)) {
    out.error(err::kLuaStackLimit);
    return;
  }
  auto no_newlines = [](const char* p, size_t n) {
    std::string t(p, n);
    for (char& c : t)
      if (c == '\r' || c == '\n') c = ' ';
    return t;
  };
  switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, -1, &n);
      out.bulk(std::string_view(s, n));
      return;
    }
    case LUA_TBOOLEAN:
      if (resp3) {
        out.boolean(lua_toboolean(L, -1) != 0);
      } else if (lua_toboolean(L, -1)) {
        out.integer(1);
      } else {
        out.null();
      }
      return;
    case LUA_TNUMBER:
      out.integer(static_cast<int64_t>(lua_tonumber(L, -1)));
      return;
    case LUA_TTABLE: {
      size_t n;
      if (const char* s = string_field(L, "err", &n)) {
        std::string_view text(s, n);
        if (!text.empty() && text[0] == '-') text.remove_prefix(1);
        out.error(text);
        lua_pop(L, 1);
        return;
      }
      if (const char* s = string_field(L, "ok", &n)) {
        out.status(no_newlines(s, std::strlen(s)));
        lua_pop(L, 1);
        return;
      }
      lua_pushstring(L, "double");
      lua_rawget(L, -2);
      if (lua_type(L, -1) == LUA_TNUMBER) {
        out.dbl(lua_tonumber(L, -1));
        lua_pop(L, 1);
        return;
      }
      lua_pop(L, 1);
      if (const char* s = string_field(L, "big_number", &n)) {
        out.items.push_back({ReplyItem::Type::kBigNumber, 0, no_newlines(s, n)});
        lua_pop(L, 1);
        return;
      }
      lua_pushstring(L, "verbatim_string");
      lua_rawget(L, -2);
      if (lua_type(L, -1) == LUA_TTABLE) {
        size_t fn;
        if (const char* format = string_field(L, "format", &fn)) {
          size_t tn;
          if (const char* text = string_field(L, "string", &tn, -2)) {
            std::string v(format, std::min<size_t>(fn, 3));
            v.resize(3, ' ');
            v += ':';
            v.append(text, tn);
            out.items.push_back({ReplyItem::Type::kVerbatim, 0, std::move(v)});
            lua_pop(L, 3);
            return;
          }
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
      for (const bool map : {true, false}) {
        lua_pushstring(L, map ? "map" : "set");
        lua_rawget(L, -2);
        if (lua_type(L, -1) != LUA_TTABLE) {
          lua_pop(L, 1);
          continue;
        }
        const size_t header = out.items.size();
        if (map) {
          out.map(0);
        } else {
          out.set(0);
        }
        int64_t count = 0;
        lua_pushnil(L);
        while (lua_next(L, -2)) {  // (stack: table, key, value)
          if (map) {
            lua_pushvalue(L, -2);  // (a copy: converting the key itself would upset lua_next)
            to_reply(L, out, depth + 1, resp3);
            lua_pop(L, 1);
            to_reply(L, out, depth + 1, resp3);
          } else {  // a set's members are its keys
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            to_reply(L, out, depth + 1, resp3);
          }
          lua_pop(L, 1);
          ++count;
        }
        out.items[header].n = count;
        lua_pop(L, 1);
        return;
      }
      const size_t header = out.items.size();
      out.array(0);
      int64_t count = 0;
      for (int j = 1;; ++j) {
        lua_rawgeti(L, -1, j);
        if (lua_isnil(L, -1)) {
          lua_pop(L, 1);
          break;
        }
        to_reply(L, out, depth + 1, resp3);
        lua_pop(L, 1);
        ++count;
      }
      out.items[header].n = count;
      return;
    }
    default:
      out.null();
      return;
  }
}

}  // namespace script
}  // namespace fg
