// make_task (task.hpp): the task TrainConfig::task names.
#include "train/tasks/link_prediction.hpp"
#include "train/tasks/node_classification.hpp"

namespace plexus {

std::unique_ptr<Task> make_task(const TaskInputs& in) {
  if (in.cfg.task == GnnTask::Link) return std::make_unique<LinkPrediction>(in);
  return std::make_unique<NodeClassification>(in);
}

}  // namespace plexus
