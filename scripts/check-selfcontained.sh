#!/usr/bin/env bash
# check-selfcontained.sh - fail if a tracked file refers to something outside
# the project: a sibling "shared" checkout (its VM lane, tools or research
# notes) or a path of one particular machine (a work area at the root, a
# user's home). A fresh clone must build, test and run on its own; what the
# project needs lives in it.
#
# Prints each offending line (file:line:text) and exits 1, or exits 0.
# Binary files are not searched. Outside a git checkout (a release tarball)
# every file not ignored by .gitignore is searched.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

# The bracketed letters keep these patterns from matching their own text,
# so this file needs no exemption.
patterns=(
	'[.][.]/share[d]'                        # a sibling checkout
	'/wor[k]/share[d]'                       # the same, absolute
	'share[d]/(vm-lane|tools|research)'      # its parts, however reached
	'(^|[^[:alnum:]_.$}-])/wor[k]/'          # a work area at the root
	'(^|[^[:alnum:]_.$}-])/hom[e]/[a-z_]'    # a user's home directory
)
args=()
for p in "${patterns[@]}"; do args+=(-e "$p"); done

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	where=(grep)
else
	where=(grep --no-index --exclude-standard)
fi
rc=0
out=$(git "${where[@]}" -n -I -E "${args[@]}" -- .) || rc=$?
case $rc in
0)
	echo "$out"
	echo "check-selfcontained: the lines above refer to files outside the project or to one machine's paths" >&2
	exit 1
	;;
1)
	echo "check-selfcontained: no tracked file refers outside the project"
	;;
*)
	echo "check-selfcontained: git grep failed (status $rc)" >&2
	exit 2
	;;
esac
