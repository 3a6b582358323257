/* The Sluice client library's C ABI: the resident-buffer dispatch interface (allocate, upload,
 * ranged download, dispatch, dispatch sequences, repeated sequences) against a sluiced daemon or
 * in-process on the CPU device, for callers in C and for other languages' foreign-function
 * interfaces. Link libsluice_c.so (pkg-config sluice-c, or find_package(Sluice) and
 * Sluice::c_abi); it exports only the functions below.
 *
 * Errors. Every function that can fail returns a sluice_status*: NULL on success, else a status
 * the caller reads with sluice_status_code and sluice_status_message and must free with
 * sluice_status_free. The codes are the C++ API's (absl's, which are gRPC's):
 *   SLUICE_NOT_FOUND            an unknown or freed resource; an unknown kernel
 *   SLUICE_FAILED_PRECONDITION  a resource of another dispatcher; a kernel version the backend
 *                               does not have
 *   SLUICE_OUT_OF_RANGE         a byte range that does not lie inside its buffer
 *   SLUICE_INVALID_ARGUMENT     a bad program, binding, grid or size; a null pointer where
 *                               one is needed; mismatched counts; an output too small
 *   SLUICE_RESOURCE_EXHAUSTED   device memory, a quota or a request-size limit
 *   SLUICE_UNAVAILABLE          the daemon or the session is gone
 *   SLUICE_CANCELLED            the call was cancelled (sluice_cancel)
 * A call that fails validation changes nothing. No function aborts the process on bad input.
 *
 * Threads. A dispatcher may be used from several threads at once (its calls run one at a time,
 * in arrival order); sluice_cancel may be called from any thread, a signal handler excepted.
 * Every pointer argument is borrowed for the call only.
 */
#ifndef SLUICE_CLIENT_C_SLUICE_H_
#define SLUICE_CLIENT_C_SLUICE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SLUICE_C_API __attribute__((visibility("default")))
#else
#define SLUICE_C_API
#endif

/* The version of this ABI: a program built against this header checks sluice_abi_version()
 * at run time against the value it was compiled with. Incremented on any incompatible change. */
#define SLUICE_C_ABI_VERSION 1
SLUICE_C_API uint32_t sluice_abi_version(void);

/* ---- Status ---- */

typedef enum sluice_code {
  SLUICE_OK = 0,
  SLUICE_CANCELLED = 1,
  SLUICE_UNKNOWN = 2,
  SLUICE_INVALID_ARGUMENT = 3,
  SLUICE_DEADLINE_EXCEEDED = 4,
  SLUICE_NOT_FOUND = 5,
  SLUICE_ALREADY_EXISTS = 6,
  SLUICE_PERMISSION_DENIED = 7,
  SLUICE_RESOURCE_EXHAUSTED = 8,
  SLUICE_FAILED_PRECONDITION = 9,
  SLUICE_ABORTED = 10,
  SLUICE_OUT_OF_RANGE = 11,
  SLUICE_UNIMPLEMENTED = 12,
  SLUICE_INTERNAL = 13,
  SLUICE_UNAVAILABLE = 14,
  SLUICE_DATA_LOSS = 15,
  SLUICE_UNAUTHENTICATED = 16
} sluice_code;

typedef struct sluice_status sluice_status;

/* The status's code (SLUICE_OK for NULL). */
SLUICE_C_API sluice_code sluice_status_code(const sluice_status* status);
/* Its message, NUL-terminated, valid until the status is freed ("" for NULL). */
SLUICE_C_API const char* sluice_status_message(const sluice_status* status);
/* Frees a status (NULL is allowed). */
SLUICE_C_API void sluice_status_free(sluice_status* status);
/* The code's name ("NOT_FOUND"), a static string; "UNKNOWN" for a value that is no code. */
SLUICE_C_API const char* sluice_code_name(sluice_code code);

/* ---- Dispatchers ---- */

typedef struct sluice_dispatch sluice_dispatch;

/* How to reach a daemon. Zero-initialize it, then set what you need: a NULL or empty string is
 * the default, 0 a default size or duration. */
typedef struct sluice_remote_options {
  const char* target;          /* required: host:port, or unix:PATH / unix:///ABSOLUTE */
  const char* client_name;     /* the daemon's log names the session by it */
  const char* token;           /* a tenant's bearer token, for a daemon with tenants */
  int tls;                     /* nonzero: TLS (also on when any TLS file is given) */
  const char* tls_ca;          /* PEM file of CA certificates; default: the system's */
  const char* tls_cert;        /* PEM files of this client's certificate and key (mutual TLS) */
  const char* tls_key;
  const char* tls_server_name; /* the name the daemon's certificate must carry */
  int not_resumable;           /* nonzero: the session ends with its connection */
  int pipelined;               /* nonzero: calls that return only a status do not wait */
  uint32_t chunk_size;         /* preferred bytes per data message; 0: the daemon's */
  uint32_t connect_timeout_ms; /* 0: 10 s */
  uint32_t call_timeout_ms;    /* 0: 10 min */
} sluice_remote_options;

/* Opens a session on a daemon. `options_size` is sizeof(sluice_remote_options) as the caller
 * compiled it (so that the struct may grow). On success *out is a dispatcher the caller closes
 * with sluice_dispatch_close. */
SLUICE_C_API sluice_status* sluice_remote_connect(const sluice_remote_options* options,
                                                  size_t options_size, sluice_dispatch** out);
/* An in-process dispatcher on a new CPU device using every core. */
SLUICE_C_API sluice_status* sluice_local_open(sluice_dispatch** out);
/* Frees every buffer the dispatcher holds and closes it (NULL is allowed). No call of it may
 * be running. */
SLUICE_C_API void sluice_dispatch_close(sluice_dispatch* dispatch);

/* Stable identity of the device behind the dispatcher, and the backend's implementation
 * version (the kernel catalog's): NUL-terminated, valid until the dispatcher is closed; ""
 * for NULL. */
SLUICE_C_API const char* sluice_backend_id(const sluice_dispatch* dispatch);
SLUICE_C_API const char* sluice_backend_version(const sluice_dispatch* dispatch);

/* ---- Resources ---- */

/* A resident buffer: a value, copied and compared freely (two are the same buffer when both
 * fields are equal), meaningful only to the dispatcher that issued it. {0, 0} is none. */
typedef struct sluice_resource {
  uint64_t owner;
  uint64_t id;
} sluice_resource;

/* Allocates a zero-filled buffer of exactly `byte_len` bytes (0 is allowed). */
SLUICE_C_API sluice_status* sluice_allocate(sluice_dispatch* dispatch, uint64_t byte_len,
                                            sluice_resource* out);
/* Frees the buffer; a second free is SLUICE_NOT_FOUND. */
SLUICE_C_API sluice_status* sluice_free(sluice_dispatch* dispatch, sluice_resource resource);

/* Writes `length` bytes at offset 0 of the buffer; the rest of it is unchanged. */
SLUICE_C_API sluice_status* sluice_upload(sluice_dispatch* dispatch, sluice_resource resource,
                                          const uint8_t* bytes, size_t length);

/* One write for the batched uploads: `length` bytes at `offset` of the buffer. */
typedef struct sluice_upload_range {
  sluice_resource resource;
  uint64_t offset;
  const uint8_t* bytes;
  size_t length;
} sluice_upload_range;

/* Uploads several buffers as one staging operation (one round trip to a daemon): every upload
 * is checked before any is written. sluice_upload_many writes each at offset 0 (an upload with
 * another offset is SLUICE_INVALID_ARGUMENT); sluice_upload_at_many at its offset. */
SLUICE_C_API sluice_status* sluice_upload_many(sluice_dispatch* dispatch,
                                               const sluice_upload_range* uploads, size_t count);
SLUICE_C_API sluice_status* sluice_upload_at_many(sluice_dispatch* dispatch,
                                                  const sluice_upload_range* uploads,
                                                  size_t count);

/* Reads the whole buffer into `output` (`capacity` bytes) and sets *size to its size. When the
 * buffer is larger than `capacity`, nothing is written, *size is still set, and the status is
 * SLUICE_INVALID_ARGUMENT: call again with room for *size bytes. */
SLUICE_C_API sluice_status* sluice_download(sluice_dispatch* dispatch, sluice_resource resource,
                                            uint8_t* output, size_t capacity, size_t* size);

/* One byte range to read: `length` bytes at `offset` of the buffer. */
typedef struct sluice_read_range {
  sluice_resource resource;
  uint64_t offset;
  uint64_t length;
} sluice_read_range;

/* Reads bytes [offset, offset + length) into `output`, which holds `length` bytes; only those
 * bytes move. */
SLUICE_C_API sluice_status* sluice_download_range(sluice_dispatch* dispatch,
                                                  sluice_resource resource, uint64_t offset,
                                                  uint64_t length, uint8_t* output);
/* Reads several ranges as one readback: outputs[i] receives ranges[i] and holds exactly
 * ranges[i].length bytes; outputs must not overlap. */
SLUICE_C_API sluice_status* sluice_download_ranges(sluice_dispatch* dispatch,
                                                   const sluice_read_range* ranges,
                                                   size_t count, uint8_t* const* outputs);

/* ---- Programs ---- */

/* A kernel of the catalog (`sluice info` lists them), its scalar parameters in order (at most
 * 8: INVALID_ARGUMENT past that, before any is read), and the kernel version the caller was
 * written for (0: whichever the backend has). */
typedef struct sluice_program {
  const char* kernel;
  uint32_t version;
  const uint64_t* params;
  size_t param_count;
} sluice_program;

/* One step of a sequence: a program, its resources in binding order (at most 64:
 * INVALID_ARGUMENT past that, before any is read), and a grid override (logical threads in x,
 * y, z) or NULL for the kernel's own. */
typedef struct sluice_step {
  const sluice_program* program;
  const sluice_resource* resources;
  size_t resource_count;
  const uint32_t* grid; /* NULL, or 3 values */
} sluice_step;

/* Runs one program; returns once its work is done. */
SLUICE_C_API sluice_status* sluice_dispatch_program(sluice_dispatch* dispatch,
                                                    const sluice_program* program,
                                                    const sluice_resource* resources,
                                                    size_t resource_count,
                                                    const uint32_t* grid);
/* Runs `steps` in order, then reads `ranges` into `outputs` (as sluice_download_ranges), all
 * behind one synchronization: the whole call is validated first, and an invalid step anywhere
 * runs nothing. */
SLUICE_C_API sluice_status* sluice_dispatch_sequence(sluice_dispatch* dispatch,
                                                     const sluice_step* steps, size_t step_count,
                                                     const sluice_read_range* ranges,
                                                     size_t range_count,
                                                     uint8_t* const* outputs);
/* Runs `prefix` once and `repeated` `repeat_count` times (0 runs none; the device loops the
 * group), then reads. The catalog's loop guard as the first repeated step ends the repetition
 * before an iteration that starts with its word zero. */
SLUICE_C_API sluice_status* sluice_dispatch_repeated_sequence(
    sluice_dispatch* dispatch, const sluice_step* prefix, size_t prefix_count,
    const sluice_step* repeated, size_t repeated_count, uint32_t repeat_count,
    const sluice_read_range* ranges, size_t range_count, uint8_t* const* outputs);

/* Cancels the calls of `dispatch` in flight at this moment, from any thread: each returns
 * SLUICE_CANCELLED. Calls made afterwards run normally. */
SLUICE_C_API void sluice_cancel(sluice_dispatch* dispatch);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SLUICE_CLIENT_C_SLUICE_H_ */
