// What libgrid.so exports: the declarations of the public headers
// (include/grid/), each of which wraps its contents in GRID_API_BEGIN and
// GRID_API_END, and nothing else. The library is built with hidden
// visibility, so the internal layers (lib/) stay inside it, and a linker
// version script (cmake/libgrid.map) keeps out the standard-library templates
// instantiated over public types. tests/api/exports.cmake checks the list
// against an allow-list.
#ifndef GRID_EXPORT_H_
#define GRID_EXPORT_H_

#define GRID_API_BEGIN _Pragma("GCC visibility push(default)")
#define GRID_API_END _Pragma("GCC visibility pop")

#endif  // GRID_EXPORT_H_
