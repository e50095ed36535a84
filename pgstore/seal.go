package pgstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// sealInfo binds the derived key to this one use: the same secret used
// for something else one day derives another key.
const sealInfo = "schoolgate pgstore signing keys v1"

// newSealer derives the AES-256-GCM key that seals a site's private
// signing keys from the operator's key secret, with HKDF-SHA256 (no salt:
// the secret is a configured random value, not a password to stretch).
func newSealer(secret string) cipher.AEAD {
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, sealInfo, 32)
	if err != nil {
		panic("pgstore: HKDF refused a 32-byte key: " + err.Error()) // cannot happen
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("pgstore: AES refused a 32-byte key: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("pgstore: GCM: " + err.Error())
	}
	return aead
}

// keyAAD binds a sealed key to its site and kid: a row copied to another
// kid or another site's row does not open. The issuer stands for the site
// because it survives a dump and restore, where the site's id may not.
func (s *Site) keyAAD(kid string) []byte { return []byte(s.issuer + "\x00" + kid) }

// seal encrypts a private JWK, with a fresh nonce before the ciphertext.
func (s *Site) seal(kid string, jwk []byte) []byte {
	nonce := make([]byte, s.keys.NonceSize(), s.keys.NonceSize()+len(jwk)+s.keys.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("pgstore: crypto/rand failed: " + err.Error()) // the platform is broken
	}
	return s.keys.Seal(nonce, nonce, jwk, s.keyAAD(kid))
}

// errWrongSecret: the key secret is not the one the keys were sealed with
// (or the row was altered). Making a new key would not help: the site's
// published keys would change under every relying party.
var errWrongSecret = errors.New("the stored signing keys do not open with this key secret: is it the one the site was set up with?")

// open decrypts a sealed key.
func (s *Site) open(kid string, sealed []byte) ([]byte, error) {
	n := s.keys.NonceSize()
	if len(sealed) < n {
		return nil, errWrongSecret
	}
	jwk, err := s.keys.Open(nil, sealed[:n], sealed[n:], s.keyAAD(kid))
	if err != nil {
		return nil, errWrongSecret
	}
	return jwk, nil
}
