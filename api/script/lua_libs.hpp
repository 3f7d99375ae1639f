// Script libraries Redis loads that we keep ourselves: `struct` and `cmsgpack` (Debian does
// not package them) and `bit` (Debian's lua-bitop carries CVE-2024-31449). Each opener
// pushes its library's table.
#pragma once

struct lua_State;

namespace fg {

int open_struct_lib(lua_State* L);
int open_cmsgpack_lib(lua_State* L);
int open_bit_lib(lua_State* L);  // lua_bit.cpp

}  // namespace fg
