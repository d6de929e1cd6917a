// ZeroOptimizer: the stages of zero.hpp's table, bucket by bucket.
#include "optim/zero.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "plexus/shard.hpp"

namespace plexus {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// The part of [lo, hi) inside [b0, b1), as a range of [b0, b1) (empty: both ends at the same edge).
std::pair<std::size_t, std::size_t> part(std::size_t lo, std::size_t hi, std::size_t b0, std::size_t b1) {
  return {std::clamp(lo, b0, b1), std::clamp(hi, b0, b1)};
}
}  // namespace

// One bucket's collective in flight and what to do with its result.
struct ZeroOptimizer::Pending {
  std::unique_ptr<Communicator::Request> request;
  int unit = -1;
  bool last_of_unit = false;
  Buffer<float> received;        // reduce-scatter: this rank's part of the bucket
  std::size_t own_begin = 0;     // flat index of that part
};

ZeroOptimizer::ZeroOptimizer(Backend& be, ProcessGrid& grid, std::vector<FlatTensor> tensors, ZeroOptions opt,
                             AdamParams hp)
    : be_(be), grid_(grid), dp_(grid.comm(Axis::D)), tensors_(std::move(tensors)), opt_(opt), hp_(hp) {
  if (opt_.stage < 0 || opt_.stage > 3) throw std::invalid_argument("ZeroOptimizer: stage must be 0..3");
  if (opt_.bucket_bytes < sizeof(float)) throw std::invalid_argument("ZeroOptimizer: bucket smaller than a float");
  bucket_ = opt_.bucket_bytes / sizeof(float);
  hp_.step = 1;
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const int u = tensors_[k].unit;
    if (u < 0 || u < units() - 1 || u > units())
      throw std::invalid_argument("ZeroOptimizer: a unit's tensors must be consecutive, units numbered in order");
    if (u == units()) {
      units_.emplace_back();
      units_.back().begin = flat_;
    }
    offset_.push_back(flat_);
    flat_ += tensors_[k].size;
    units_.back().end = flat_;
    units_.back().tensors.push_back(static_cast<int>(k));
  }
  const Range block = block_range(static_cast<index_t>(flat_), dp_.size(), dp_.rank());
  begin_ = static_cast<std::size_t>(block.begin);
  end_ = static_cast<std::size_t>(block.end);
  opt_begin_ = opt_.stage == 0 ? 0 : begin_;
  opt_end_ = opt_.stage == 0 ? flat_ : end_;
  {
    MemoryScope scope(be, MemoryKind::Parameters, "parameters");
    values_ = Buffer<float>(be, opt_.stage < 3 ? flat_ : shard_size());
  }
  {
    MemoryScope scope(be, MemoryKind::Gradients, "gradients");
    grads_ = Buffer<float>(be, opt_.stage < 2 ? flat_ : shard_size());
  }
  for (int u = 0; u < units(); ++u) bind_unit(u);
}

ZeroOptimizer::~ZeroOptimizer() {
  // Complete what is in flight before the buffers it reads go (an error unwound mid-pass).
  for (auto& p : pending_)
    if (p->request) p->request->wait();
  for (auto& u : units_)
    if (u.gather) u.gather->wait();
}

std::vector<std::size_t> ZeroOptimizer::counts(std::size_t b0, std::size_t b1) const {
  std::vector<std::size_t> c(static_cast<std::size_t>(dp_.size()));
  for (int r = 0; r < dp_.size(); ++r) {
    const Range blk = block_range(static_cast<index_t>(flat_), dp_.size(), r);
    const auto [lo, hi] = part(static_cast<std::size_t>(blk.begin), static_cast<std::size_t>(blk.end), b0, b1);
    c[static_cast<std::size_t>(r)] = hi - lo;
  }
  return c;
}

std::pair<std::size_t, std::size_t> ZeroOptimizer::own(std::size_t b0, std::size_t b1) const {
  return part(begin_, end_, b0, b1);
}

std::pair<std::size_t, std::size_t> ZeroOptimizer::opt_piece(std::size_t k) const {
  return part(opt_begin_, opt_end_, offset_[k], offset_[k] + tensors_[k].size);
}

template <class F>
void ZeroOptimizer::for_each_bucket(const Unit& u, F&& f) const {
  for (std::size_t c0 = u.begin; c0 < u.end; c0 += bucket_) f(c0, std::min(u.end, c0 + bucket_));
}

float* ZeroOptimizer::grad_at(std::size_t flat) { return grads_.data() + (opt_.stage < 2 ? flat : flat - begin_); }
float* ZeroOptimizer::value_at(std::size_t flat) { return values_.data() + (opt_.stage < 3 ? flat : flat - begin_); }

void ZeroOptimizer::bind_unit(int ui) {
  Unit& u = units_[static_cast<std::size_t>(ui)];
  for (const int k : u.tensors) {
    const std::size_t off = offset_[static_cast<std::size_t>(k)];
    float* value = opt_.stage < 3 ? values_.data() + off : u.values.data() ? u.values.data() + (off - u.begin) : nullptr;
    float* grad = opt_.stage < 2 ? grads_.data() + off : u.grads.data() ? u.grads.data() + (off - u.begin) : nullptr;
    tensors_[static_cast<std::size_t>(k)].bind(value, grad);
  }
}

// ---- the collectives over D (one replica: copies on the device, which SelfCommunicator cannot do)

std::unique_ptr<Communicator::Request> ZeroOptimizer::start_all_gather(const float* send, float* recv,
                                                                       const std::vector<std::size_t>& counts) {
  if (dp_.size() > 1) return dp_.iall_gather(send, recv, counts);
  if (send != recv && counts[0]) be_.copy_on_device(recv, send, counts[0] * sizeof(float));
  return nullptr;
}

std::unique_ptr<Communicator::Request> ZeroOptimizer::start_reduce_scatter(const float* send, float* recv,
                                                                           const std::vector<std::size_t>& counts) {
  if (dp_.size() > 1) return dp_.ireduce_scatter(send, recv, counts);
  if (counts[0]) be_.copy_on_device(recv, send, counts[0] * sizeof(float));
  return nullptr;
}

// ---- stage 3: gathering and freeing a unit's values ---------------------------------------------

void ZeroOptimizer::start_gather(int ui) {
  Unit& u = units_[static_cast<std::size_t>(ui)];
  if (u.values.data() || u.gather || u.end == u.begin) return;
  {
    MemoryScope scope(be_, MemoryKind::Workspace, "one unit's gathered parameters");
    u.values = Buffer<float>(be_, u.end - u.begin);
  }
  // This rank's part of the unit (nothing when its block lies elsewhere: then send points anywhere valid).
  const auto [lo, hi] = own(u.begin, u.end);
  const float* send = hi > lo ? values_.data() + (lo - begin_) : values_.data();
  u.gather = start_all_gather(send, u.values.data(), counts(u.begin, u.end));
}

void ZeroOptimizer::acquire(int ui, int prefetch) {
  if (opt_.stage < 3) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  start_gather(ui);
  if (u.gather) {
    u.gather->wait();
    u.gather.reset();
  }
  bind_unit(ui);
  if (prefetch >= 0 && prefetch < units()) start_gather(prefetch);
}

void ZeroOptimizer::release(int ui) {
  if (opt_.stage < 3) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  if (u.gather) {
    u.gather->wait();
    u.gather.reset();
  }
  u.values = Buffer<float>();
  bind_unit(ui);
}

// ---- gradients ------------------------------------------------------------------------------------

void ZeroOptimizer::begin_backward(int ui) {
  if (opt_.stage < 2) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  MemoryScope scope(be_, MemoryKind::Workspace, "one unit's gradients");
  if (!u.grads.data()) u.grads = Buffer<float>(be_, u.end - u.begin);  // zero-filled
  bind_unit(ui);
}

void ZeroOptimizer::end_backward(int ui) {
  if (opt_.stage < 2 && !last_micro_) return;  // accumulate in the whole gradient
  Unit& u = units_[static_cast<std::size_t>(ui)];
  if (reduce_start_ < 0) reduce_start_ = now_seconds();
  // One unit's reduction in flight at a time: the previous unit's overlapped this unit's
  // backward; completing it now bounds the gradients held (stages 2-3: two units at most).
  drain();
  for_each_bucket(u, [&](std::size_t c0, std::size_t c1) {
    auto p = std::make_unique<Pending>();
    p->unit = ui;
    p->last_of_unit = c1 == u.end;
    if (opt_.stage == 0) {
      p->request = dp_.iall_reduce(grads_.data() + c0, c1 - c0);
    } else {
      const auto [lo, hi] = own(c0, c1);
      p->own_begin = lo;
      {
        MemoryScope scope(be_, MemoryKind::Workspace, "a gradient bucket");
        p->received = Buffer<float>(be_, hi - lo);
      }
      const float* send = opt_.stage == 1 ? grads_.data() + c0 : u.grads.data() + (c0 - u.begin);
      p->request = start_reduce_scatter(send, p->received.data(), counts(c0, c1));
    }
    pending_.push_back(std::move(p));
  });
  if (u.end == u.begin && opt_.stage >= 2) {  // nothing to reduce: free at once
    u.grads = Buffer<float>();
    bind_unit(ui);
  }
  progress();
}

void ZeroOptimizer::complete(Pending& p) {
  if (p.received.size()) {  // stages 1-3 (stage 0 all-reduced in place)
    float* into = grad_at(p.own_begin);
    if (opt_.stage == 1)  // the reduced sum replaces this rank's part of the whole gradient
      be_.copy_on_device(into, p.received.data(), p.received.size() * sizeof(float));
    else  // accumulated over micro-batches in this rank's block
      be_.axpby(p.received.size(), 1.0f, p.received.data(), 1.0f, into);
    p.received = Buffer<float>();
  }
  if (p.last_of_unit && opt_.stage >= 2) {
    units_[static_cast<std::size_t>(p.unit)].grads = Buffer<float>();
    bind_unit(p.unit);
  }
}

void ZeroOptimizer::progress() {
  // Drives the collectives in flight (Open MPI progresses them only inside MPI calls) and
  // finishes those done, in the order they started.
  const auto done = [](Pending& p) { return !p.request || p.request->test(); };
  while (!pending_.empty() && done(*pending_.front())) {
    complete(*pending_.front());
    pending_.erase(pending_.begin());
  }
  for (std::size_t k = 1; k < pending_.size(); ++k) done(*pending_[k]);
}

void ZeroOptimizer::drain() {
  if (pending_.empty()) return;
  const double t0 = now_seconds();  // compute waits from here: exposed communication
  for (auto& p : pending_) {
    if (p->request) p->request->wait();
    complete(*p);
  }
  pending_.clear();
  stats_.exposed_seconds += now_seconds() - t0;
}

void ZeroOptimizer::finish_backward() {
  drain();
  if (reduce_start_ >= 0) stats_.reduce_seconds += now_seconds() - reduce_start_;
  reduce_start_ = -1;
}

void ZeroOptimizer::abort_pass() noexcept {
  for (auto& p : pending_)
    if (p->request) p->request->wait();
  pending_.clear();
  for (int ui = 0; ui < units(); ++ui) {
    Unit& u = units_[static_cast<std::size_t>(ui)];
    if (u.gather) u.gather->wait();
    u.gather.reset();
    if (opt_.stage >= 2) u.grads = Buffer<float>();
    if (opt_.stage == 3) u.values = Buffer<float>();
    bind_unit(ui);
  }
  reduce_start_ = -1;
}

void ZeroOptimizer::zero_grads() {
  if (grads_.size()) be_.fill(MatrixView{grads_.data(), 1, static_cast<index_t>(grads_.size()),
                                         static_cast<index_t>(grads_.size())},
                              0.0f);
}

// ---- the step -------------------------------------------------------------------------------------

double ZeroOptimizer::grad_squared_norm() {
  std::vector<NormPiece> pieces;
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const auto [lo, hi] = opt_piece(k);
    if (tensors_[k].owner && hi > lo) pieces.push_back({hi - lo, grad_at(lo)});
  }
  std::vector<double> norms(pieces.size());
  be_.transformer().squared_norms(pieces.data(), pieces.size(), norms.data());
  double sum = 0.0;
  for (const double v : norms) sum += v;
  // Stage 0: every replica holds the whole reduced gradient (sum over one replica); else each
  // element is in exactly one rank's block (sum over every rank).
  (opt_.stage == 0 ? grid_.replica() : grid_.world()).all_reduce(&sum, 1, ReduceOp::Sum);
  return sum;
}

void ZeroOptimizer::scale_grads(float s) {
  const std::size_t n = opt_end_ - opt_begin_;
  if (n) be_.axpby(n, s, grad_at(opt_begin_), 0.0f, grad_at(opt_begin_));
}

void ZeroOptimizer::step(float lr) {
  if (!m_.data() && opt_end_ > opt_begin_) {  // on first use: a model that only infers needs none
    MemoryScope scope(be_, MemoryKind::Optimizer, "Adam state");
    m_ = Buffer<float>(be_, opt_end_ - opt_begin_);
    v_ = Buffer<float>(be_, opt_end_ - opt_begin_);
  }
  hp_.lr = lr;
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const auto [lo, hi] = opt_piece(k);
    if (hi <= lo) continue;
    AdamParams hp = hp_;
    if (!tensors_[k].decay) hp.weight_decay = 0.0f;
    be_.adam_step(hi - lo, value_at(lo), grad_at(lo), m_.data() + (lo - opt_begin_), v_.data() + (lo - opt_begin_),
                  hp);
  }
  ++hp_.step;
  if (opt_.stage == 1 || opt_.stage == 2) {  // every replica takes the updated blocks
    be_.synchronize();
    std::vector<std::unique_ptr<Communicator::Request>> gathers;
    for (const Unit& u : units_)
      for_each_bucket(u, [&](std::size_t c0, std::size_t c1) {
        gathers.push_back(start_all_gather(values_.data() + own(c0, c1).first, values_.data() + c0, counts(c0, c1)));
      });
    for (auto& g : gathers)
      if (g) g->wait();
  }
}

void ZeroOptimizer::for_each_unit(const std::function<void(int unit)>& fn, bool store) {
  for (int ui = 0; ui < units(); ++ui) {
    acquire(ui);
    fn(ui);
    Unit& u = units_[static_cast<std::size_t>(ui)];
    if (store && opt_.stage == 3) {
      const auto [lo, hi] = own(u.begin, u.end);
      if (hi > lo)
        be_.copy_on_device(values_.data() + (lo - begin_), u.values.data() + (lo - u.begin), (hi - lo) * sizeof(float));
    }
    release(ui);
  }
}

}  // namespace plexus
