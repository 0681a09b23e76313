/* An NCCL-compatible C API on GRID (libgrid_nccl.so; docs/nccl.md).
 *
 * A program written against NCCL's allreduce API compiles against this
 * header and links -lgrid_nccl instead of -lnccl: the names, types, enum
 * values and result codes are NCCL's. It implements the subset that
 * allreduce experiments use. Host buffers only, unless built with CUDA (this
 * build is not: a non-null stream is ncclInvalidArgument). Every call
 * returns when its result is in recvbuf; inside ncclGroupStart/End, when
 * ncclGroupEnd returns.
 *
 * Where the fabric comes from: ncclGetUniqueId records the rendezvous store
 * the environment names (GRID_STORE, or MASTER_ADDR/MASTER_PORT as
 * grid::Communicator::FromEnvironment reads them), which a grid-controller
 * (or rank 0 with GRID_TOPOLOGY) has filled. ncclCommInitRank joins through
 * it as rank `rank` of `nranks`.
 */
#ifndef GRID_NCCL_H_
#define GRID_NCCL_H_

#include <stddef.h>

#if defined(__GNUC__)
#define GRID_NCCL_API __attribute__((visibility("default")))
#else
#define GRID_NCCL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The NCCL API level this header follows (NCCL 2.18: 2 * 10000 + 18 * 100). */
#define NCCL_MAJOR 2
#define NCCL_MINOR 18
#define NCCL_PATCH 0
#define NCCL_VERSION_CODE 21800
#define NCCL_UNIQUE_ID_BYTES 128

/* CUDA's own declaration, repeated (identical typedefs may be repeated). */
typedef struct CUstream_st* cudaStream_t;

typedef struct ncclComm* ncclComm_t;

typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclNumTypes = 10
} ncclDataType_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5
} ncclRedOp_t;

GRID_NCCL_API ncclResult_t ncclGetVersion(int* version);
/* An id for one communicator: the store the environment names. */
GRID_NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id);
GRID_NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id,
                                            int rank);
/* ndev ranks of one job in this process (devlist is ignored: no devices). */
GRID_NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist);
GRID_NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm);
GRID_NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm);
GRID_NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
GRID_NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
/* The first error an operation of `comm` ended with, or ncclSuccess. */
GRID_NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error);
GRID_NCCL_API const char* ncclGetErrorString(ncclResult_t result);
/* The message of the last error: `comm`'s, or with a null comm this thread's. */
GRID_NCCL_API const char* ncclGetLastError(ncclComm_t comm);

/* Sum or average of `count` elements of every rank's sendbuf into every
 * rank's recvbuf (in place when they are equal). float, half, bfloat16 and
 * int32; ncclSum and ncclAvg. Ranks that disagree on count, type or op all
 * get ncclInvalidUsage (unless GRID_NCCL_CHECK=0), and nothing is summed. */
GRID_NCCL_API ncclResult_t ncclAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream);
GRID_NCCL_API ncclResult_t ncclGroupStart(void);
GRID_NCCL_API ncclResult_t ncclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* GRID_NCCL_H_ */
