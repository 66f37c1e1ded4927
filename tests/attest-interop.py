#!/usr/bin/python3
"""DSSE interop with code no one here wrote: securesystemslib 0.26 (Debian 12) signs and
verifies; this script only does the DSSE framing, from the DSSE spec (protocol.md).

What securesystemslib 0.26 and in-toto 1.3.1 cannot do, and this script therefore does:
- neither has DSSE code (no Envelope, no PAE; in-toto 1.3.1 signs only its own "Metablock"
  over canonical JSON), so the PAE is computed here exactly as the spec writes it;
- securesystemslib signatures are hex; DSSE's "sig" is base64: converted here;
- securesystemslib verifies a signature only under its own keyid of the key (sha256 of its
  canonical key JSON), not under provgate's (sha256 of the DER SubjectPublicKeyInfo);
- securesystemslib reads ECDSA keys from PEM but Ed25519 keys only in its own form (raw key
  bytes in hex): an Ed25519 PEM is converted from/to the raw key with python3-cryptography.
Key types used: ed25519 and ecdsa-sha2-nistp256. securesystemslib 0.26 signs Ed25519 only
through PyNaCl (python3-nacl, only a Recommends of Debian's package; without it, signing
fails and verifying falls back to a slow pure-Python ed25519), never through
python3-cryptography, which it uses for ECDSA (P-256, P-384) and RSA-PSS.

  attest-interop.py gen ed25519|ecdsa KEY.json PUB.pem    a securesystemslib key; its public PEM
  attest-interop.py sign KEY.json STATEMENT OUT [TYPE]    DSSE envelope signed by securesystemslib
  attest-interop.py verify PUB.pem ENVELOPE               securesystemslib verifies a signature
  attest-interop.py keyid PUB.pem                         securesystemslib's keyid of a PEM key
  attest-interop.py payload ENVELOPE                      the decoded payload, to stdout
  attest-interop.py repack ENVELOPE PAYLOAD OUT           the same signatures over another payload
"""
import base64
import json
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from securesystemslib import keys as sslib_keys
from securesystemslib.signer import Signature, SSlibKey

INTOTO = "application/vnd.in-toto+json"


def pae(payload_type: str, body: bytes) -> bytes:
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def sslib_public_key(pem_text: str) -> dict:
    """The securesystemslib key dict of a PEM public key."""
    pub = serialization.load_pem_public_key(pem_text.encode())
    if isinstance(pub, ed25519.Ed25519PublicKey):
        raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        keyval = {"public": raw.hex(), "private": ""}
        keyid = sslib_keys._get_keyid("ed25519", "ed25519", keyval)
        return {"keytype": "ed25519", "scheme": "ed25519", "keyid": keyid, "keyval": keyval}
    if isinstance(pub, ec.EllipticCurvePublicKey):
        return sslib_keys.import_ecdsakey_from_public_pem(pem_text)
    raise SystemExit(f"unsupported key type {type(pub).__name__}")


def main() -> int:
    cmd = sys.argv[1]
    if cmd == "gen":
        kind, key_json, pub_pem = sys.argv[2:5]
        if kind == "ed25519":
            from securesystemslib import ed25519_keys
            if not ed25519_keys.NACL:
                raise SystemExit("securesystemslib signs Ed25519 only with PyNaCl (python3-nacl)")
            key = sslib_keys.generate_ed25519_key()
            raw = bytes.fromhex(key["keyval"]["public"])
            pem = ed25519.Ed25519PublicKey.from_public_bytes(raw).public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        else:
            key = sslib_keys.generate_ecdsa_key()
            pem = key["keyval"]["public"]
        with open(key_json, "w") as f:
            json.dump(key, f)
        with open(pub_pem, "w") as f:
            f.write(pem)
        return 0
    if cmd == "sign":
        key_json, statement, out = sys.argv[2:5]
        payload_type = sys.argv[5] if len(sys.argv) > 5 else INTOTO
        key = json.load(open(key_json))
        body = open(statement, "rb").read()
        sig = sslib_keys.create_signature(key, pae(payload_type, body))
        env = {"payloadType": payload_type,
               "payload": base64.standard_b64encode(body).decode(),
               "signatures": [{"keyid": sig["keyid"],
                               "sig": base64.standard_b64encode(bytes.fromhex(sig["sig"])).decode()}]}
        with open(out, "w") as f:
            json.dump(env, f)
        return 0
    if cmd == "verify":
        pub_pem, envelope = sys.argv[2:4]
        env = json.load(open(envelope))
        key = sslib_public_key(open(pub_pem).read())
        ssl_key = SSlibKey.from_securesystemslib_key(key)
        body = base64.b64decode(env["payload"], validate=True)
        data = pae(env["payloadType"], body)
        for s in env["signatures"]:
            # DSSE's keyid is an unauthenticated hint; securesystemslib refuses a signature
            # whose keyid is not its own keyid of the key (provgate writes the sha256 of the
            # key's DER SubjectPublicKeyInfo), so the signature is handed over under the key's
            # keyid: the bytes verified are the envelope's.
            sig = Signature(key["keyid"], base64.b64decode(s["sig"]).hex())
            try:
                ssl_key.verify_signature(sig, data)
            except Exception as e:  # securesystemslib's UnverifiedSignatureError & co
                print(f"not verified: {type(e).__name__}: {e}")
                continue
            print(f"verified by securesystemslib: {key['keytype']} {key['scheme']} "
                  f"payloadType {env['payloadType']}")
            return 0
        return 1
    if cmd == "keyid":
        print(sslib_public_key(open(sys.argv[2]).read())["keyid"])
        return 0
    if cmd == "payload":
        env = json.load(open(sys.argv[2]))
        sys.stdout.buffer.write(base64.b64decode(env["payload"], validate=True))
        return 0
    if cmd == "repack":
        envelope, payload, out = sys.argv[2:5]
        env = json.load(open(envelope))
        env["payload"] = base64.standard_b64encode(open(payload, "rb").read()).decode()
        with open(out, "w") as f:
            json.dump(env, f)
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
