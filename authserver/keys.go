package authserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// idTokenTTL is fixed: an ID token lives 10 minutes (documented in
// /auth.md), long enough to be read, short enough not to be a credential.
const idTokenTTL = 10 * time.Minute

// Keys holds a site's ES256 signing keys. Keys are published in the JWKS
// from creation, sign only from their SignFrom date, and stay published
// after retirement until every ID token they signed has expired.
type Keys struct {
	store KeyStore
	mu    sync.RWMutex
	keys  []signingKey // oldest first
}

type signingKey struct {
	StoredKey
	private jwk.Key
	public  jwk.Key
}

// LoadKeys reads the site's keys, creating the first one on first start.
func LoadKeys(ctx context.Context, store KeyStore, now time.Time) (*Keys, error) {
	k := &Keys{store: store}
	stored, err := store.LoadKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading signing keys: %w", err)
	}
	for _, sk := range stored {
		parsed, err := parseSigningKey(sk)
		if err != nil {
			return nil, err
		}
		k.keys = append(k.keys, parsed)
	}
	sort.Slice(k.keys, func(i, j int) bool { return k.keys[i].CreatedAt.Before(k.keys[j].CreatedAt) })
	if len(k.keys) == 0 {
		// Nothing has been signed yet, so the first key may sign at once:
		// it is published from the same moment.
		if _, err := k.add(ctx, now, now); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func parseSigningKey(sk StoredKey) (signingKey, error) {
	priv, err := jwk.ParseKey(sk.JWK)
	if err != nil {
		return signingKey{}, fmt.Errorf("parsing signing key %s: %w", sk.KID, err)
	}
	pub, err := priv.PublicKey()
	if err != nil {
		return signingKey{}, fmt.Errorf("deriving public key %s: %w", sk.KID, err)
	}
	return signingKey{StoredKey: sk, private: priv, public: pub}, nil
}

// add generates, stores and publishes a new key that signs from signFrom.
func (k *Keys) add(ctx context.Context, now, signFrom time.Time) (string, error) {
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		return "", err
	}
	if err := jwk.AssignKeyID(priv); err != nil {
		return "", err
	}
	kid, _ := priv.KeyID()
	_ = priv.Set(jwk.AlgorithmKey, jwa.ES256())
	_ = priv.Set(jwk.KeyUsageKey, "sig")
	blob, err := json.Marshal(priv)
	if err != nil {
		return "", err
	}
	sk := StoredKey{KID: kid, JWK: blob, CreatedAt: now, SignFrom: signFrom}
	if err := k.store.SaveKey(ctx, sk); err != nil {
		return "", fmt.Errorf("storing signing key: %w", err)
	}
	parsed, err := parseSigningKey(sk)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	k.keys = append(k.keys, parsed)
	k.mu.Unlock()
	return kid, nil
}

// Rotate publishes a new key now; it starts signing after publishDelay,
// which gives verifiers caching the JWKS time to see it. The keys it
// replaces retire at that moment.
func (k *Keys) Rotate(ctx context.Context, now time.Time, publishDelay time.Duration) (string, error) {
	signFrom := now.Add(publishDelay)
	kid, err := k.add(ctx, now, signFrom)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.keys {
		sk := &k.keys[i]
		if sk.KID != kid && sk.RetiredAt.IsZero() {
			sk.RetiredAt = signFrom
			if err := k.store.SaveKey(ctx, sk.StoredKey); err != nil {
				return "", err
			}
		}
	}
	return kid, nil
}

// signer returns the key that signs at now: the newest one whose signing
// period has begun and not ended.
func (k *Keys) signer(now time.Time) *signingKey {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for i := len(k.keys) - 1; i >= 0; i-- {
		sk := &k.keys[i]
		if !now.Before(sk.SignFrom) && (sk.RetiredAt.IsZero() || now.Before(sk.RetiredAt)) {
			return sk
		}
	}
	return nil
}

// CanSign reports whether a published key may sign now; discovery lists
// the ID-token fields only then.
func (k *Keys) CanSign(now time.Time) bool { return k.signer(now) != nil }

// Sign signs a JSON payload with the current key, naming it by kid.
func (k *Keys) Sign(payload []byte, now time.Time) ([]byte, error) {
	return k.signTyped(payload, "JWT", now)
}

// signTyped signs with typ in the protected header: the same keys sign
// ID tokens and identity assertions, and typ keeps one from passing for
// the other.
func (k *Keys) signTyped(payload []byte, typ string, now time.Time) ([]byte, error) {
	sk := k.signer(now)
	if sk == nil {
		return nil, fmt.Errorf("no signing key is active")
	}
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.KeyIDKey, sk.KID)
	_ = hdr.Set(jws.TypeKey, typ)
	return jws.Sign(payload, jws.WithKey(jwa.ES256(), sk.private, jws.WithProtectedHeaders(hdr)))
}

// JWKS returns the public key set: every key not yet past its retirement
// plus the ID-token lifetime.
func (k *Keys) JWKS(now time.Time) ([]byte, error) {
	set := jwk.NewSet()
	k.mu.RLock()
	for _, sk := range k.keys {
		if !sk.RetiredAt.IsZero() && now.After(sk.RetiredAt.Add(idTokenTTL+time.Minute)) {
			continue
		}
		if err := set.AddKey(sk.public); err != nil {
			k.mu.RUnlock()
			return nil, err
		}
	}
	k.mu.RUnlock()
	return json.Marshal(set)
}

// KIDs lists the published key ids, newest last.
func (k *Keys) KIDs() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]string, len(k.keys))
	for i, sk := range k.keys {
		out[i] = sk.KID
	}
	return out
}

// RotateKeys publishes a new signing key that signs after the configured
// publish delay; the current key signs until then.
func (s *Server) RotateKeys(ctx context.Context) (kid string, signFrom time.Time, err error) {
	now := s.cfg.Now()
	kid, err = s.keys.Rotate(ctx, now, s.cfg.KeyPublishDelay)
	return kid, now.Add(s.cfg.KeyPublishDelay), err
}
