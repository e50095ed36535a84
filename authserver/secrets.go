package authserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"
)

// Prefixes make leaked tokens recognisable to secret scanners and people.
const (
	prefixAccess  = "sgat_"
	prefixRefresh = "sgrt_"
	prefixCode    = "sgac_"
	prefixSecret  = "sgcs_"
)

// randomString returns 256 bits of randomness, base64url without padding.
func randomString() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform is broken
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func newToken(prefix string) string { return prefix + randomString() }

// Codes, access and refresh tokens start with their issue time: the
// prefix, 16 hex digits of Unix microseconds, then 256 random bits. The
// time is not a secret (expires_in tells as much) and adds nothing to
// what must be guessed; it is there so that the key a store keeps a
// token under (tokenKey) sorts as the issue time. A bbolt commit of many
// exchanges then appends their tokens to a few pages at the end of the
// bucket instead of rewriting a random page for each, and a rotation or
// redemption finds its record among those issued at the same time.
const timedLen = 16 + 43

// newTimedToken is a code or token issued at now.
func newTimedToken(prefix string, now time.Time) string {
	// Written into one buffer on the stack and converted once: a token
	// is one allocation, not four (the random bytes, their encodings and
	// the concatenation).
	var b [8 + 32]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMicro()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform is broken
	}
	var out [8 + timedLen]byte
	t := append(out[:0], prefix...)
	t = hex.AppendEncode(t, b[:8])
	return string(base64.RawURLEncoding.AppendEncode(t, b[8:]))
}

// tokenKey is the store key of a code or token: its issue time as the
// token carries it, then the hash; tokens issued before they carried a
// time (and anything else presented) are kept under the hash alone, so
// both kinds keep working. A presented time is not trusted for anything:
// the key matches a stored one only if the hash does too.
func tokenKey(raw string) string {
	return keyWithDigest(raw, digestOf(raw))
}

// digestOf is the SHA-256 of raw, hashed from a buffer on the stack when
// raw fits it (codes and tokens do): converting a string longer than 32
// bytes to hash it would allocate.
func digestOf(raw string) [sha256.Size]byte {
	var buf [256]byte
	if len(raw) <= len(buf) {
		return sha256.Sum256(append(buf[:0], raw...))
	}
	return sha256.Sum256([]byte(raw))
}

// keyWithDigest is tokenKey for a digest the caller already has, made in
// one allocation.
func keyWithDigest(raw string, digest [sha256.Size]byte) string {
	t, _ := issueTime(raw)
	var buf [16 + 2*sha256.Size]byte
	return string(hex.AppendEncode(append(buf[:0], t...), digest[:]))
}

// issueTime is the hex time at the start of a timed token's body.
func issueTime(raw string) (string, bool) {
	i := strings.IndexByte(raw, '_')
	if i < 0 || len(raw)-i-1 != timedLen {
		return "", false
	}
	t := raw[i+1 : i+1+16]
	for j := 0; j < len(t); j++ {
		if c := t[j]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return t, true
}

// newGrantID is a grant's id: its creation time to the microsecond in
// hex, which sorts as the time does, then 128 random bits. Ids in time
// order make a store's inserts land together: bbolt appends a batch of
// new grants to one page instead of rewriting a random page for each.
func newGrantID(now time.Time) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMicro()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform is broken
	}
	var out [16 + 22]byte
	return string(base64.RawURLEncoding.AppendEncode(hex.AppendEncode(out[:0], b[:8]), b[8:]))
}

// hashToken is how tokens, codes and secrets are stored: a SHA-256 of
// 256-bit random values needs no salt or stretching.
func hashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

func hashSecret(secret string) string { return hashToken(secret) }

// secretMatches compares a presented secret with a stored hash in
// constant time.
func secretMatches(presented, storedHash string) bool {
	got := hashSecret(presented)
	return subtle.ConstantTimeCompare([]byte(got), []byte(storedHash)) == 1
}

// pkceMatches checks an S256 code verifier against the challenge in
// constant time.
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// validVerifier checks RFC 7636 §4.1 syntax: 43–128 unreserved characters.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// validChallenge checks an S256 challenge: base64url of 32 bytes.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}
