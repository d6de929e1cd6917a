#pragma once
// The question a trainer asks at its stop points during a graceful stop (docs/checkpoints.md,
// "SIGTERM and SIGINT"): whether to stop now. GnnTrainer asks it between the layers of an
// epoch's passes, GptTrainer before each micro-batch and before each evaluation
// batch, so that a stop is honoured within one layer or batch rather than at the
// end of an epoch or step.
//
// Collective: every rank asks at the same points and must get the same answer (`plexus train`
// agrees on it with one all-reduce of one number). Once it has answered true it must keep
// answering true.
#include <functional>

namespace plexus {

using StopCheck = std::function<bool()>;

}  // namespace plexus
