#pragma once
// The kernel families a transformer needs beyond the GCN's (backend.hpp), one header each:
//   layernorm.hpp  LayerNorm over a possibly column-split feature axis
//   activation.hpp GELU (tanh form)
//   attention.hpp  fused causal multi-head attention
//   reduction.hpp  squared L2 norm (gradient clipping)
// Embedding gather and its deterministic scatter-add are SpMMs with a one-hot CSR
// (src/pmm/embedding_3d.hpp), so every backend's SpMM serves them.
// A backend hands them out as one object: Backend::transformer().
#include "plexus/kernels/activation.hpp"
#include "plexus/kernels/attention.hpp"
#include "plexus/kernels/layernorm.hpp"
#include "plexus/kernels/reduction.hpp"

namespace plexus {

class TransformerKernels : public LayerNormKernels,
                           public ActivationKernels,
                           public AttentionKernels,
                           public ReductionKernels {};

}  // namespace plexus
