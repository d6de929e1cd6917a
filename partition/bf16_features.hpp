#pragma once
// --feature-precision bf16 (PrepareOptions::features_bf16) stores each feature rounded to
// bfloat16 (nearest even). A finite feature beyond bfloat16's largest finite value (about
// 3.3895e38) would be stored as Inf, in a file every reader then refuses: the prepare refuses it
// first — on one process, on P ranks and in passes — before anything is written, naming the
// first such node (in the input's order) and feature.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus::detail {

// "" when every feature of the rows from `first_row` on (`width` each) fits bfloat16, else the
// problem with the first that does not.
inline std::string bf16_feature_overflow(const std::vector<float>& features, index_t first_row, index_t width) {
  for (std::size_t k = 0; k < features.size(); ++k) {
    const float v = features[k];
    if (!std::isfinite(v) || std::isfinite(bf16_to_float(float_to_bf16(v)))) continue;
    const auto w = static_cast<std::size_t>(width);
    char value[32];
    std::snprintf(value, sizeof value, "%g", static_cast<double>(v));
    return "node " + std::to_string(first_row + static_cast<index_t>(k / w)) + ", feature " + std::to_string(k % w) +
           ": " + value + " is beyond bfloat16's range (largest finite 3.3895e+38) and would be stored as Inf; "
           "keep the features in fp32";
  }
  return {};
}

}  // namespace plexus::detail
