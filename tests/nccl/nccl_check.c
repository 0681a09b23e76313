/* A program written only against the NCCL API (grid/nccl.h), linked with
 * libgrid_nccl.so: one rank of a job on an emulated fabric
 * (tests/nccl/nccl_test.sh). Rank 0 makes the unique id and hands it to the
 * others through a file; then every rank checks, element by element:
 * out-of-place float sums, in-place int32 sums, averages, a group of
 * operations, and the error codes for bad arguments and for ranks that
 * disagree on the count.
 *
 *   nccl_check RANK NRANKS ID_FILE
 * Exits 0 when every check holds, 1 otherwise (naming the check).
 */
#include <grid/nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank_;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "rank %d: FAILED %s: ", rank_, #cond); \
      fprintf(stderr, __VA_ARGS__);                          \
      fprintf(stderr, "\n");                                 \
      exit(1);                                               \
    }                                                        \
  } while (0)

#define NCCL_OK(call)                                                      \
  do {                                                                     \
    ncclResult_t r_ = (call);                                              \
    CHECK(r_ == ncclSuccess, "%s: %s (%s)", #call, ncclGetErrorString(r_), \
          ncclGetLastError(NULL));                                         \
  } while (0)

static void ShareId(int rank, const char* path, ncclUniqueId* id) {
  if (rank == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE* f = fopen(tmp, "wb");
    CHECK(f != NULL && fwrite(id, sizeof *id, 1, f) == 1 && fclose(f) == 0, "writing %s", tmp);
    CHECK(rename(tmp, path) == 0, "renaming %s", tmp);
    return;
  }
  for (int tries = 0; tries < 600; ++tries) { /* 60 s */
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      size_t n = fread(id, sizeof *id, 1, f);
      fclose(f);
      CHECK(n == 1, "reading %s", path);
      return;
    }
    usleep(100000);
  }
  CHECK(0, "no unique id in %s after 60 s", path);
}

/* Rank r's value at element i: small integers, exact in every type. */
static int Value(int r, size_t i, int op) { return (int)((r + 1) * 3 + (i % 97) + op * 5) - 60; }

int main(int argc, char** argv) {
  if (argc != 4 && !(argc == 5 && strcmp(argv[4], "rerun") == 0)) {
    fprintf(stderr, "usage: nccl_check RANK NRANKS ID_FILE [rerun]\n");
    return 2;
  }
  rank_ = atoi(argv[1]);
  const int nranks = atoi(argv[2]);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank_ == 0) NCCL_OK(ncclGetUniqueId(&id));
  ShareId(rank_, argv[3], &id);

  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  CHECK(version >= 21800, "version %d", version);

  ncclComm_t comm;
  if (argc == 5) {
    /* A second program on the same fabric, every rank started inside a
     * group (NCCL's idiom for several ranks per thread): the fence runs at
     * ncclGroupEnd and refuses the old run's slots, and the communicator
     * runs nothing. It used to skip the fence and sum with the old run's
     * results, reporting success. */
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank_));
    ncclResult_t r = ncclGroupEnd();
    CHECK(r == ncclSystemError, "a grouped init on a used fabric gave %d", r);
    CHECK(strstr(ncclGetLastError(comm), "earlier run") != NULL, "message: %s",
          ncclGetLastError(comm));
    int x = 1;
    r = ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL);
    CHECK(r == ncclSystemError && x == 1, "an allreduce after a failed fence gave %d, %d", r, x);
    CHECK(strstr(ncclGetLastError(comm), "never started") != NULL, "message: %s",
          ncclGetLastError(comm));
    NCCL_OK(ncclCommDestroy(comm));
    printf("rank %d: ok\n", rank_);
    return 0;
  }
  /* Ranks 2 and 3 start inside a group, their fence at ncclGroupEnd
   * meeting the others' (in ncclCommInitRank). */
  if (rank_ >= 2) NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank_));
  if (rank_ >= 2) NCCL_OK(ncclGroupEnd());
  int count = 0, me = -1;
  NCCL_OK(ncclCommCount(comm, &count));
  NCCL_OK(ncclCommUserRank(comm, &me));
  CHECK(count == nranks && me == rank_, "count %d rank %d", count, me);

  /* Bad arguments: a null communicator, a type and an op GRID does not
   * have, a CUDA stream; each is an error code with a message, and costs
   * the job nothing. */
  float one = 1;
  CHECK(ncclAllReduce(&one, &one, 1, ncclFloat, ncclSum, NULL, NULL) == ncclInvalidArgument,
        "null comm");
  CHECK(ncclAllReduce(&one, &one, 1, ncclDouble, ncclSum, comm, NULL) == ncclInvalidArgument,
        "ncclDouble");
  CHECK(strstr(ncclGetLastError(comm), "ncclFloat64") != NULL, "message: %s",
        ncclGetLastError(comm));
  CHECK(ncclAllReduce(&one, &one, 1, ncclFloat, ncclMax, comm, NULL) == ncclInvalidArgument,
        "ncclMax");
  CHECK(strstr(ncclGetLastError(comm), "ncclMax") != NULL, "message: %s", ncclGetLastError(comm));
  CHECK(ncclAllReduce(&one, &one, 1, ncclFloat, ncclSum, comm, (cudaStream_t)&one) ==
            ncclInvalidArgument,
        "a stream");
  CHECK(ncclAllReduce(NULL, &one, 1, ncclFloat, ncclSum, comm, NULL) == ncclInvalidArgument,
        "null sendbuf");

  const size_t n = 5000;
  float* fsend = malloc(n * sizeof(float));
  float* frecv = malloc(n * sizeof(float));
  int* ibuf = malloc(n * sizeof(int));
  int* group[3];
  CHECK(fsend && frecv && ibuf, "malloc");

  /* Out of place, float32 sum. */
  for (size_t i = 0; i < n; ++i) fsend[i] = (float)Value(rank_, i, 0);
  NCCL_OK(ncclAllReduce(fsend, frecv, n, ncclFloat, ncclSum, comm, NULL));
  for (size_t i = 0; i < n; ++i) {
    long want = 0;
    for (int r = 0; r < nranks; ++r) want += Value(r, i, 0);
    CHECK(frecv[i] == (float)want, "float sum element %zu: %g, not %ld", i, frecv[i], want);
    CHECK(fsend[i] == (float)Value(rank_, i, 0), "sendbuf changed at %zu", i);
  }

  /* In place, int32 sum. */
  for (size_t i = 0; i < n; ++i) ibuf[i] = Value(rank_, i, 1);
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  for (size_t i = 0; i < n; ++i) {
    int want = 0;
    for (int r = 0; r < nranks; ++r) want += Value(r, i, 1);
    CHECK(ibuf[i] == want, "int32 sum element %zu: %d, not %d", i, ibuf[i], want);
  }

  /* Average, float32, in place. */
  for (size_t i = 0; i < n; ++i) frecv[i] = (float)(Value(rank_, i, 2) * nranks);
  NCCL_OK(ncclAllReduce(frecv, frecv, n, ncclFloat, ncclAvg, comm, NULL));
  for (size_t i = 0; i < n; ++i) {
    long want = 0;
    for (int r = 0; r < nranks; ++r) want += Value(r, i, 2);
    CHECK(frecv[i] == (float)want, "float avg element %zu: %g, not %ld", i, frecv[i], want);
  }

  /* A group of three int32 sums of different sizes. */
  NCCL_OK(ncclGroupStart());
  for (int k = 0; k < 3; ++k) {
    group[k] = malloc((size_t)(k + 1) * 100 * sizeof(int));
    CHECK(group[k] != NULL, "malloc");
    for (int i = 0; i < (k + 1) * 100; ++i) group[k][i] = Value(rank_, (size_t)i, 3 + k);
    NCCL_OK(
        ncclAllReduce(group[k], group[k], (size_t)(k + 1) * 100, ncclInt32, ncclSum, comm, NULL));
  }
  NCCL_OK(ncclGroupEnd());
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < (k + 1) * 100; ++i) {
      int want = 0;
      for (int r = 0; r < nranks; ++r) want += Value(r, (size_t)i, 3 + k);
      CHECK(group[k][i] == want, "group op %d element %d: %d, not %d", k, i, group[k][i], want);
    }
    free(group[k]);
  }

  /* The ranks disagree on the count: every rank gets ncclInvalidUsage and
   * nothing is summed; the next operation works. */
  for (size_t i = 0; i < n; ++i) ibuf[i] = 7;
  ncclResult_t r =
      ncclAllReduce(ibuf, ibuf, rank_ == 1 ? n - 1 : n, ncclInt32, ncclSum, comm, NULL);
  CHECK(r == ncclInvalidUsage, "count mismatch gave %d (%s)", r, ncclGetLastError(comm));
  CHECK(strstr(ncclGetLastError(comm), "disagree") != NULL, "message: %s", ncclGetLastError(comm));
  CHECK(ibuf[0] == 7, "a mismatched operation changed the buffer");
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  CHECK(ibuf[n - 1] == 7 * nranks, "after the mismatch: %d", ibuf[n - 1]);

  /* The ranks queue different numbers of operations in a group (rank 0
   * two, the others three): every rank gets ncclInvalidUsage, nothing is
   * summed, and the communicator goes on. The check used to have a length
   * per operation, so rank 0's shorter one passed: it sent its data and
   * timed out, and the next operation timed out on every rank. */
  for (size_t i = 0; i < n; ++i) ibuf[i] = 7;
  NCCL_OK(ncclGroupStart());
  for (int k = 0; k < (rank_ == 0 ? 2 : 3); ++k) {
    r = ncclAllReduce(ibuf + k * 10, ibuf + k * 10, 10, ncclInt32, ncclSum, comm, NULL);
    CHECK(r == ncclSuccess, "queueing group op %d gave %d", k, r);
  }
  r = ncclGroupEnd();
  CHECK(r == ncclInvalidUsage, "a group of 2 against 3 gave %d (%s)", r, ncclGetLastError(comm));
  CHECK(strstr(ncclGetLastError(comm), "number of operations") != NULL, "message: %s",
        ncclGetLastError(comm));
  CHECK(ibuf[0] == 7 && ibuf[29] == 7, "a refused group changed the buffer");
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  CHECK(ibuf[n - 1] == 7 * nranks, "after the refused group: %d", ibuf[n - 1]);

  /* Overlapping buffers, on every rank: refused where they are given, and
   * the communicator goes on, its asynchronous error untouched. */
  r = ncclAllReduce(ibuf, ibuf + 1, n - 1, ncclInt32, ncclSum, comm, NULL);
  CHECK(r == ncclInvalidArgument, "overlapping buffers gave %d (%s)", r, ncclGetLastError(comm));
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  CHECK(ibuf[n - 1] == 7 * nranks * nranks, "after the overlap: %d", ibuf[n - 1]);

  /* Only the last rank passes a null buffer: every rank's call fails the
   * same way, nothing is summed, and every communicator goes on. The
   * refusing rank used to return at once, alone: the others' call was
   * matched against its next one ("ranks disagree"), and their next
   * operation timed out after 30 s, leaving them dead. */
  for (size_t i = 0; i < n; ++i) ibuf[i] = 7;
  r = ncclAllReduce(rank_ == nranks - 1 ? NULL : ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL);
  CHECK(r == ncclInvalidArgument, "one rank's null buffer gave %d (%s)", r,
        ncclGetLastError(comm));
  if (rank_ != nranks - 1) {
    char want[64];
    snprintf(want, sizeof want, "rank %d refused", nranks - 1);
    CHECK(strstr(ncclGetLastError(comm), want) != NULL, "message: %s", ncclGetLastError(comm));
  }
  CHECK(ibuf[0] == 7 && ibuf[n - 1] == 7, "a refused call changed the buffer");
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  CHECK(ibuf[n - 1] == 7 * nranks, "after one rank's refusal: %d", ibuf[n - 1]);
  /* The same inside a group: rank 1 queues an op GRID does not have; it is
   * refused there at once, and on every rank at ncclGroupEnd. */
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(ibuf, ibuf, 10, ncclInt32, ncclSum, comm, NULL));
  r = ncclAllReduce(ibuf + 10, ibuf + 10, 10, ncclInt32, rank_ == 1 ? ncclMax : ncclSum, comm,
                    NULL);
  CHECK(r == (rank_ == 1 ? ncclInvalidArgument : ncclSuccess), "queueing gave %d", r);
  r = ncclGroupEnd();
  CHECK(r == ncclInvalidArgument, "a group with one rank's bad op gave %d (%s)", r,
        ncclGetLastError(comm));
  CHECK(ibuf[0] == 7 * nranks, "a refused group changed the buffer");
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  CHECK(ibuf[n - 1] == 7 * nranks * nranks, "after the refused group: %d", ibuf[n - 1]);

  ncclResult_t async_error = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async_error));
  CHECK(async_error == ncclSuccess, "async error %d", async_error);
  /* Destroyed inside a group with an operation queued on it: the group
   * forgets both, and ncclGroupEnd has nothing left to run (it used to run
   * the operation on the freed communicator). */
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(ibuf, ibuf, n, ncclInt32, ncclSum, comm, NULL));
  NCCL_OK(ncclCommDestroy(comm));
  NCCL_OK(ncclGroupEnd());
  /* A second destroy is an error, not a use of freed memory (it crashed
   * every rank); a null communicator is nothing to destroy, as in NCCL. */
  r = ncclCommDestroy(comm);
  CHECK(r == ncclInvalidArgument, "a second destroy gave %d", r);
  CHECK(strstr(ncclGetLastError(NULL), "not a live communicator") != NULL, "message: %s",
        ncclGetLastError(NULL));
  NCCL_OK(ncclCommDestroy(NULL));
  free(fsend);
  free(frecv);
  free(ibuf);
  printf("rank %d: ok\n", rank_);
  return 0;
}
