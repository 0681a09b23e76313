// Data-parallel training of a small model through GRID, checked against the
// same training in one process in float64.
//
// The model is a logistic regression on a synthetic, seeded data set (so every
// rank can rebuild all of it). Each rank computes the gradient of its shard in
// float32; GRID averages the gradients across ranks; every rank applies the
// same update. Rank 0 also trains the reference: one process, the whole data
// set, float64. It prints both loss curves and fails if they drift apart by
// more than kTolerance (docs/numerics.md explains the bound).
//
//   GRID_RANK=r GRID_STORE=file:/tmp/job ./train_data_parallel [steps]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "grid/communicator.h"

namespace {

constexpr int kFeatures = 256;
constexpr int kSamplesPerRank = 512;
constexpr double kLearningRate = 0.5;
// The two curves may differ by this much, relative. GRID's part is the
// quantization error of the averaged gradient, at most 2^-26 of each block's
// largest |sum| (docs/numerics.md); float32 arithmetic in the model itself
// adds about 2^-24 per operation. Over a few hundred steps of this convex
// problem both stay far below 1e-4.
constexpr double kTolerance = 1e-4;

// Sample i of the global data set: features in [-1, 1], label from a fixed
// hidden weight vector, with 10% of the labels flipped.
struct Data {
  std::vector<float> x;  // samples x kFeatures
  std::vector<float> y;
};

uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double Uniform(uint64_t key) { return static_cast<double>(Mix(key) >> 11) * 0x1p-53; }

Data MakeData(int first_sample, int samples) {
  Data d;
  d.x.resize(static_cast<size_t>(samples) * kFeatures);
  d.y.resize(samples);
  for (int s = 0; s < samples; ++s) {
    const uint64_t id = static_cast<uint64_t>(first_sample + s);
    double dot = 0;
    for (int f = 0; f < kFeatures; ++f) {
      const double v = 2 * Uniform(id * 1000003 + f) - 1;
      d.x[static_cast<size_t>(s) * kFeatures + f] = static_cast<float>(v);
      dot += v * (2 * Uniform(7777777 + f) - 1);  // the hidden weights
    }
    const bool flip = Uniform(id * 31 + 5) < 0.1;
    d.y[s] = (dot > 0) != flip ? 1.0f : 0.0f;
  }
  return d;
}

// Mean logistic loss and its gradient, in T arithmetic.
template <typename T>
T LossAndGradient(const Data& d, const std::vector<T>& w, std::vector<T>& grad) {
  const int samples = static_cast<int>(d.y.size());
  grad.assign(kFeatures, 0);
  T loss = 0;
  for (int s = 0; s < samples; ++s) {
    T z = 0;
    for (int f = 0; f < kFeatures; ++f) z += w[f] * d.x[static_cast<size_t>(s) * kFeatures + f];
    const T p = 1 / (1 + std::exp(-z));
    const T y = d.y[s];
    loss -= y * std::log(std::max<T>(p, 1e-12)) + (1 - y) * std::log(std::max<T>(1 - p, 1e-12));
    for (int f = 0; f < kFeatures; ++f) {
      grad[f] += (p - y) * d.x[static_cast<size_t>(s) * kFeatures + f];
    }
  }
  for (T& g : grad) g /= samples;
  return loss / samples;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100;
  auto comm = grid::Communicator::FromEnvironment();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  grid::Communicator& c = **comm;
  const int rank = c.rank(), world = c.world_size();
  const Data shard = MakeData(rank * kSamplesPerRank, kSamplesPerRank);
  Data all;  // rank 0: the reference's whole data set
  if (rank == 0) all = MakeData(0, world * kSamplesPerRank);

  std::vector<float> w(kFeatures, 0), grad;
  std::vector<double> w64(kFeatures, 0), grad64;
  double worst = 0;
  for (int step = 0; step < steps; ++step) {
    const float local_loss = LossAndGradient<float>(shard, w, grad);
    // The shards are equal in size: the global gradient and loss are the
    // averages of the local ones. The loss travels with the gradient.
    grad.push_back(local_loss);
    absl::Status s = c.AllReduce(grad.data(), grad.data(), grad.size(), grid::DataType::kFloat32,
                                 grid::ReduceOp::kSum, {.average = true});
    if (!s.ok()) {
      std::fprintf(stderr, "rank %d step %d: %s\n", rank, step, s.ToString().c_str());
      return 1;
    }
    const float loss = grad.back();
    grad.pop_back();
    for (int f = 0; f < kFeatures; ++f) w[f] -= static_cast<float>(kLearningRate) * grad[f];
    if (rank == 0) {
      const double loss64 = LossAndGradient<double>(all, w64, grad64);
      for (int f = 0; f < kFeatures; ++f) w64[f] -= kLearningRate * grad64[f];
      const double diff = std::fabs(loss - loss64) / loss64;
      worst = std::max(worst, diff);
      if (step % 10 == 0 || step == steps - 1) {
        std::printf("step %3d  loss grid %.7f  float64 %.7f  rel. diff %.2e\n", step, loss, loss64,
                    diff);
      }
    }
  }
  if (rank == 0) {
    std::printf("largest relative difference %.2e (tolerance %.0e): %s\n", worst, kTolerance,
                worst <= kTolerance ? "OK" : "TOO LARGE");
    return worst <= kTolerance ? 0 : 1;
  }
  return 0;
}
