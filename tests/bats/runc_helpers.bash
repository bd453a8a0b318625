# runc_helpers.bash: plain runc beside rauha, for attack tests that first
# show the attack works under runc with the same bundle. Load it after
# zone_helpers.bash: its teardown removes the test's runc containers, then
# runs the zone teardown.

RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}

# The teardown of zone_helpers.bash, run after the plain runc containers of
# the test are gone.
eval "zone_$(declare -f teardown)"
teardown() {
	local id
	if [[ -d $BATS_TEST_TMPDIR/runc ]]; then
		for id in $(plain list -q 2>/dev/null); do
			plain delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	zone_teardown
}

# plain ARGS...: plain runc with a state root of this test's own.
plain() {
	timeout -k 5 "$RT_TIMEOUT" "$RUNC" --root "$BATS_TEST_TMPDIR/runc" "$@"
}
