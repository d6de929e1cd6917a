// Model state (train/model_state.hpp): parameters whole by global index from every rank's
// shards and back.
#include "train/model_state.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus {

std::vector<ParamPlace> param_places(GnnNetwork& model) {
  std::vector<ParamPlace> places;
  for (const ModelParam& p : model.named_parameters())
    places.push_back({p.name, p.rows, p.cols, p.shard_rows, p.shard_cols, p.contributes});
  return places;
}

// The whole tensor from every rank's shard: each element is held by one contributing rank of
// the replica, so a sum over zeros elsewhere reassembles it exactly.
std::vector<float> assemble(const ParamPlace& p, const std::vector<float>& shard, ProcessGrid& grid) {
  std::vector<float> whole(static_cast<std::size_t>(p.rows * p.cols), 0.0f);
  if (p.contributes)
    for (index_t r = 0; r < p.shard_rows.size(); ++r)
      std::copy_n(shard.data() + r * p.shard_cols.size(), p.shard_cols.size(),
                  whole.data() + (p.shard_rows.begin + r) * p.cols + p.shard_cols.begin);
  grid.replica().all_reduce(whole.data(), whole.size(), ReduceOp::Sum);
  return whole;
}

std::vector<float> cut(const ParamPlace& p, const std::vector<float>& whole) {
  std::vector<float> shard(static_cast<std::size_t>(p.shard_rows.size() * p.shard_cols.size()));
  for (index_t r = 0; r < p.shard_rows.size(); ++r)
    std::copy_n(whole.data() + (p.shard_rows.begin + r) * p.cols + p.shard_cols.begin, p.shard_cols.size(),
                shard.data() + r * p.shard_cols.size());
  return shard;
}

void check_state_fits(const ModelState& s, const std::vector<ParamPlace>& places, bool with_moments) {
  if (s.parameters.size() != places.size())
    throw InputError("model state", std::to_string(s.parameters.size()) + " parameters, this model has " +
                                        std::to_string(places.size()));
  if (s.epochs_done < 0 || s.epochs_done > std::numeric_limits<int>::max())
    throw InputError("model state", "epochs done " + std::to_string(s.epochs_done) + " out of range");
  if (s.best.epoch < -1 || s.best.epoch >= std::max<std::int64_t>(s.epochs_done, 0))
    throw InputError("model state", "best epoch " + std::to_string(s.best.epoch) + " is not an epoch trained");
  if (s.weights_epoch < -1 || s.weights_epoch >= std::max<std::int64_t>(s.epochs_done, 0))
    throw InputError("model state", "weights epoch " + std::to_string(s.weights_epoch) + " is not an epoch trained");
  for (std::size_t k = 0; k < places.size(); ++k) {
    const ParameterState& p = s.parameters[k];
    const auto n = static_cast<std::size_t>(places[k].rows * places[k].cols);
    const bool moments_fit = !with_moments || (p.adam_m.size() == n && p.adam_v.size() == n);
    if (p.name != places[k].name || p.rows != places[k].rows || p.cols != places[k].cols || p.value.size() != n ||
        !moments_fit || (!p.best_value.empty() && p.best_value.size() != n) ||
        p.best_value.empty() != s.parameters.front().best_value.empty() ||
        (!p.last_value.empty() && p.last_value.size() != n) ||
        p.last_value.empty() != s.parameters.front().last_value.empty())
      throw InputError("model state", p.name + " [" + std::to_string(p.rows) + " x " + std::to_string(p.cols) +
                                          "] does not fit this model's " + places[k].name + " [" +
                                          std::to_string(places[k].rows) + " x " + std::to_string(places[k].cols) + "]");
  }
}

std::vector<ParameterShape> parameter_shapes(const std::vector<ParamPlace>& places) {
  std::vector<ParameterShape> shapes;
  for (const ParamPlace& p : places) shapes.push_back({p.name, p.rows, p.cols});
  return shapes;
}

}  // namespace plexus
