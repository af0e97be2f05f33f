#!/usr/bin/env bash
# What the CI jobs run on a pull request: the files linted, with an
# annotation per finding (and the findings in the step summary), then the
# plan from the base branch's files to the pull request's, written as the
# comment to post. Run it locally the same way:
#   WARREN_BASE_REF=origin/main examples/ci/check.sh topology
set -euo pipefail

topology=${1:-topology}
base=${WARREN_BASE_REF:-origin/main}
comment=${WARREN_COMMENT_FILE:-warren-comment.md}

# lint shows the files' errors too (and fails on them): validate's work and
# the rules' in one run, each finding annotated once.
warren lint "$topology" --format github
# The plan a reviewer reads: what merging would change, from the files
# alone (no broker). Its first line is a hidden marker the comment step
# finds its earlier comment by.
warren diff "$base:$topology" "$topology" --format markdown > "$comment"
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    echo "comment=$comment" >> "$GITHUB_OUTPUT"
fi
# The files' layout last, so that a layout slip never hides a finding or
# the plan: the diff `warren fmt` would make, and exit 1 if any.
warren fmt --check "$topology"
