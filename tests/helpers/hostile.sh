# Helpers for the hostile-service tests (tests/scenario/t-hostile*.sh), sourced after
# tests/lib.sh. provgate runs as root; the service, its files and its folders belong to an
# ordinary user that the tests create and that owns nothing else.
#   hostile_setup            creates the user (once per machine) and $SVC, a folder under
#                            $T that the user owns; skips the test when not run as root
#   as_hostile CMD...        runs CMD as that user: its uid and gid, no other groups, no
#                            capabilities, a clean environment (HOME=$SVC)
#   HOSTILE_USER, HOSTILE_UID, HOSTILE_GID
HOSTILE_USER=pvg-hostile

hostile_setup() {
	if [ "$(id -u)" != 0 ]; then
		if [ "${CI:-}" = true ]; then fail "the hostile-service tests run as root"; fi
		echo "SKIP: the hostile-service tests need root" >&2
		exit 77
	fi
	need setpriv useradd
	if ! id -u "$HOSTILE_USER" >/dev/null 2>&1; then
		# two tests may race to create it: the loser finds it made
		useradd --system --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$HOSTILE_USER" 2>/dev/null ||
			id -u "$HOSTILE_USER" >/dev/null || fail "cannot create user $HOSTILE_USER"
	fi
	HOSTILE_UID=$(id -u "$HOSTILE_USER")
	HOSTILE_GID=$(id -g "$HOSTILE_USER")
	# $T is root's 0700 folder: the user may pass through it to $SVC and nothing else
	chmod 711 "$T"
	SVC="$T/svc"
	mkdir -p "$SVC"
	chown "$HOSTILE_UID:$HOSTILE_GID" "$SVC"
}

as_hostile() {
	setpriv --reuid="$HOSTILE_UID" --regid="$HOSTILE_GID" --clear-groups \
		--inh-caps=-all --bounding-set=-all --no-new-privs --reset-env \
		env HOME="$SVC" "$@"
}

# A root-only file with a secret in it, the kind the user must never learn from a report.
root_secret() { # PATH
	printf 'root-secret-%s\n' "$RANDOM$RANDOM" >"$1"
	chmod 600 "$1"
	chown 0:0 "$1"
}
