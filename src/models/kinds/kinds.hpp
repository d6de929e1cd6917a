#pragma once
// The kinds' declarations (one file each in this folder); kinds.cpp lists them.
#include "models/kinds/kind_spec.hpp"

namespace plexus {

const KindSpec& gcn_kind();
const KindSpec& sage_kind();
const KindSpec& gin_kind();
const KindSpec& gine_kind();
const KindSpec& gat_kind();
const KindSpec& appnp_kind();

}  // namespace plexus
