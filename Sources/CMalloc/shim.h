#ifndef CMALLOC_SHIM_H
#define CMALLOC_SHIM_H
// glibc's allocator statistics (mallinfo2, malloc_trim), for lode-bench's memory figures.
#include <malloc.h>
#endif
