#!/usr/bin/env bash
# Attestations: --attest / --sign-key write an in-toto Statement v1 of the report in a DSSE
# envelope; provgate verify-attestation checks it. Interop both ways with securesystemslib
# 0.26 (Debian's python3-securesystemslib), through tests/attest-interop.py. What that
# library cannot do (it has no DSSE code, no PAE, no Ed25519 PEM keys, hex signatures, and
# checks signatures only under its own keyid) is done by the helper from the DSSE spec; the
# signing and verifying themselves are securesystemslib's. in-toto 1.3.1 has no DSSE code at
# all (it signs its own Metablock format), so it cannot take part.
# The certified report comes from the demo's scenario run for real (hipify + hipcc build,
# install, a live service), made once and shared by the tests below.
source "$PVG_SRC/tests/lib.sh"

IO=("/usr/bin/python3" "$PVG_SRC/tests/attest-interop.py")
SHARED=$(mktemp -d "${TMPDIR:-/tmp}/pvg-attest.XXXXXX")
trap 'rm -rf "$SHARED"' EXIT

keys() { # DIR: Ed25519 and P-256 key pairs made by openssl, private keys mode 0600
	openssl genpkey -algorithm ed25519 -out "$1/ed.pem" 2>/dev/null
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1/p256.pem" 2>/dev/null
	openssl genpkey -algorithm ed25519 -out "$1/other.pem" 2>/dev/null
	chmod 600 "$1"/ed.pem "$1"/p256.pem "$1"/other.pem
	for k in ed p256 other; do openssl pkey -in "$1/$k.pem" -pubout -out "$1/$k.pub"; done
}

# The scenario, once: a certified run signed with each key type, exec's final report, and a
# certification refused after the installed library is replaced under the service.
scenario() {
	[ -f "$SHARED/ready" ] && return 0
	need hipcc ninja git ss openssl jq /usr/bin/python3
	local S="$SHARED/s"
	mkdir -p "$S"
	(
		cd "$S"
		pg=$PROVGATE svc="$PVG_BUILD/tests/helpers/fake-service" W=$S
		source "$PVG_SRC/tests/demo/scenario.sh"
		trap scenario_stop EXIT
		scenario_built || { cat logs/build.log; fail "build failed"; }
		install_extension
		sleep 0.05
		scenario_start
		request "4096 5120 torch.bfloat16"
		scenario_config
		keys "$SHARED"
		pg certify --json "$SHARED/report.json" --attest "$SHARED/att-ed.json" --sign-key "$SHARED/ed.pem"
		[ "$rc" = 0 ] || fail "certify: $rc $out $err"
		pg certify --attest "$SHARED/att-p256.json" --sign-key "$SHARED/p256.pem" -q
		[ "$rc" = 0 ] || fail "certify (p256): $rc $err"
		pg certify --attest "$SHARED/statement.json" -q
		[ "$rc" = 0 ] || fail "certify (unsigned): $rc $err"
		pg exec --out "$SHARED/exec.json" --attest "$SHARED/att-exec.json" --sign-key "$SHARED/ed.pem" \
			-- sh -c 'echo benchmark-ran'
		[ "$rc" = 0 ] || fail "exec: $rc $out $err"
		# exec refuses to start the benchmark when the attestation cannot be written
		pg exec --attest "$SHARED/no/such/dir/a.json" --sign-key "$SHARED/ed.pem" -- touch "$SHARED/ran"
		echo "$rc" >"$SHARED/exec-unwritable.rc"
		echo "$err" >"$SHARED/exec-unwritable.err"
		cp build/_rocm_C.abi3.so "$SHARED/build.so"
		cp site/vllm_demo/_rocm_C.abi3.so "$SHARED/installed.so"
		# a reinstall under the running service: gate 4 refuses, the attestation says so
		install_extension
		pg certify --attest "$SHARED/att-refused.json" --sign-key "$SHARED/ed.pem" -q
		[ "$rc" = 1 ] || fail "certify after the reinstall: $rc $out $err"
	) || fail "scenario setup failed"
	touch "$SHARED/ready"
}

verify() { # FILE KEY [ARGS...]
	local f=$1 k=$2
	shift 2
	pg verify-attestation "$f" --key "$k" "$@"
}

codes() { jq -r '[.problems[].code] | join(" ")' "$1"; }

test_certified_attestation_verifies_with_provgate_and_securesystemslib() {
	scenario
	cd "$SHARED"
	verify att-ed.json ed.pub --artifact installed.so --artifact build.so --json v.json
	assert_eq "$rc" 0 "verify ($out $err)"
	assert_contains "$out" "VERIFIED: signed by keyid"
	assert_contains "$out" "2 artifacts matched"
	assert_eq "$(jq -r .verified v.json)" true
	assert_eq "$(codes v.json)" ""
	# the keyid is the sha256 of the key's DER SubjectPublicKeyInfo
	local kid
	kid=$(openssl pkey -pubin -in ed.pub -outform DER | sha256sum | cut -d' ' -f1)
	assert_eq "$(jq -r '.signatures[0].keyid' att-ed.json)" "$kid" keyid
	assert_eq "$(jq -r .key.keyid v.json)" "$kid"
	verify att-p256.json p256.pub --artifact installed.so
	assert_eq "$rc" 0 "verify p256 ($out $err)"
	# securesystemslib verifies provgate's signatures over the DSSE PAE, both key types
	"${IO[@]}" verify ed.pub att-ed.json >io.txt || fail "securesystemslib: $(cat io.txt)"
	assert_contains "$(cat io.txt)" "verified by securesystemslib: ed25519"
	"${IO[@]}" verify p256.pub att-p256.json >io.txt || fail "securesystemslib: $(cat io.txt)"
	assert_contains "$(cat io.txt)" "verified by securesystemslib: ecdsa ecdsa-sha2-nistp256"
	! "${IO[@]}" verify other.pub att-ed.json >/dev/null || fail "securesystemslib verified another key"
	# the Statement: in-toto v1, both artifacts as subjects, the report as predicate
	"${IO[@]}" payload att-ed.json >st.json
	assert_eq "$(jq -r ._type st.json)" https://in-toto.io/Statement/v1
	assert_eq "$(jq -r .predicateType st.json)" https://provgate.dev/attestation/report/v1
	assert_eq "$(jq -r '.subject[0].digest.sha256' st.json)" "$(sha256sum installed.so | cut -d' ' -f1)"
	assert_eq "$(jq -r '.subject[1].name' st.json)" "$(jq -r .chain.build.path report.json)"
	assert_eq "$(jq -S 'del(.gates[].elapsed_ms, .gates[].prepared_ms)' report.json)" \
		"$(jq -S '.predicate | del(.gates[].elapsed_ms, .gates[].prepared_ms)' st.json)" "predicate = the --json report"
	validate att-ed.json att-p256.json statement.json att-exec.json v.json
}

test_envelope_signed_by_securesystemslib_verifies() {
	scenario
	cd "$SHARED"
	"${IO[@]}" payload att-ed.json >"$T/st.json"
	cd "$T"
	for kt in ed25519 ecdsa; do
		"${IO[@]}" gen $kt key-$kt.json pub-$kt.pem
		"${IO[@]}" sign key-$kt.json st.json env-$kt.json
		verify env-$kt.json pub-$kt.pem --artifact "$SHARED/installed.so" --json v.json
		assert_eq "$rc" 0 "$kt: verify ($out $err)"
		# its keyid is securesystemslib's own, not provgate's; --keyid asks for it
		local kid
		kid=$(jq -r '.signatures[0].keyid' env-$kt.json)
		assert_eq "$kid" "$(jq -r .keyid key-$kt.json)" "$kt: securesystemslib keyid"
		[ "$kid" != "$(jq -r .key.keyid v.json)" ] || fail "$kt: the keyids should differ"
		verify env-$kt.json pub-$kt.pem --keyid "$kid"
		assert_eq "$rc" 0 "$kt: --keyid of the signature"
		verify env-$kt.json pub-$kt.pem --keyid "$(jq -r .key.keyid v.json)" --json v2.json
		assert_eq "$rc" 1 "$kt: --keyid that the signature does not carry"
		assert_eq "$(codes v2.json)" attestation.keyid
		# and a payload edited after securesystemslib signed it is this key's broken signature
		sed 's/"payload": "eyJ/"payload": "eyK/' env-$kt.json >edited.json
		verify edited.json pub-$kt.pem --json v3.json
		assert_eq "$(codes v3.json)" attestation.signature-invalid "$kt"
	done
}

test_payload_edited_after_signing_is_refused() {
	scenario
	"${IO[@]}" payload "$SHARED/att-refused.json" >st.json
	jq -c '.predicate.certified = true' st.json >forged.json
	"${IO[@]}" repack "$SHARED/att-refused.json" forged.json forged-env.json
	verify forged-env.json "$SHARED/ed.pub" --json v.json
	assert_eq "$rc" 1 "verify ($out)"
	assert_eq "$(codes v.json)" attestation.signature-invalid
	assert_contains "$out" "does not verify over the envelope: the payload or its type was changed after it was signed"
	assert_contains "$out" "NOT VERIFIED"
	# nothing of the unauthenticated payload is reported as read
	assert_eq "$(jq -r .report.certified v.json)" null
}

test_signature_from_another_key_is_refused() {
	scenario
	verify "$SHARED/att-ed.json" "$SHARED/other.pub" --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.other-key
	assert_contains "$out" "not signed by this key: the envelope's signature is by keyid $(jq -r '.signatures[0].keyid' "$SHARED/att-ed.json")"
	verify "$SHARED/att-ed.json" "$SHARED/p256.pub"
	assert_eq "$rc" 1
	assert_contains "$out" "attestation.other-key"
}

test_payload_type_changed_is_refused() {
	scenario
	sed 's|application/vnd.in-toto+json|application/vnd.dsse.envelope+json|' "$SHARED/att-ed.json" >env.json
	verify env.json "$SHARED/ed.pub" --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.payload-type
	assert_contains "$out" 'payloadType is "application/vnd.dsse.envelope+json", not application/vnd.in-toto+json'
}

# A signer with the key that writes something else than provgate's Statement: re-signed by
# securesystemslib, so the signature verifies and the content is what is refused.
resigned() { # JQ-FILTER OUT: the certified Statement edited, signed by securesystemslib
	"${IO[@]}" payload "$SHARED/att-ed.json" | jq -c "$1" >st.json
	[ -f key.json ] || "${IO[@]}" gen ed25519 key.json pub.pem
	"${IO[@]}" sign key.json st.json "$2"
}

test_statement_type_changed_is_refused() {
	scenario
	resigned '._type = "https://in-toto.io/Statement/v0.1"' env.json
	verify env.json pub.pem --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.statement-type
	assert_contains "$out" 'the Statement'"'"'s _type is "https://in-toto.io/Statement/v0.1", not https://in-toto.io/Statement/v1'
}

test_predicate_type_changed_is_refused() {
	scenario
	resigned '.predicateType = "https://slsa.dev/provenance/v1"' env.json
	verify env.json pub.pem --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.predicate-type
	assert_contains "$out" 'predicateType is "https://slsa.dev/provenance/v1", not provgate'"'"'s https://provgate.dev/attestation/report/v1'
}

test_subject_not_matching_the_artifact_is_refused() {
	scenario
	cp "$SHARED/installed.so" other.so
	printf 'x' >>other.so
	verify "$SHARED/att-ed.json" "$SHARED/ed.pub" --artifact "$SHARED/installed.so" --artifact other.so --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.artifact-mismatch
	assert_contains "$out" "artifact other.so has sha256 $(sha256sum other.so | cut -d' ' -f1), which no subject of the Statement has"
	assert_eq "$(jq -r '.artifacts[0].subject' v.json)" "$(jq -r .chain.installed.path "$SHARED/report.json")"
	verify "$SHARED/att-ed.json" "$SHARED/ed.pub" --artifact missing.so --json v.json
	assert_eq "$(codes v.json)" attestation.artifact-unreadable
	# subjects swapped for other bytes in a Statement signed anyway: not the report's artifacts
	resigned ".subject[0].digest.sha256 = \"$(sha256sum other.so | cut -d' ' -f1)\"" env.json
	verify env.json pub.pem --artifact other.so --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.subject-report
}

test_attestation_of_a_refused_certification_is_refused() {
	scenario
	verify "$SHARED/att-refused.json" "$SHARED/ed.pub" --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.not-certified
	assert_contains "$out" "the report says not certified: gate 4 process-maps: fail"
	assert_eq "$(jq -r .report.certified v.json)" false
	validate "$SHARED/att-refused.json" v.json
}

test_truncated_garbage_and_unsigned_envelopes_are_refused() {
	scenario
	local env="$SHARED/att-ed.json" key="$SHARED/ed.pub"
	head -c $(( $(stat -c %s "$env") / 2 )) "$env" >half.json
	verify half.json "$key" --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.not-json
	assert_contains "$out" "truncated file?"
	head -c 4096 /dev/urandom >garbage.bin
	verify garbage.bin "$key" --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.not-json
	: >empty.json
	verify empty.json "$key" --json v.json
	assert_eq "$(codes v.json)" attestation.not-json
	verify "$SHARED/statement.json" "$key" --json v.json
	assert_eq "$rc" 1
	assert_eq "$(codes v.json)" attestation.unsigned
	assert_contains "$out" "a bare in-toto Statement, not a DSSE envelope"
	jq '.signatures = []' "$env" >nosig.json
	verify nosig.json "$key" --json v.json
	assert_eq "$(codes v.json)" attestation.no-signature
	jq '.payload = "not base64!"' "$env" >b64.json
	verify b64.json "$key" --json v.json
	assert_eq "$(codes v.json)" attestation.malformed
	assert_contains "$out" '"payload" is not base64'
	validate v.json
}

test_exec_attests_its_final_report() {
	scenario
	cd "$SHARED"
	verify att-exec.json ed.pub --artifact installed.so
	assert_eq "$rc" 0 "verify ($out)"
	"${IO[@]}" payload att-exec.json >"$T/st.json"
	assert_eq "$(jq -r .predicate.exec.state "$T/st.json")" finished
	assert_eq "$(jq -c .predicate.after.selected_gates "$T/st.json")" "[3,4,5,7]"
	assert_eq "$(jq -r .exec.state exec.json)" finished
	# the attestation could not be written: the benchmark was not started
	assert_eq "$(cat exec-unwritable.rc)" 2
	assert_contains "$(cat exec-unwritable.err)" "cannot write attestation $SHARED/no/such/dir/a.json"
	[ ! -e ran ] || fail "the command ran although its attestation could not be written"
}

# These need no service: gate 3 on two copies of a file is enough to run provgate.
small_config() {
	head -c 65536 /dev/urandom >b.so
	cp b.so i.so
	printf '{"name": "small", "build": {"artifact": "b.so"}, "install": {"artifact": "i.so"}}\n' >provgate.json
	keys "$T"
}

test_sign_key_readable_by_others_is_refused_before_any_gate() {
	need openssl jq
	small_config
	for mode in 644 640 604 660; do
		chmod "$mode" ed.pem
		pg run --gates 3 --attest a.json --sign-key ed.pem --json r.json
		assert_eq "$rc" 2 "mode $mode"
		assert_contains "$err" "--sign-key ed.pem: permissions 0$mode are too open: a private key must be readable by its owner only (chmod 600 ed.pem)"
		[ ! -e a.json ] && [ ! -e r.json ] || fail "mode $mode: files written although the key was refused"
	done
	chmod 600 ed.pem
	pg run --gates 3 --attest a.json --sign-key ed.pub
	assert_eq "$rc" 2
	assert_contains "$err" "it is a public key; --sign-key takes the private one"
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa.pem 2>/dev/null
	chmod 600 rsa.pem
	pg run --gates 3 --attest a.json --sign-key rsa.pem
	assert_eq "$rc" 2
	assert_contains "$err" "a RSA key; provgate signs with Ed25519 or ECDSA P-256 keys"
	pg run --gates 3 --attest a.json --sign-key ed.pem -q
	assert_eq "$rc" 0 "0600 key ($err)"
	validate a.json
}

test_attest_without_key_writes_an_unsigned_statement() {
	need openssl jq
	small_config
	pg run --gates 3 --attest a.json -q
	assert_eq "$rc" 0 "$err"
	assert_eq "$(jq -r ._type a.json)" https://in-toto.io/Statement/v1
	assert_eq "$(jq -r '.subject | length' a.json)" 2
	assert_eq "$(jq -r '.subject[0].digest.sha256' a.json)" "$(sha256sum i.so | cut -d' ' -f1)"
	assert_eq "$(jq -r .predicate.certified a.json)" false
	validate a.json
	# written like the reports: no temp file left beside it
	assert_eq "$(ls | grep -c '\.tmp\.')" 0
	# an artifact that could not be hashed leaves nothing to attest: refused, not written
	rm i.so b.so
	pg run --gates 3 --attest none.json
	assert_eq "$rc" 1
	assert_contains "$err" "attestation none.json not written: the report names no artifact with a sha256"
	[ ! -e none.json ] || fail "an attestation without subject was written"
}

# The fixtures (tests/fixtures/attest/make.sh) stay readable: signed with RFC 8410's example
# key, of a run of gate 3 alone, so verified in signature and refused as not certified.
test_fixture_envelopes_verify_in_signature_and_are_not_certified() {
	need openssl jq
	printf -- '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n' |
		openssl pkey -pubout -out rfc8410.pub
	verify "$FIXTURES/attest/provgate-ed25519.json" rfc8410.pub --json v.json
	assert_eq "$rc" 1
	assert_eq "$(jq -r .signed_by v.json)" 0
	assert_eq "$(codes v.json)" attestation.not-certified
	assert_contains "$out" "the report says not certified: it evaluated gates 3, not all seven"
	verify "$FIXTURES/attest/statement.json" rfc8410.pub --json v.json
	assert_eq "$(codes v.json)" attestation.unsigned
	verify "$FIXTURES/attest/sslib-ed25519.json" rfc8410.pub --json v.json
	assert_eq "$(codes v.json)" attestation.other-key
	validate "$FIXTURES"/attest/*.json
}

test_usage_errors_exit_2() {
	need openssl jq
	small_config
	pg verify-attestation a.json
	assert_eq "$rc" 2
	assert_contains "$err" "--key PUB.pem is required"
	pg verify-attestation --key ed.pub
	assert_eq "$rc" 2
	pg verify-attestation missing.json --key ed.pub
	assert_eq "$rc" 2
	assert_contains "$err" "cannot read missing.json"
	pg verify-attestation provgate.json --key nokey.pub
	assert_eq "$rc" 2
	pg run --gates 3 --sign-key ed.pem
	assert_eq "$rc" 2
	assert_contains "$err" "give --attest FILE too"
	pg run --gates 3 --attest r.json --json r.json
	assert_eq "$rc" 2
	pg run --gates 3 --attest - -q
	assert_eq "$rc" 2
	pg run --gates 3 --attest no/such/dir/a.json
	assert_eq "$rc" 2
	assert_contains "$err" "cannot write attestation no/such/dir/a.json"
	pg verify-attestation --help
	assert_eq "$rc" 0
	assert_contains "$out" "--artifact PATH"
}

run_tests
