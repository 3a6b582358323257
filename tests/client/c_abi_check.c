/* The C ABI's contracts, checked from C (compiled as C11): c_abi_check local runs them
 * in-process on the CPU device, c_abi_check HOST:PORT against a daemon. Prints each failed check
 * and exits 1 if any failed (tests/integration/c_abi_test.cc runs it both ways). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/client/c/sluice.h"

static int failures = 0;

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

/* Takes a status: true when its code is `code` (then frees it); prints it otherwise. */
static int Is(sluice_status* status, sluice_code code, int line) {
  const sluice_code got = sluice_status_code(status);
  if (got != code) {
    fprintf(stderr, "c_abi_check.c:%d: expected %s, got %s: %s\n", line, sluice_code_name(code),
            sluice_code_name(got), sluice_status_message(status));
    ++failures;
  }
  sluice_status_free(status);
  return got == code;
}
#define EXPECT_CODE(call, code) Is((call), (code), __LINE__)
#define EXPECT_OK(call) Is((call), SLUICE_OK, __LINE__)

static sluice_dispatch* Open(const char* target) {
  sluice_dispatch* d = NULL;
  sluice_status* status;
  if (strcmp(target, "local") == 0) {
    status = sluice_local_open(&d);
  } else {
    sluice_remote_options options;
    memset(&options, 0, sizeof(options));
    options.target = target;
    options.client_name = "c-abi-check";
    status = sluice_remote_connect(&options, sizeof(options), &d);
  }
  if (!EXPECT_OK(status)) return NULL;
  return d;
}

static void Buffers(sluice_dispatch* d) {
  /* Exact sizes, zero-filled; writes at offsets; ranged reads move only their range. */
  sluice_resource r;
  CHECK(EXPECT_OK(sluice_allocate(d, 100, &r)));
  uint8_t whole[128];
  size_t size = 0;
  CHECK(EXPECT_OK(sluice_download(d, r, whole, sizeof(whole), &size)));
  CHECK(size == 100);
  int zero = 1;
  for (size_t i = 0; i < size; ++i) zero &= whole[i] == 0;
  CHECK(zero);
  uint8_t small[10];
  CHECK(EXPECT_CODE(sluice_download(d, r, small, sizeof(small), &size), SLUICE_INVALID_ARGUMENT));
  CHECK(size == 100);

  uint8_t bytes[100];
  for (int i = 0; i < 100; ++i) bytes[i] = (uint8_t)i;
  CHECK(EXPECT_OK(sluice_upload(d, r, bytes, sizeof(bytes))));
  uint8_t range[12];
  memset(range, 0xee, sizeof(range));
  CHECK(EXPECT_OK(sluice_download_range(d, r, 40, 10, range + 1)));
  CHECK(range[0] == 0xee && range[11] == 0xee); /* nothing outside the output is written */
  CHECK(range[1] == 40 && range[10] == 49);
  CHECK(EXPECT_CODE(sluice_download_range(d, r, 95, 6, range), SLUICE_OUT_OF_RANGE));
  CHECK(EXPECT_CODE(sluice_download_range(d, r, 101, 0, range), SLUICE_OUT_OF_RANGE));
  CHECK(EXPECT_OK(sluice_download_range(d, r, 100, 0, NULL))); /* an empty range at the end */

  sluice_resource other;
  CHECK(EXPECT_OK(sluice_allocate(d, 8, &other)));
  const uint8_t seven[3] = {7, 7, 7};
  const uint8_t nine[2] = {9, 9};
  sluice_upload_range at[2] = {{r, 2, seven, 3}, {other, 6, nine, 2}};
  CHECK(EXPECT_OK(sluice_upload_at_many(d, at, 2)));
  CHECK(EXPECT_CODE(sluice_upload_many(d, at, 2), SLUICE_INVALID_ARGUMENT)); /* offsets */
  sluice_upload_range past[2] = {{r, 0, seven, 3}, {other, 7, nine, 2}};
  CHECK(EXPECT_CODE(sluice_upload_at_many(d, past, 2), SLUICE_OUT_OF_RANGE));
  uint8_t first[5], second[8];
  uint8_t* outputs[2] = {first, second};
  sluice_read_range reads[2] = {{r, 0, 5}, {other, 0, 8}};
  CHECK(EXPECT_OK(sluice_download_ranges(d, reads, 2, outputs)));
  /* The failed batch wrote nothing: r still holds 0 1 7 7 7. */
  CHECK(first[0] == 0 && first[1] == 1 && first[2] == 7 && first[4] == 7);
  CHECK(second[5] == 0 && second[6] == 9 && second[7] == 9);

  /* Bad pointers are INVALID_ARGUMENT, never a crash. */
  CHECK(EXPECT_CODE(sluice_allocate(d, 8, NULL), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_allocate(NULL, 8, &r), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_upload(d, r, NULL, 4), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_download_ranges(d, NULL, 1, outputs), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_download_ranges(d, reads, 2, NULL), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_download(d, r, NULL, 4, &size), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, NULL, NULL, 0, NULL), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_allocate(d, UINT64_MAX, &r), SLUICE_RESOURCE_EXHAUSTED));

  /* Freed and unknown resources are NOT_FOUND. */
  CHECK(EXPECT_OK(sluice_free(d, other)));
  CHECK(EXPECT_CODE(sluice_free(d, other), SLUICE_NOT_FOUND));
  CHECK(EXPECT_CODE(sluice_download_range(d, other, 0, 1, first), SLUICE_NOT_FOUND));
  sluice_resource none = {0, 0};
  CHECK(EXPECT_CODE(sluice_upload(d, none, bytes, 1), SLUICE_NOT_FOUND));
  CHECK(EXPECT_OK(sluice_free(d, r)));
}

static void Programs(sluice_dispatch* d) {
  sluice_resource out;
  CHECK(EXPECT_OK(sluice_allocate(d, 16 * 4, &out)));
  const uint64_t value = 0xabcd;
  const sluice_program fill = {"fill_u32", 0, &value, 1};
  CHECK(EXPECT_OK(sluice_dispatch_program(d, &fill, &out, 1, NULL)));
  uint32_t words[16];
  uint8_t* output = (uint8_t*)words;
  sluice_read_range all = {out, 0, sizeof(words)};
  CHECK(EXPECT_OK(sluice_download_ranges(d, &all, 1, &output)));
  CHECK(words[0] == 0xabcd && words[15] == 0xabcd);
  /* A grid override: 4 threads fill the first 4 words only. */
  const uint64_t one = 1;
  const sluice_program fill_one = {"fill_u32", 1, &one, 1};
  const uint32_t grid[3] = {4, 1, 1};
  CHECK(EXPECT_OK(sluice_dispatch_program(d, &fill_one, &out, 1, grid)));
  CHECK(EXPECT_OK(sluice_download_ranges(d, &all, 1, &output)));
  CHECK(words[3] == 1 && words[4] == 0xabcd);

  const sluice_program unknown = {"no_such_kernel", 0, NULL, 0};
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &unknown, &out, 1, NULL), SLUICE_NOT_FOUND));
  const sluice_program wrong_version = {"fill_u32", 99, &value, 1};
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &wrong_version, &out, 1, NULL),
                    SLUICE_FAILED_PRECONDITION));
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &fill, &out, 0, NULL), SLUICE_INVALID_ARGUMENT));
  /* Counts past what any kernel takes (8 params, 64 resources) are refused before anything
   * is read: the arrays here hold one element. */
  const sluice_program too_many = {"fill_u32", 0, &value, (size_t)1 << 40};
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &too_many, &out, 1, NULL),
                    SLUICE_INVALID_ARGUMENT));
  const sluice_program nine = {"fill_u32", 0, &value, 9};
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &nine, &out, 1, NULL), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &fill, &out, 65, NULL), SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_CODE(sluice_dispatch_program(d, &fill, &out, SIZE_MAX, NULL),
                    SLUICE_INVALID_ARGUMENT));

  /* A sequence and its reads behind one fence: fill with 5, then add 2 to word 3. */
  const uint64_t five = 5;
  const uint64_t add[2] = {3, 2};
  const sluice_program fill_five = {"fill_u32", 0, &five, 1};
  const sluice_program add_two = {"atomic_add_u32", 0, add, 2};
  const sluice_step steps[2] = {{&fill_five, &out, 1, NULL}, {&add_two, &out, 1, NULL}};
  uint32_t four[4];
  uint8_t* four_out = (uint8_t*)four;
  sluice_read_range head = {out, 0, sizeof(four)};
  CHECK(EXPECT_OK(sluice_dispatch_sequence(d, steps, 2, &head, 1, &four_out)));
  CHECK(four[0] == 5 && four[2] == 5 && four[3] == 7);
  /* An invalid step anywhere runs nothing. */
  const sluice_step bad[2] = {{&fill, &out, 1, NULL}, {&unknown, &out, 1, NULL}};
  CHECK(EXPECT_CODE(sluice_dispatch_sequence(d, bad, 2, &head, 1, &four_out), SLUICE_NOT_FOUND));
  CHECK(EXPECT_OK(sluice_download_ranges(d, &head, 1, &four_out)));
  CHECK(four[0] == 5);

  /* A repeated group ended by the loop guard: word 0 counts 3 down, word 1 counts up. */
  const uint64_t start = 3;
  const sluice_program set = {"fill_u32", 0, &start, 1};
  const uint32_t one_thread[3] = {1, 1, 1};
  const uint64_t guard_word = 0;
  const uint64_t down[2] = {0, 0xffffffffu};
  const uint64_t up[2] = {1, 1};
  const uint64_t clear_value = 0;
  const sluice_program guard = {"repeat_while_u32", 0, &guard_word, 1};
  const sluice_program decrement = {"atomic_add_u32", 0, down, 2};
  const sluice_program increment = {"atomic_add_u32", 0, up, 2};
  const sluice_program clear = {"fill_u32", 0, &clear_value, 1};
  const uint32_t one_word[3] = {1, 1, 1};
  const sluice_step prefix[2] = {{&clear, &out, 1, NULL}, {&set, &out, 1, one_word}};
  const sluice_step repeated[3] = {
      {&guard, &out, 1, NULL}, {&decrement, &out, 1, one_thread}, {&increment, &out, 1, NULL}};
  uint32_t counters[2];
  uint8_t* counters_out = (uint8_t*)counters;
  sluice_read_range both = {out, 0, sizeof(counters)};
  CHECK(EXPECT_OK(sluice_dispatch_repeated_sequence(d, prefix, 2, repeated, 3, 10, &both, 1,
                                                    &counters_out)));
  CHECK(counters[0] == 0 && counters[1] == 3);
  CHECK(EXPECT_OK(sluice_dispatch_repeated_sequence(d, prefix, 2, repeated, 3, 0, &both, 1,
                                                    &counters_out)));
  CHECK(counters[0] == 3 && counters[1] == 0); /* 0 repetitions run none */
  CHECK(EXPECT_CODE(sluice_dispatch_repeated_sequence(d, prefix, 2, NULL, 3, 1, &both, 1,
                                                      &counters_out),
                    SLUICE_INVALID_ARGUMENT));
  CHECK(EXPECT_OK(sluice_free(d, out)));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_abi_check local | HOST:PORT\n");
    return 2;
  }
  CHECK(sluice_abi_version() == SLUICE_C_ABI_VERSION);
  CHECK(strcmp(sluice_code_name(SLUICE_NOT_FOUND), "NOT_FOUND") == 0);
  CHECK(sluice_status_code(NULL) == SLUICE_OK && strcmp(sluice_status_message(NULL), "") == 0);
  sluice_dispatch* d = Open(argv[1]);
  sluice_dispatch* e = Open(argv[1]);
  if (d == NULL || e == NULL) return 1;
  CHECK(strlen(sluice_backend_id(d)) > 0);
  CHECK(strlen(sluice_backend_version(d)) > 0);
  Buffers(d);
  Programs(d);
  /* A resource of another dispatcher is FAILED_PRECONDITION. */
  sluice_resource theirs;
  CHECK(EXPECT_OK(sluice_allocate(e, 4, &theirs)));
  uint8_t byte[4];
  CHECK(EXPECT_CODE(sluice_download_range(d, theirs, 0, 4, byte), SLUICE_FAILED_PRECONDITION));
  CHECK(EXPECT_CODE(sluice_free(d, theirs), SLUICE_FAILED_PRECONDITION));
  sluice_dispatch_close(e);
  sluice_dispatch_close(d);
  sluice_dispatch_close(NULL);
  if (strcmp(argv[1], "local") != 0) {
    sluice_remote_options options;
    memset(&options, 0, sizeof(options));
    sluice_dispatch* none = NULL;
    CHECK(EXPECT_CODE(sluice_remote_connect(&options, sizeof(options), &none),
                      SLUICE_INVALID_ARGUMENT));
    options.target = argv[1];
    CHECK(EXPECT_CODE(sluice_remote_connect(&options, 4, &none), SLUICE_INVALID_ARGUMENT));
    CHECK(none == NULL);
  }
  if (failures == 0) printf("c_abi_check %s: every check passed\n", argv[1]);
  return failures == 0 ? 0 : 1;
}
