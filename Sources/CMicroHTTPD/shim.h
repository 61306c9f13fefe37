#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/* Macros with casts, which Swift does not import. */
static const uint64_t cmhd_size_unknown = MHD_SIZE_UNKNOWN;
static const ssize_t cmhd_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t cmhd_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;
#endif
