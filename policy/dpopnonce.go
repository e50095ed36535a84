package policy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// A school that asks for server nonces (RFC 9449 §8, §9) hands out a new
// one every nonceSlot and accepts one from any instance of the school
// without asking the store: a nonce is its time slot and an HMAC of it
// under a key every instance shares (the school's store holds it), so
// any instance verifies what any other issued. A nonce is accepted from
// the slot before last to the next one: two to three minutes after it was
// issued, and from an instance whose clock runs up to a minute ahead.

const (
	nonceSlot = 60 // seconds
	// nonceMACSize is the HMAC-SHA256 kept: 128 bits, beyond guessing.
	nonceMACSize = 16
	nonceSize    = 8 + nonceMACSize
)

// Nonces issues and checks a school's DPoP nonces.
type Nonces struct {
	key []byte
	cur atomic.Pointer[issuedNonce]
}

type issuedNonce struct {
	slot  int64
	value string
}

// NewNonces makes the nonces of a key, which every instance of the school
// shares (32 random bytes).
func NewNonces(key []byte) *Nonces { return &Nonces{key: key} }

func (n *Nonces) mac(slot int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot))
	m := hmac.New(sha256.New, n.key)
	m.Write([]byte("schoolgate dpop nonce\x00"))
	m.Write(b[:])
	return m.Sum(nil)[:nonceMACSize]
}

// Current returns the nonce of now's slot, made once per slot.
func (n *Nonces) Current(now time.Time) string {
	slot := floorDiv(now.Unix(), nonceSlot)
	if c := n.cur.Load(); c != nil && c.slot == slot {
		return c.value
	}
	var b [nonceSize]byte
	binary.BigEndian.PutUint64(b[:8], uint64(slot))
	copy(b[8:], n.mac(slot))
	c := &issuedNonce{slot: slot, value: base64.RawURLEncoding.EncodeToString(b[:])}
	n.cur.Store(c)
	return c.value
}

// Check reports whether nonce is one of the school's, still accepted,
// and whether it is now's (a client holding an older one is given the
// current one with the answer).
func (n *Nonces) Check(nonce string, now time.Time) (valid, current bool) {
	var b [nonceSize]byte
	if len(nonce) != base64.RawURLEncoding.EncodedLen(nonceSize) {
		return false, false
	}
	if _, err := base64.RawURLEncoding.Decode(b[:], []byte(nonce)); err != nil {
		return false, false
	}
	slot := int64(binary.BigEndian.Uint64(b[:8]))
	cur := floorDiv(now.Unix(), nonceSlot)
	if slot < cur-2 || slot > cur+1 || !hmac.Equal(b[8:], n.mac(slot)) {
		return false, false
	}
	return true, slot == cur
}
