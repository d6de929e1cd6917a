// The kernels' work by name (src/plan/kernel_work.hpp).
#include "plan/kernel_work.hpp"

#include <stdexcept>

#include "plan/dry_run.hpp"
#include "plan/gnn_plan.hpp"

namespace plexus {

KernelWorkRecorder::KernelWorkRecorder(ShapeBackend& backend) : backend_(backend) {
  if (backend.observer()) throw std::logic_error("KernelWorkRecorder: the backend is observed already");
  backend.set_observer(this);
}

KernelWorkRecorder::~KernelWorkRecorder() { backend_.set_observer(nullptr); }

// Calls are not nested (the backend hides its observer while a kernel runs).
void KernelWorkRecorder::begin(const char*) { at_begin_ = backend_.counts(); }

void KernelWorkRecorder::end(const char* kernel) {
  const ShapeCounts& now = backend_.counts();
  KernelWork& w = work_[kernel];
  ++w.calls;
  w.flops += (now.gemm_flops - at_begin_.gemm_flops) + (now.spmm_flops - at_begin_.spmm_flops);
  w.bytes += (now.spmm_bytes - at_begin_.spmm_bytes) + (now.stream_bytes - at_begin_.stream_bytes);
  w.draws += now.random_draws - at_begin_.random_draws;
}

std::map<std::string, KernelWork> gnn_epoch_kernel_work(const ProblemSize& p) {
  std::map<std::string, KernelWork> work;
  dry_run_gnn_rank(p, GridShape{1, 1, 1}, 0, [&](ShapeBackend& be, const std::function<void()>& epoch) {
    const KernelWorkRecorder recorder(be);
    epoch();
    work = recorder.work();
  });
  return work;
}

}  // namespace plexus
