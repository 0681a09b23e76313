/* nccl_all_reduce_perf: nccl-tests' all_reduce_perf, written only against
 * the NCCL API (grid/nccl.h) and linked with libgrid_nccl.so: the same
 * program would link -lnccl. One process per rank; rank 0 makes the unique
 * id and hands it to the others in ID_FILE, and prints the table.
 *
 *   nccl_all_reduce_perf -i ID_FILE [-b 8K] [-e 1M] [-f 4] [-n 5] [-w 1]
 *                        [-d float|half|bfloat16|int32] [-o sum|avg] [-c 1]
 *   env: GRID_RANK / GRID_WORLD_SIZE (or RANK / WORLD_SIZE), GRID_STORE
 *
 * Columns as nccl-tests: size (B), count, type, redop, root (-1), then out
 * of place and in place: time (us), algbw = size / time (GB/s), busbw =
 * algbw * 2(n-1)/n (a ring's traffic factor; GRID sends each byte once, so
 * busbw overstates its traffic), #wrong. Then the average busbw.
 */
#include <grid/nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void Die(const char* what, ncclResult_t r) {
  fprintf(stderr, "nccl_all_reduce_perf: %s: %s (%s)\n", what, ncclGetErrorString(r),
          ncclGetLastError(NULL));
  exit(1);
}

static int EnvInt(const char* a, const char* b, int fallback) {
  const char* v = getenv(a);
  if (v == NULL) v = getenv(b);
  return v == NULL ? fallback : atoi(v);
}

static size_t Bytes(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Element i of rank r: a small integer, so that sums are exact in every type. */
static int Value(int r, size_t i) { return (int)((r + 1) * ((i % 7) + 1)); }

static void Fill(void* buf, size_t count, ncclDataType_t type, int rank) {
  for (size_t i = 0; i < count; ++i) {
    const int v = Value(rank, i);
    if (type == ncclInt32) {
      ((int32_t*)buf)[i] = v;
    } else if (type == ncclFloat32) {
      ((float*)buf)[i] = (float)v;
    } else {
      /* half and bfloat16 of a small integer, by its float32 bits. */
      float f = (float)v;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      uint16_t h;
      if (type == ncclBfloat16) {
        h = (uint16_t)(bits >> 16);
      } else {
        const int e = (int)((bits >> 23) & 0xff) - 127 + 15;
        h = (uint16_t)((bits >> 16 & 0x8000) | (uint32_t)(e << 10) | ((bits >> 13) & 0x3ff));
      }
      ((uint16_t*)buf)[i] = h;
    }
  }
}

static double Read(const void* buf, size_t i, ncclDataType_t type) {
  if (type == ncclInt32) return ((const int32_t*)buf)[i];
  if (type == ncclFloat32) return ((const float*)buf)[i];
  const uint16_t h = ((const uint16_t*)buf)[i];
  uint32_t bits;
  if (type == ncclBfloat16) {
    bits = (uint32_t)h << 16;
  } else {
    const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    bits = e == 0 ? 0 : ((uint32_t)(h & 0x8000) << 16) | ((e - 15 + 127) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static long Wrong(const void* buf, size_t count, ncclDataType_t type, ncclRedOp_t op, int n) {
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += Value(r, i);
    if (op == ncclAvg) want /= n;
    const double got = Read(buf, i, type);
    const double tolerance = type == ncclInt32 || type == ncclFloat32 ? 0 : 0.01 * want;
    wrong += got > want + tolerance || got < want - tolerance;
  }
  return wrong;
}

int main(int argc, char** argv) {
  const char* id_file = NULL;
  size_t min_bytes = 8192, max_bytes = 1 << 20;
  int factor = 4, iters = 5, warmup = 1, check = 1;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int c;
  while ((c = getopt(argc, argv, "i:b:e:f:n:w:d:o:c:")) != -1) {
    switch (c) {
      case 'i':
        id_file = optarg;
        break;
      case 'b':
        min_bytes = Bytes(optarg);
        break;
      case 'e':
        max_bytes = Bytes(optarg);
        break;
      case 'f':
        factor = atoi(optarg);
        break;
      case 'n':
        iters = atoi(optarg);
        break;
      case 'w':
        warmup = atoi(optarg);
        break;
      case 'c':
        check = atoi(optarg);
        break;
      case 'd':
        type = strcmp(optarg, "int32") == 0      ? ncclInt32
               : strcmp(optarg, "half") == 0     ? ncclFloat16
               : strcmp(optarg, "bfloat16") == 0 ? ncclBfloat16
                                                 : ncclFloat32;
        break;
      case 'o':
        op = strcmp(optarg, "avg") == 0 ? ncclAvg : ncclSum;
        break;
      default:
        fprintf(stderr,
                "usage: nccl_all_reduce_perf -i ID_FILE [-b 8K] [-e 1M] [-f 4] [-n 5] "
                "[-w 1] [-d float|half|bfloat16|int32] [-o sum|avg] [-c 1]\n");
        return 2;
    }
  }
  if (id_file == NULL || factor < 2 || iters < 1 || min_bytes < 4 || max_bytes < min_bytes) {
    fprintf(stderr, "nccl_all_reduce_perf: needs -i ID_FILE, -f >= 2, -n >= 1, 4 <= -b <= -e\n");
    return 2;
  }
  const int rank = EnvInt("GRID_RANK", "RANK", -1),
            nranks = EnvInt("GRID_WORLD_SIZE", "WORLD_SIZE", -1);
  if (rank < 0 || nranks < 1) {
    fprintf(stderr,
            "nccl_all_reduce_perf: set GRID_RANK and GRID_WORLD_SIZE (or RANK, WORLD_SIZE)\n");
    return 2;
  }
  ncclUniqueId id;
  ncclResult_t r;
  if (rank == 0) {
    if ((r = ncclGetUniqueId(&id)) != ncclSuccess) Die("ncclGetUniqueId", r);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", id_file);
    FILE* f = fopen(tmp, "wb");
    if (f == NULL || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, id_file)) {
      fprintf(stderr, "nccl_all_reduce_perf: cannot write %s\n", id_file);
      return 1;
    }
  } else {
    int tries = 0;
    FILE* f;
    while ((f = fopen(id_file, "rb")) == NULL && ++tries < 600) usleep(100000);
    if (f == NULL || fread(&id, sizeof id, 1, f) != 1) {
      fprintf(stderr, "nccl_all_reduce_perf: no id in %s after 60 s\n", id_file);
      return 1;
    }
    fclose(f);
  }
  ncclComm_t comm;
  if ((r = ncclCommInitRank(&comm, nranks, id, rank)) != ncclSuccess) Die("ncclCommInitRank", r);

  const size_t elem = type == ncclInt32 || type == ncclFloat32 ? 4 : 2;
  const char* type_name = type == ncclInt32      ? "int32"
                          : type == ncclFloat16  ? "half"
                          : type == ncclBfloat16 ? "bfloat16"
                                                 : "float";
  void* send = malloc(max_bytes);
  void* recv = malloc(max_bytes);
  if (send == NULL || recv == NULL) return 1;
  if (rank == 0) {
    printf("# nccl_all_reduce_perf on libgrid_nccl: %d ranks, %s, %s\n", nranks, type_name,
           op == ncclAvg ? "avg" : "sum");
    printf("#%62s%32s\n", "out-of-place", "in-place");
    printf("#%11s %12s %8s %6s %6s %8s %7s %7s %6s %8s %7s %7s %6s\n", "size", "count", "type",
           "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("#%11s %12s %8s %6s %6s %8s %7s %7s %6s %8s %7s %7s %6s\n", "(B)", "(elements)", "", "",
           "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  double bus_sum = 0;
  int rows = 0;
  long all_wrong = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= (size_t)factor) {
    const size_t count = bytes / elem;
    double us[2];
    long wrong[2];
    for (int in_place = 0; in_place < 2; ++in_place) {
      void* out = in_place ? send : recv;
      for (int k = 0; k < warmup + iters; ++k) {
        Fill(send, count, type, rank);
        const double t0 = Now();
        if ((r = ncclAllReduce(send, out, count, type, op, comm, NULL)) != ncclSuccess)
          Die("ncclAllReduce", r);
        if (k == warmup) us[in_place] = 0;
        if (k >= warmup) us[in_place] += (Now() - t0) * 1e6;
      }
      us[in_place] /= iters;
      wrong[in_place] = check ? Wrong(out, count, type, op, nranks) : -1;
      all_wrong += wrong[in_place] > 0 ? wrong[in_place] : 0;
    }
    const double bus_factor = 2.0 * (nranks - 1) / nranks;
    double algbw[2], busbw[2];
    for (int k = 0; k < 2; ++k) {
      algbw[k] = (double)(count * elem) / us[k] / 1e3;
      busbw[k] = algbw[k] * bus_factor;
    }
    bus_sum += busbw[1];
    ++rows;
    if (rank == 0) {
      printf(" %11zu %12zu %8s %6s %6d %8.1f %7.4f %7.4f %6ld %8.1f %7.4f %7.4f %6ld\n",
             count * elem, count, type_name, op == ncclAvg ? "avg" : "sum", -1, us[0], algbw[0],
             busbw[0], wrong[0], us[1], algbw[1], busbw[1], wrong[1]);
      fflush(stdout);
    }
  }
  if (rank == 0) {
    printf("# Out of bounds values : %ld %s\n", all_wrong, all_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n", rows ? bus_sum / rows : 0.0);
  }
  if ((r = ncclCommDestroy(comm)) != ncclSuccess) Die("ncclCommDestroy", r);
  free(send);
  free(recv);
  return all_wrong ? 1 : 0;
}
