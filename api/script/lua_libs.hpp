// Script libraries Redis loads that Debian does not package: `struct` and `cmsgpack`.
// Each opener pushes its library's table.
#pragma once

struct lua_State;

namespace fg {

int open_struct_lib(lua_State* L);
int open_cmsgpack_lib(lua_State* L);

}  // namespace fg
