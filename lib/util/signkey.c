/* SPDX-License-Identifier: MIT */
/* Ed25519 and ECDSA P-256 keys from PEM, signing and verifying through EVP_DigestSign. */
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "util/hash.h"
#include "util/signkey.h"

#define KEY_FILE_MAX (64u << 10)

struct pvg_key {
	EVP_PKEY *pkey;
	enum pvg_key_type type;
	char keyid[65];
	char sslib_keyid[65];
	/* securesystemslib's generate_ecdsa_key keeps the PEM's final newline, its
	 * import_ecdsakey_from_public_pem drops it: one key, two keyids */
	char sslib_keyid_nl[65];
};

static void pkey_freep(EVP_PKEY **p) { EVP_PKEY_free(*p); }
static void bio_freep(BIO **b) { BIO_free(*b); }
static void md_ctx_freep(EVP_MD_CTX **c) { EVP_MD_CTX_free(*c); }

void pvg_key_free(struct pvg_key *key)
{
	if (!key)
		return;
	EVP_PKEY_free(key->pkey);
	free(key);
}

enum pvg_key_type pvg_key_type(const struct pvg_key *key) { return key->type; }
const char *pvg_key_keyid(const struct pvg_key *key) { return key->keyid; }
const char *pvg_key_sslib_keyid(const struct pvg_key *key) { return key->sslib_keyid; }

bool pvg_key_has_keyid(const struct pvg_key *key, const char *keyid)
{
	return keyid && (strcasecmp(keyid, key->keyid) == 0 ||
			 strcasecmp(keyid, key->sslib_keyid) == 0 ||
			 strcasecmp(keyid, key->sslib_keyid_nl) == 0);
}

const char *pvg_key_type_name(const struct pvg_key *key)
{
	return key->type == PVG_KEY_ED25519 ? "ed25519" : "ecdsa-p256";
}

/* libcrypto's last reason, or a fallback; the error queue is emptied either way */
static const char *crypto_reason(const char *fallback)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r ? r : fallback;
}

/* securesystemslib 0.26's keyid: sha256 of the canonical JSON of its key metadata; canonical
 * JSON sorts keys and escapes only '\\' and '"' (a PEM has neither). */
static int sslib_keyid(struct pvg_key *k)
{
	_cleanup_free_ char *public = NULL;
	const char *keytype, *scheme;
	if (k->type == PVG_KEY_ED25519) {
		unsigned char raw[32];
		size_t rl = sizeof(raw);
		if (EVP_PKEY_get_raw_public_key(k->pkey, raw, &rl) != 1 || rl != 32)
			return -EIO;
		public = pvg_xcalloc(65, 1);
		pvg_hex(raw, 32, public);
		keytype = scheme = "ed25519";
	} else {
		_cleanup_(bio_freep) BIO *b = BIO_new(BIO_s_mem());
		if (!b || PEM_write_bio_PUBKEY(b, k->pkey) != 1)
			return -EIO;
		char *p = NULL;
		long n = BIO_get_mem_data(b, &p);
		while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			n--;
		public = pvg_asprintf("%.*s", (int)n, p);
		keytype = "ecdsa";
		scheme = "ecdsa-sha2-nistp256";
	}
	for (int nl = 0; nl < 2; nl++) {
		/* canonical JSON writes a newline inside a string as it is */
		_cleanup_free_ char *meta = pvg_asprintf(
			"{\"keyid_hash_algorithms\":[\"sha256\",\"sha512\"],\"keytype\":\"%s\","
			"\"keyval\":{\"public\":\"%s%s\"},\"scheme\":\"%s\"}",
			keytype, public, nl && k->type == PVG_KEY_ECDSA_P256 ? "\n" : "", scheme);
		pvg_sha256_hex(meta, strlen(meta), nl ? k->sslib_keyid_nl : k->sslib_keyid);
	}
	return 0;
}

static int key_from_pkey(EVP_PKEY *pkey, struct pvg_key **out, struct pvg_msg *why)
{
	_cleanup_(pkey_freep) EVP_PKEY *owned = pkey;
	enum pvg_key_type type;
	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519) {
		type = PVG_KEY_ED25519;
	} else if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC) {
		char group[64] = "";
		size_t gl = 0;
		if (EVP_PKEY_get_group_name(pkey, group, sizeof(group), &gl) != 1 ||
		    (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0)) {
			pvg_msg_set(why, NULL, "an ECDSA key on curve %s; provgate signs with Ed25519 or "
					    "ECDSA P-256 (prime256v1) keys", group[0] ? group : "?");
			return -EINVAL;
		}
		type = PVG_KEY_ECDSA_P256;
	} else {
		pvg_msg_set(why, NULL, "a %s key; provgate signs with Ed25519 or ECDSA P-256 keys",
				    EVP_PKEY_get0_type_name(pkey) ? EVP_PKEY_get0_type_name(pkey)
								  : "unknown");
		return -EINVAL;
	}
	struct pvg_key *k = pvg_xcalloc(1, sizeof(*k));
	k->pkey = TAKE_PTR(owned);
	k->type = type;
	unsigned char *der = NULL;
	int dl = i2d_PUBKEY(k->pkey, &der);
	if (dl <= 0 || sslib_keyid(k) < 0) {
		OPENSSL_free(der);
		pvg_msg_set(why, NULL, "cannot encode the public key: %s", crypto_reason("?"));
		pvg_key_free(k);
		return -EIO;
	}
	pvg_sha256_hex(der, (size_t)dl, k->keyid);
	OPENSSL_free(der);
	*out = k;
	return 0;
}

/* A passphrase is never asked for: an encrypted key fails to load (and is named as such). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

int pvg_key_from_pem(const char *pem, size_t len, bool private_key, struct pvg_key **key,
		     struct pvg_msg *why)
{
	*key = NULL;
	pvg_msg_clear(why);
	if (len > KEY_FILE_MAX || len > INT32_MAX) {
		pvg_msg_set(why, NULL, "%zu bytes: too large for a PEM key", len);
		return -EINVAL;
	}
	if (memmem(pem, len, "ENCRYPTED", 9)) {
		pvg_msg_set(why, "openssl pkey -in KEY.pem -out plain.pem; chmod 600 plain.pem",
			    "an encrypted private key; provgate reads unencrypted PEM keys only "
			    "(keep it in a file only you can read)");
		return -EINVAL;
	}
	bool has_private = memmem(pem, len, "PRIVATE KEY-----", 16) != NULL;
	_cleanup_(bio_freep) BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (!b)
		return -ENOMEM;
	EVP_PKEY *pkey = NULL;
	if (private_key || has_private)
		pkey = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
	else
		pkey = PEM_read_bio_PUBKEY(b, NULL, no_passphrase, NULL);
	if (!pkey) {
		const char *r = crypto_reason("no PEM block");
		if (private_key && !has_private)
			pvg_msg_set(why, NULL, "no PEM private key in it (%s)%s", r,
					    memmem(pem, len, "PUBLIC KEY-----", 15)
						    ? ": it is a public key; --sign-key takes the private one"
						    : "");
		else
			pvg_msg_set(why, NULL, "not a PEM %s key (%s)", has_private ? "private" : "public",
					    r);
		return -EINVAL;
	}
	return key_from_pkey(pkey, key, why);
}

static int load_file(const char *path, bool private_key, struct pvg_key **key, struct pvg_msg *why)
{
	*key = NULL;
	pvg_msg_clear(why);
	struct stat st;
	_cleanup_close_ int fd = pvg_open_regular(path, &st);
	if (fd < 0) {
		pvg_msg_set(why, NULL, "%s", fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return fd;
	}
	if ((uint64_t)st.st_size > KEY_FILE_MAX) {
		pvg_msg_set(why, NULL, "%" PRIu64 " bytes: too large for a PEM key", (uint64_t)st.st_size);
		return -EINVAL;
	}
	char buf[KEY_FILE_MAX + 1];
	ssize_t got = pvg_read_full(fd, buf, sizeof(buf));
	if (got < 0) {
		OPENSSL_cleanse(buf, sizeof(buf));
		pvg_msg_set(why, NULL, "read: %s", strerror((int)-got));
		return (int)got;
	}
	size_t len = (size_t)got;
	/* a private key in a file others may read is refused before it is used (a public key
	 * given by mistake is named as such instead: it may well be world-readable) */
	if (private_key && (st.st_mode & 077) && memmem(buf, len, "PRIVATE KEY-----", 16)) {
		OPENSSL_cleanse(buf, len);
		_cleanup_free_ char *hint = pvg_asprintf("chmod 600 %s", path);
		pvg_msg_set(why, hint, "permissions %04o are too open: a private key must be readable "
				    "by its owner only (chmod 600 %s)",
				    (unsigned)(st.st_mode & 07777), path);
		return -EPERM;
	}
	int r = pvg_key_from_pem(buf, len, private_key, key, why);
	OPENSSL_cleanse(buf, len);
	return r;
}

int pvg_key_load_private(const char *path, struct pvg_key **key, struct pvg_msg *why)
{
	return load_file(path, true, key, why);
}

int pvg_key_load_public(const char *path, struct pvg_key **key, struct pvg_msg *why)
{
	return load_file(path, false, key, why);
}

static const EVP_MD *digest_of(const struct pvg_key *key)
{
	/* Ed25519 signs the message itself (PureEdDSA): no digest may be named */
	return key->type == PVG_KEY_ED25519 ? NULL : EVP_sha256();
}

int pvg_key_sign(const struct pvg_key *key, const unsigned char *msg, size_t n,
		 unsigned char **sig, size_t *sig_len, struct pvg_msg *why)
{
	*sig = NULL;
	*sig_len = 0;
	_cleanup_(md_ctx_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t len = 0;
	if (!ctx || EVP_DigestSignInit(ctx, NULL, digest_of(key), NULL, key->pkey) != 1 ||
	    EVP_DigestSign(ctx, NULL, &len, msg, n) != 1) {
		pvg_msg_set(why, NULL, "cannot sign: %s", crypto_reason("EVP_DigestSignInit failed"));
		return -EIO;
	}
	unsigned char *s = pvg_xcalloc(len ? len : 1, 1);
	if (EVP_DigestSign(ctx, s, &len, msg, n) != 1) {
		free(s);
		pvg_msg_set(why, NULL, "cannot sign: %s", crypto_reason("EVP_DigestSign failed"));
		return -EIO;
	}
	*sig = s;
	*sig_len = len; /* ECDSA: DER, at most 72 bytes and often fewer */
	return 0;
}

int pvg_key_verify(const struct pvg_key *key, const unsigned char *msg, size_t n,
		   const unsigned char *sig, size_t sig_len)
{
	_cleanup_(md_ctx_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestVerifyInit(ctx, NULL, digest_of(key), NULL, key->pkey) != 1) {
		ERR_clear_error();
		return 0;
	}
	int r = EVP_DigestVerify(ctx, sig, sig_len, msg, n);
	ERR_clear_error();
	return r == 1;
}
