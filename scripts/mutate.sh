#!/usr/bin/env bash
# Mutation testing: plant each bug of scripts/mutants.txt in a scratch copy of this tree, one at
# a time, and run the suite; prints a table and the score. Slow (a build and a suite run per
# mutant, about an hour for the list on 2 cores), so not part of CI: run it before changing a
# core file (README, "Development"). Options: scripts/mutate.py --help.
#   scripts/mutate.sh                       every mutant
#   scripts/mutate.sh --check               only check that every mutant still applies
#   scripts/mutate.sh --only dropout-scale-1-over-p,adam-no-bias-correction
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
exec /usr/bin/python3 "$(dirname "$0")/mutate.py" "$@"
