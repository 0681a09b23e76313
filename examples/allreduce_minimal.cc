// The smallest GRID program: every rank contributes rank + 1 to each of n
// elements, and checks that it gets back 1 + 2 + ... + world.
//
// Start a job's fabric first (docs/worker.md, "Bootstrap"), then one process
// per rank:
//   GRID_RANK=r GRID_STORE=file:/tmp/job ./allreduce_minimal
#include <cstdio>
#include <vector>

#include "grid/communicator.h"

int main() {
  auto comm = grid::Communicator::FromEnvironment();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = (*comm)->rank(), world = (*comm)->world_size();
  std::vector<float> x(1000, static_cast<float>(rank + 1));
  absl::Status s = (*comm)->AllReduce(x.data(), x.data(), x.size(), grid::DataType::kFloat32);
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
    return 1;
  }
  const float expected = world * (world + 1) / 2.0f;
  std::printf("rank %d of %d: x[0] = %g (expected %g)\n", rank, world, x[0], expected);
  return x[0] == expected ? 0 : 1;
}
