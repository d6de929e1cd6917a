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

// A call reported to the observer: begun when made, ended when it returns (or throws).
class ZeroOptimizer::Reported {
 public:
  Reported(ZeroOptimizer& z, const ZeroCall& call) : z_(z), call_(call), on_(z.observer_ && z.reporting_ == 0) {
    ++z_.reporting_;
    if (on_) z_.observer_->begin(call_);
  }
  ~Reported() {
    --z_.reporting_;
    if (on_) z_.observer_->end(call_);
  }
  Reported(const Reported&) = delete;
  Reported& operator=(const Reported&) = delete;

 private:
  ZeroOptimizer& z_;
  ZeroCall call_;
  bool on_;
};

namespace {
ZeroCall call(ZeroCall::Op op, int unit = -1, int arg = -1, float value = 0.0f) {
  ZeroCall c;
  c.op = op;
  c.unit = unit;
  c.arg = arg;
  c.value = value;
  return c;
}
thread_local ZeroObserver* t_observer = nullptr;
}  // namespace

ZeroObserverScope::ZeroObserverScope(ZeroObserver* observer) : previous_(t_observer) { t_observer = observer; }
ZeroObserverScope::~ZeroObserverScope() { t_observer = previous_; }
ZeroObserver* ZeroObserverScope::current() { return t_observer; }

// One bucket's collective in flight and what to do with its result.
struct ZeroOptimizer::Pending {
  std::unique_ptr<Communicator::Request> request;
  int unit = -1;
  bool last_of_unit = false;
  Buffer<float> received;        // reduce-scatter: this rank's part of the bucket
  Buffer<bf16> received16;       // the same, BF16
  std::size_t own_begin = 0;     // flat index of that part
};

ZeroOptimizer::ZeroOptimizer(Backend& be, ProcessGrid& grid, std::vector<FlatTensor> tensors, ZeroOptions opt,
                             AdamParams hp)
    : be_(be), grid_(grid), dp_(grid.comm(Axis::D)), tensors_(std::move(tensors)), opt_(opt), hp_(hp) {
  if (opt_.stage < 0 || opt_.stage > 3) throw std::invalid_argument("ZeroOptimizer: stage must be 0..3");
  observer_ = ZeroObserverScope::current();
  if (observer_) observer_->constructed(tensors_, opt_, hp);
  const Reported reported(*this, call(ZeroCall::Op::Construct));
  if (opt_.bucket_bytes < sizeof(float)) throw std::invalid_argument("ZeroOptimizer: bucket smaller than a float");
  bucket_ = opt_.bucket_bytes / (half() ? sizeof(bf16) : sizeof(float));
  hp_.step = 1;
  offset_.reserve(tensors_.size());
  units_.reserve(tensors_.empty() ? 0 : std::min(tensors_.size(), static_cast<std::size_t>(std::max(0, tensors_.back().unit)) + 1));
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const int u = tensors_[k].unit;
    if (u < 0 || u < units() - 1 || u > units())
      throw std::invalid_argument("ZeroOptimizer: a unit's tensors must be consecutive, units numbered in order");
    if (u == units()) {
      units_.emplace_back();
      units_.back().begin = flat_;
      units_.back().first_tensor = static_cast<int>(k);
    }
    offset_.push_back(flat_);
    binds_ = binds_ || static_cast<bool>(tensors_[k].bind);
    flat_ += tensors_[k].size;
    units_.back().end = flat_;
    units_.back().end_tensor = static_cast<int>(k) + 1;
  }
  // Every replica's block, as block_range cuts them: `extra_` blocks of base_ + 1, then base_
  // (computed, not listed: a plan dry-runs ranks of up to 65,536 replicas, each optimizer once).
  replicas_ = static_cast<std::size_t>(dp_.size());
  every_count_ = dp_.reads_every_count();
  base_ = flat_ / replicas_;
  extra_ = flat_ % replicas_;
  const Range block = block_range(static_cast<index_t>(flat_), dp_.size(), dp_.rank());
  begin_ = static_cast<std::size_t>(block.begin);
  end_ = static_cast<std::size_t>(block.end);
  opt_begin_ = opt_.stage == 0 ? 0 : begin_;
  opt_end_ = opt_.stage == 0 ? flat_ : end_;
  const std::size_t n_values = opt_.stage < 3 ? flat_ : shard_size();
  const std::size_t n_grads = !opt_.gradients ? 0 : opt_.stage < 2 ? flat_ : shard_size();
  {
    MemoryScope scope(be, MemoryKind::Parameters, "parameters");
    if (half())
      values16_ = Buffer<bf16>(be, n_values);
    else
      values_ = Buffer<float>(be, n_values);
  }
  {
    MemoryScope scope(be, MemoryKind::Gradients, "gradients");
    if (half())
      grads16_ = Buffer<bf16>(be, n_grads);
    else
      grads_ = Buffer<float>(be, n_grads);
  }
  if (half()) {  // written with the parameters (for_each_unit), so it holds them exactly
    MemoryScope scope(be, MemoryKind::Optimizer, "fp32 master parameters");
    master_ = Buffer<float>(be, opt_end_ - opt_begin_);
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

inline std::size_t ZeroOptimizer::block_start(std::size_t r) const {
  return r >= replicas_ ? flat_ : r * base_ + std::min(r, extra_);
}

inline std::size_t ZeroOptimizer::last_block_from(std::size_t i) const {
  // The last replica whose block starts at or before flat index i (the one holding i, when
  // i < Ψ: blocks start in order, the empty ones of base_ 0 at Ψ).
  if (base_ == 0) return i >= extra_ ? replicas_ - 1 : i;
  const std::size_t wide = extra_ * (base_ + 1);  // where the blocks of base_ + 1 end
  if (i < wide) return i / (base_ + 1);
  return std::min(replicas_ - 1, extra_ + (i - wide) / base_);
}

ZeroOptimizer::Counts ZeroOptimizer::counts(std::size_t b0, std::size_t b1) const {
  // Only the replicas whose blocks meet [b0, b1) hold any of it: found from block_range's cut and
  // written into one vector kept zero elsewhere (the previous call's entries cleared), with no
  // allocation. Their sum and largest value go with them (Communicator::CountsSum) in O(1); a
  // communicator that reads only its own count (a plan's) gets only that one written: a plan's
  // dry runs call this for each of tens of thousands of buckets, with up to 65,536 replicas.
  const std::size_t replicas = replicas_;
  if (counts_.size() != replicas) counts_.assign(replicas, 0);
  std::fill(counts_.begin() + static_cast<std::ptrdiff_t>(counts_set_.first),
            counts_.begin() + static_cast<std::ptrdiff_t>(counts_set_.second), 0);
  counts_set_ = {0, 0};
  if (b1 <= b0) return {counts_, {0, 0}};  // nothing to count
  // Replicas first..last meet [b0, b1): the two ends in part, those between with their whole
  // blocks (base_ + 1 for the first extra_ replicas, then base_).
  const std::size_t first = last_block_from(b0), last = last_block_from(b1 - 1);
  const auto count_of = [&](std::size_t r) {
    if (r < first || r > last) return std::size_t{0};
    const auto [lo, hi] = part(block_start(r), block_start(r + 1), b0, b1);
    return hi - lo;
  };
  Communicator::CountsSum sum;
  sum.total = b1 - b0;  // the blocks tile [0, Ψ)
  sum.max = std::max(count_of(first), count_of(last));
  if (last > first + 1) sum.max = std::max(sum.max, base_ + (first + 1 < extra_ ? 1 : 0));
  if (every_count_) {
    for (std::size_t r = first; r <= last; ++r) counts_[r] = count_of(r);
    counts_set_ = {first, last + 1};
  } else {
    const auto own = static_cast<std::size_t>(dp_.rank());
    counts_[own] = count_of(own);
    counts_set_ = {own, own + 1};
  }
  return {counts_, sum};
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

std::vector<std::size_t> ZeroOptimizer::cuts() const {
  std::vector<std::size_t> c(offset_.begin(), offset_.end());
  for (const Unit& u : units_)
    for_each_bucket(u, [&](std::size_t c0, std::size_t) { c.push_back(c0); });
  c.push_back(flat_);
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

float* ZeroOptimizer::grad_at(std::size_t flat) { return grads_.data() + (opt_.stage < 2 ? flat : flat - begin_); }
float* ZeroOptimizer::value_at(std::size_t flat) { return values_.data() + (opt_.stage < 3 ? flat : flat - begin_); }
bf16* ZeroOptimizer::grad16_at(std::size_t flat) { return grads16_.data() + (opt_.stage < 2 ? flat : flat - begin_); }
bf16* ZeroOptimizer::value16_at(std::size_t flat) {
  return values16_.data() + (opt_.stage < 3 ? flat : flat - begin_);
}

void ZeroOptimizer::bind_unit(int ui) {
  if (!binds_) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  for (int k = u.first_tensor; k < u.end_tensor; ++k) {
    if (!tensors_[static_cast<std::size_t>(k)].bind) continue;
    const std::size_t off = offset_[static_cast<std::size_t>(k)];
    float* value = !working_values() ? values_.data() + off
                   : u.values.data() ? u.values.data() + (off - u.begin)
                                     : nullptr;
    float* grad = !opt_.gradients  ? nullptr
                  : !working_grads() ? grads_.data() + off
                  : u.grads.data()   ? u.grads.data() + (off - u.begin)
                                     : nullptr;
    tensors_[static_cast<std::size_t>(k)].bind(value, grad);
  }
}

// ---- the collectives over D (one replica: a copy on the device, no collective to wait for)

template <class T>
std::unique_ptr<Communicator::Request> ZeroOptimizer::start_all_gather(const T* send, T* recv, const Counts& counts) {
  if (dp_.size() > 1) return dp_.iall_gather(send, recv, counts.each, counts.sum);
  if (send != recv && counts.each[0]) be_.copy_on_device(recv, send, counts.each[0] * sizeof(T));
  return nullptr;
}

template <class T>
std::unique_ptr<Communicator::Request> ZeroOptimizer::start_reduce_scatter(const T* send, T* recv, const Counts& counts) {
  if (dp_.size() > 1) return dp_.ireduce_scatter(send, recv, counts.each, counts.sum);
  if (counts.each[0]) be_.copy_on_device(recv, send, counts.each[0] * sizeof(T));
  return nullptr;
}

// ---- stage 3: gathering and freeing a unit's values ---------------------------------------------

void ZeroOptimizer::start_gather(int ui) {
  Unit& u = units_[static_cast<std::size_t>(ui)];
  if (opt_.stage < 3 || u.values.data() || u.gathered16.data() || u.gather || u.end == u.begin) return;
  // This rank's part of the unit (nothing when its block lies elsewhere: then send points anywhere valid).
  const auto [lo, hi] = own(u.begin, u.end);
  const std::size_t at = hi > lo ? lo - begin_ : 0;
  MemoryScope scope(be_, MemoryKind::Workspace, "one unit's gathered parameters");
  if (half()) {
    u.gathered16 = Buffer<bf16>(be_, u.end - u.begin);
    u.gather = start_all_gather(values16_.data() + at, u.gathered16.data(), counts(u.begin, u.end));
  } else {
    u.values = Buffer<float>(be_, u.end - u.begin);
    u.gather = start_all_gather(values_.data() + at, u.values.data(), counts(u.begin, u.end));
  }
}

void ZeroOptimizer::begin_micro_batch(bool last) {
  const Reported reported(*this, call(ZeroCall::Op::BeginMicroBatch, -1, last ? 1 : 0));
  last_micro_ = last;
}

void ZeroOptimizer::acquire(int ui, int prefetch) {
  const Reported reported(*this, call(ZeroCall::Op::Acquire, ui, prefetch));
  if (!working_values()) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  start_gather(ui);
  if (u.gather) {
    u.gather->wait();
    u.gather.reset();
  }
  if (half() && !u.values.data() && u.end > u.begin) {  // the fp32 working copy the layers read
    {
      MemoryScope scope(be_, MemoryKind::Workspace, "one unit's fp32 parameters");
      u.values = Buffer<float>(be_, u.end - u.begin);
    }
    be_.from_bf16(u.end - u.begin, opt_.stage < 3 ? values16_.data() + u.begin : u.gathered16.data(), u.values.data());
    u.gathered16 = Buffer<bf16>();
  }
  bind_unit(ui);
  if (prefetch >= 0 && prefetch < units()) start_gather(prefetch);
}

void ZeroOptimizer::release(int ui) {
  const Reported reported(*this, call(ZeroCall::Op::Release, ui));
  if (!working_values()) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  if (u.gather) {
    u.gather->wait();
    u.gather.reset();
  }
  u.values = Buffer<float>();
  u.gathered16 = Buffer<bf16>();
  bind_unit(ui);
}

// ---- gradients ------------------------------------------------------------------------------------

void ZeroOptimizer::begin_backward(int ui) {
  const Reported reported(*this, call(ZeroCall::Op::BeginBackward, ui));
  if (!opt_.gradients) throw std::logic_error("ZeroOptimizer: a backward pass of a model built without gradients");
  if (!working_grads()) return;
  Unit& u = units_[static_cast<std::size_t>(ui)];
  MemoryScope scope(be_, MemoryKind::Workspace, half() ? "one unit's fp32 gradients" : "one unit's gradients");
  if (!u.grads.data()) u.grads = Buffer<float>(be_, u.end - u.begin);  // zero-filled
  bind_unit(ui);
}

void ZeroOptimizer::round_unit_grads(Unit& u) {
  const std::size_t n = u.end - u.begin;
  if (n && u.grads.data()) {
    if (opt_.stage < 2) {  // accumulated over micro-batches in the whole 16-bit gradient
      be_.to_bf16(n, u.grads.data(), 1.0f, grads16_.data() + u.begin);
    } else {  // what the reduce-scatter sends
      {
        MemoryScope scope(be_, MemoryKind::Workspace, "one unit's gradients");
        u.grads16 = Buffer<bf16>(be_, n);
      }
      be_.to_bf16(n, u.grads.data(), 0.0f, u.grads16.data());
    }
  }
  u.grads = Buffer<float>();
}

std::unique_ptr<Communicator::Request> ZeroOptimizer::start_bucket(Unit& u, std::size_t c0, std::size_t c1,
                                                                   Pending& p) {
  if (opt_.stage == 0) return half() ? dp_.iall_reduce(grads16_.data() + c0, c1 - c0)
                                     : dp_.iall_reduce(grads_.data() + c0, c1 - c0);
  const auto [lo, hi] = own(c0, c1);
  p.own_begin = lo;
  MemoryScope scope(be_, MemoryKind::Workspace, "a gradient bucket");
  if (half()) {
    p.received16 = Buffer<bf16>(be_, hi - lo);
    const bf16* send = opt_.stage == 1 ? grads16_.data() + c0 : u.grads16.data() + (c0 - u.begin);
    return start_reduce_scatter(send, p.received16.data(), counts(c0, c1));
  }
  p.received = Buffer<float>(be_, hi - lo);
  const float* send = opt_.stage == 1 ? grads_.data() + c0 : u.grads.data() + (c0 - u.begin);
  return start_reduce_scatter(send, p.received.data(), counts(c0, c1));
}

void ZeroOptimizer::end_backward(int ui) {
  const Reported reported(*this, call(ZeroCall::Op::EndBackward, ui));
  Unit& u = units_[static_cast<std::size_t>(ui)];
  if (half()) {
    round_unit_grads(u);
    bind_unit(ui);
  }
  if (opt_.stage < 2 && !last_micro_) return;  // accumulate in the whole gradient
  if (reduce_start_ < 0) reduce_start_ = now_seconds();
  // One unit's reduction in flight at a time: the previous unit's overlapped this unit's
  // backward; completing it now bounds the gradients held (stages 2-3: two units at most).
  drain();
  for_each_bucket(u, [&](std::size_t c0, std::size_t c1) {
    std::unique_ptr<Pending> p;
    if (spare_.empty()) {
      p = std::make_unique<Pending>();
    } else {
      p = std::move(spare_.back());
      spare_.pop_back();
    }
    p->unit = ui;
    p->last_of_unit = c1 == u.end;
    p->request = start_bucket(u, c0, c1, *p);
    pending_.push_back(std::move(p));
  });
  if (u.end == u.begin && opt_.stage >= 2) {  // nothing to reduce: free at once
    u.grads = Buffer<float>();
    u.grads16 = Buffer<bf16>();
    bind_unit(ui);
  }
  progress();
}

void ZeroOptimizer::complete(Pending& p) {
  if (p.received16.size()) {  // BF16, as below
    bf16* into = grad16_at(p.own_begin);
    const std::size_t n = p.received16.size();
    if (opt_.stage == 1) {
      be_.copy_on_device(into, p.received16.data(), n * sizeof(bf16));
    } else {  // widened, added, rounded: a 16-bit accumulation has no add of its own
      Buffer<float> sum;
      {
        MemoryScope scope(be_, MemoryKind::Workspace, "a gradient bucket");
        sum = Buffer<float>(be_, n);
      }
      be_.from_bf16(n, p.received16.data(), sum.data());
      be_.to_bf16(n, sum.data(), 1.0f, into);
    }
    p.received16 = Buffer<bf16>();
  }
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
    units_[static_cast<std::size_t>(p.unit)].grads16 = Buffer<bf16>();
    bind_unit(p.unit);
  }
}

void ZeroOptimizer::recycle(std::unique_ptr<Pending> p) {
  // complete() left its buffers empty; the request is done with.
  p->request.reset();
  p->own_begin = 0;
  spare_.push_back(std::move(p));
}

void ZeroOptimizer::progress() {
  // Drives the collectives in flight (Open MPI progresses them only inside MPI calls) and
  // finishes those done, in the order they started.
  const auto done = [](Pending& p) { return !p.request || p.request->test(); };
  while (!pending_.empty() && done(*pending_.front())) {
    complete(*pending_.front());
    recycle(std::move(pending_.front()));
    pending_.pop_front();
  }
  for (std::size_t k = 1; k < pending_.size(); ++k) done(*pending_[k]);
}

void ZeroOptimizer::drain() {
  if (pending_.empty()) return;
  const double t0 = now_seconds();  // compute waits from here: exposed communication
  for (auto& p : pending_) {
    if (p->request) p->request->wait();
    complete(*p);
    recycle(std::move(p));
  }
  pending_.clear();
  stats_.exposed_seconds += now_seconds() - t0;
}

void ZeroOptimizer::finish_backward() {
  const Reported reported(*this, call(ZeroCall::Op::FinishBackward));
  drain();
  if (reduce_start_ >= 0) stats_.reduce_seconds += now_seconds() - reduce_start_;
  reduce_start_ = -1;
}

void ZeroOptimizer::abort_pass() noexcept {
  const Reported reported(*this, call(ZeroCall::Op::AbortPass));
  for (auto& p : pending_)
    if (p->request) p->request->wait();
  pending_.clear();
  for (int ui = 0; ui < units(); ++ui) {
    Unit& u = units_[static_cast<std::size_t>(ui)];
    if (u.gather) u.gather->wait();
    u.gather.reset();
    if (working_grads()) u.grads = Buffer<float>();
    if (working_values()) u.values = Buffer<float>();
    u.grads16 = Buffer<bf16>();
    u.gathered16 = Buffer<bf16>();
    bind_unit(ui);
  }
  reduce_start_ = -1;
}

void ZeroOptimizer::zero_grads() {
  const Reported reported(*this, call(ZeroCall::Op::ZeroGrads));
  grad_scale_ = 1.0f;
  if (half()) {  // no 16-bit fill kernel: a fresh zero-filled buffer, the old one freed first
    const std::size_t n = grads16_.size();
    grads16_ = Buffer<bf16>();
    MemoryScope scope(be_, MemoryKind::Gradients, "gradients");
    grads16_ = Buffer<bf16>(be_, n);
    return;
  }
  if (grads_.size()) be_.fill(MatrixView{grads_.data(), 1, static_cast<index_t>(grads_.size()),
                                         static_cast<index_t>(grads_.size())},
                              0.0f);
}

// ---- the step -------------------------------------------------------------------------------------

const float* ZeroOptimizer::fp32_grad(std::size_t lo, std::size_t hi, Buffer<float>& tmp) {
  if (!half()) return grad_at(lo);
  if (tmp.size() < hi - lo) {
    tmp = Buffer<float>();
    MemoryScope scope(be_, MemoryKind::Workspace, "one tensor's fp32 gradient");
    tmp = Buffer<float>(be_, hi - lo);
  }
  be_.from_bf16(hi - lo, grad16_at(lo), tmp.data());
  if (grad_scale_ != 1.0f) be_.axpby(hi - lo, grad_scale_, tmp.data(), 0.0f, tmp.data());
  return tmp.data();
}

double ZeroOptimizer::grad_squared_norm() {
  const Reported reported(*this, call(ZeroCall::Op::GradNorm));
  // FP32: every piece in one call. BF16 widens each piece into the same fp32 workspace, so its
  // norm is taken before the next piece is widened.
  Buffer<float> tmp;
  std::vector<NormPiece> pieces;
  std::vector<double> norms;
  double sum = 0.0;
  const auto reduce_pieces = [&] {
    norms.assign(pieces.size(), 0.0);
    be_.squared_norms(pieces.data(), pieces.size(), norms.data());
    for (const double v : norms) sum += v;
    pieces.clear();
  };
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const auto [lo, hi] = opt_piece(k);
    if (!tensors_[k].owner || hi <= lo) continue;
    pieces.push_back({hi - lo, fp32_grad(lo, hi, tmp)});
    if (half()) reduce_pieces();
  }
  reduce_pieces();
  // Stage 0: every replica holds the whole reduced gradient (sum over one replica); else each
  // element is in exactly one rank's block (sum over every rank).
  (opt_.stage == 0 ? grid_.replica() : grid_.world()).all_reduce(&sum, 1, ReduceOp::Sum);
  return sum;
}

void ZeroOptimizer::scale_grads(float s) {
  const Reported reported(*this, call(ZeroCall::Op::ScaleGrads, -1, -1, s));
  if (half()) {  // rounding a scaled 16-bit gradient would round twice: scaled when widened
    grad_scale_ *= s;
    return;
  }
  const std::size_t n = opt_end_ - opt_begin_;
  if (n) be_.axpby(n, s, grad_at(opt_begin_), 0.0f, grad_at(opt_begin_));
}

void ZeroOptimizer::step(float lr) {
  const Reported reported(*this, call(ZeroCall::Op::Step, -1, -1, lr));
  if (!opt_.gradients) throw std::logic_error("ZeroOptimizer: a step of a model built without gradients");
  if (!m_.data() && opt_end_ > opt_begin_) {  // on first use: a model that only infers needs none
    MemoryScope scope(be_, MemoryKind::Optimizer, "Adam state");
    m_ = Buffer<float>(be_, opt_end_ - opt_begin_);
    v_ = Buffer<float>(be_, opt_end_ - opt_begin_);
  }
  hp_.lr = lr;
  Buffer<float> tmp;
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const auto [lo, hi] = opt_piece(k);
    if (hi <= lo) continue;
    AdamParams hp = hp_;
    if (!tensors_[k].decay) hp.weight_decay = 0.0f;
    float* value = half() ? master_at(lo) : value_at(lo);
    be_.adam_step(hi - lo, value, fp32_grad(lo, hi, tmp), m_.data() + (lo - opt_begin_), v_.data() + (lo - opt_begin_),
                  hp);
    if (half()) be_.to_bf16(hi - lo, value, 0.0f, value16_at(lo));
  }
  grad_scale_ = 1.0f;
  ++hp_.step;
  if (opt_.stage == 1 || opt_.stage == 2) {  // every replica takes the updated blocks
    be_.synchronize();
    std::vector<std::unique_ptr<Communicator::Request>> gathers;
    for (const Unit& u : units_)
      for_each_bucket(u, [&](std::size_t c0, std::size_t c1) {
        const std::size_t from = own(c0, c1).first;
        gathers.push_back(half() ? start_all_gather(values16_.data() + from, values16_.data() + c0, counts(c0, c1))
                                 : start_all_gather(values_.data() + from, values_.data() + c0, counts(c0, c1)));
      });
    for (auto& g : gathers)
      if (g) g->wait();
  }
}

void ZeroOptimizer::replay(const ZeroCall& c) {
  using Op = ZeroCall::Op;
  const auto unit = [&]() -> Unit& {
    if (c.unit < 0 || c.unit >= units()) throw std::logic_error("ZeroOptimizer::replay: no unit " + std::to_string(c.unit));
    return units_[static_cast<std::size_t>(c.unit)];
  };
  switch (c.op) {
    case Op::Construct: throw std::logic_error("ZeroOptimizer::replay: a construction is not a call");
    case Op::BeginMicroBatch: return begin_micro_batch(c.arg != 0);
    case Op::Acquire: return acquire(c.unit, c.arg);
    case Op::Release: return release(c.unit);
    case Op::BeginBackward: return begin_backward(c.unit);
    case Op::EndBackward: return end_backward(c.unit);
    case Op::FinishBackward: return finish_backward();
    case Op::AbortPass: return abort_pass();
    case Op::ZeroGrads: return zero_grads();
    case Op::GradNorm: grad_squared_norm(); return;
    case Op::ScaleGrads: return scale_grads(c.value);
    case Op::Step: return step(c.value);
    case Op::StoreUnit: {
      const Reported reported(*this, c);
      return store_unit(unit());
    }
    case Op::RangeState: range_state(); return;
    case Op::SetMoments: {
      const std::vector<float> zeros(opt_end_ - opt_begin_, 0.0f);
      return set_moments(zeros, zeros, c.steps);
    }
  }
  throw std::logic_error("ZeroOptimizer::replay: an unknown call");
}

void ZeroOptimizer::store_unit(const Unit& u) {
  if (half()) {  // the fp32 values are the master's, and rounded, the 16-bit parameters'
    const auto [m0, m1] = part(opt_begin_, opt_end_, u.begin, u.end);
    if (m1 > m0) be_.copy_on_device(master_at(m0), u.values.data() + (m0 - u.begin), (m1 - m0) * sizeof(float));
    const auto [lo, hi] = opt_.stage < 3 ? std::pair{u.begin, u.end} : own(u.begin, u.end);
    if (hi > lo) be_.to_bf16(hi - lo, u.values.data() + (lo - u.begin), 0.0f, value16_at(lo));
  } else if (opt_.stage == 3) {  // the stored values are this rank's block; the others wrote in place
    const auto [lo, hi] = own(u.begin, u.end);
    if (hi > lo)
      be_.copy_on_device(values_.data() + (lo - begin_), u.values.data() + (lo - u.begin), (hi - lo) * sizeof(float));
  }
}

void ZeroOptimizer::for_each_unit(const std::function<void(int unit)>& fn, bool store) {
  for (int ui = 0; ui < units(); ++ui) {
    acquire(ui);
    fn(ui);
    Unit& u = units_[static_cast<std::size_t>(ui)];
    if (store) {
      const Reported reported(*this, call(ZeroCall::Op::StoreUnit, ui));
      store_unit(u);
    }
    release(ui);
  }
}

ZeroOptimizer::RangeState ZeroOptimizer::range_state() {
  const Reported reported(*this, call(ZeroCall::Op::RangeState));
  RangeState s;
  s.begin = opt_begin_;
  s.end = opt_end_;
  s.steps = steps();
  const std::size_t n = opt_end_ - opt_begin_;
  s.value.resize(n);
  s.m.assign(n, 0.0f);
  s.v.assign(n, 0.0f);
  if (n == 0) return s;
  be_.synchronize();
  be_.copy_to_host(s.value.data(), half() ? master_at(opt_begin_) : value_at(opt_begin_), n * sizeof(float));
  if (m_.data()) {
    be_.copy_to_host(s.m.data(), m_.data(), n * sizeof(float));
    be_.copy_to_host(s.v.data(), v_.data(), n * sizeof(float));
  }
  return s;
}

void ZeroOptimizer::set_moments(const std::vector<float>& m, const std::vector<float>& v, std::int64_t steps) {
  ZeroCall c = call(ZeroCall::Op::SetMoments);
  c.steps = steps;
  const Reported reported(*this, c);
  const std::size_t n = opt_end_ - opt_begin_;
  if (m.size() != n || v.size() != n || steps < 0)
    throw std::invalid_argument("ZeroOptimizer::set_moments: " + std::to_string(m.size()) + " and " +
                                std::to_string(v.size()) + " values for a range of " + std::to_string(n));
  if (!m_.data() && n > 0) {
    MemoryScope scope(be_, MemoryKind::Optimizer, "Adam state");
    m_ = Buffer<float>(be_, n);
    v_ = Buffer<float>(be_, n);
  }
  if (n > 0) {
    be_.copy_from_host(m_.data(), m.data(), n * sizeof(float));
    be_.copy_from_host(v_.data(), v.data(), n * sizeof(float));
  }
  hp_.step = steps + 1;
  be_.synchronize();
}

}  // namespace plexus
