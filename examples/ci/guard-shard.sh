#!/usr/bin/env bash
# Ingest one shard of the suite's evidence into the team's FalkorDB (any CI, any runner).
#
#   GUARD_FALKORDB_URL=redis://:password@graph.internal:6379 SHARD=2 SHARDS=4 \
#     examples/ci/guard-shard.sh [repository]
#
# Run SHARDS copies at once, SHARD=1..SHARDS, on one commit of the main branch: each writes its
# tests' evidence, and the commit's evidence counts as complete once all of them are in (until
# then every check says the ingest did not complete and runs everything). A shard that holds no
# test succeeds. pytest-xdist inside a shard works: GUARD_PYTEST_ARGS="-n auto".
set -euo pipefail
repo=${1:-.}
: "${GUARD_FALKORDB_URL:?set GUARD_FALKORDB_URL to the FalkorDB of the team}"
: "${SHARD:?set SHARD, 1 to SHARDS}" "${SHARDS:?set SHARDS}"
args=(--shard "$SHARD/$SHARDS")
if [ -n "${GUARD_PYTHON:-}" ]; then args+=(--python "$GUARD_PYTHON"); fi
if [ -n "${GUARD_PYTEST_ARGS:-}" ]; then args+=(--pytest-args "$GUARD_PYTEST_ARGS"); fi
guard doctor --repo "$repo" || true   # versions and persistence, in the log of the job
exec guard ingest-coverage "$repo" "${args[@]}"
