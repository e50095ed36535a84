package authserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/schoolgate/schoolgate/store"
)

// idTokenTTL is fixed: an ID token lives 10 minutes (documented in
// /auth.md), long enough to be read, short enough not to be a credential.
const idTokenTTL = 10 * time.Minute

// Keys holds a site's ES256 signing keys. Keys are published in the JWKS
// from creation, sign only from their SignFrom date, and stay published
// after retirement until every ID token they signed has expired.
type Keys struct {
	store store.KeyStore
	mu    sync.RWMutex
	keys  []signingKey // oldest first
	// jwks is the key set last encoded: it changes only when a key joins
	// or leaves it, so requests for it are answered without encoding.
	jwks atomic.Pointer[encodedJWKS]
}

// encodedJWKS is an encoded key set and the kids it lists. A kid is the
// key's thumbprint, so the kids name the content.
type encodedJWKS struct {
	kids string
	body []byte
}

type signingKey struct {
	store.StoredKey
	private jwk.Key
	public  jwk.Key
	signer  *es256Signer
}

// LoadKeys reads the site's keys, creating the first one on first start.
func LoadKeys(ctx context.Context, store store.KeyStore, now time.Time) (*Keys, error) {
	return loadKeys(ctx, store, now, nil)
}

// siteInitializer is a store that writes a new site's first key and its
// initial settings in one transaction (InitKeys and InitSetting, one
// commit): a new school's first start then syncs its store once.
type siteInitializer interface {
	InitSite(ctx context.Context, first store.StoredKey, settings map[string][]byte) ([]store.StoredKey, error)
}

// loadKeys is LoadKeys that, on a first start, stores settings (as
// InitSetting would) with the first key when the store can in one
// transaction.
func loadKeys(ctx context.Context, st store.KeyStore, now time.Time, settings map[string][]byte) (*Keys, error) {
	// Every start but the first finds its keys: a read, with no key
	// generated and no write (a thousand schools start with a thousand
	// reads, not a thousand fsyncs).
	stored, err := st.LoadKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading signing keys: %w", err)
	}
	if len(stored) == 0 {
		// Nothing has been signed yet on a first start, so the first key
		// may sign at once: it is published from the same moment.
		first, priv, err := newKey(now, now)
		if err != nil {
			return nil, err
		}
		if init, ok := st.(siteInitializer); ok && settings != nil {
			stored, err = init.InitSite(ctx, first, settings)
		} else {
			stored, err = st.InitKeys(ctx, first)
		}
		if err != nil {
			return nil, fmt.Errorf("loading signing keys: %w", err)
		}
		if len(stored) == 1 && stored[0].KID == first.KID {
			// The store holds the key just made: it signs as made,
			// without its JSON parsed back (a sixth of a first start's
			// processor).
			sk, err := signingKeyOf(stored[0], priv)
			if err != nil {
				return nil, err
			}
			k := &Keys{store: st, keys: []signingKey{sk}}
			return k, nil
		}
	}
	k := &Keys{store: st}
	return k, k.set(stored)
}

// Reload reads the keys again, for when another instance of the site has
// rotated them.
func (k *Keys) Reload(ctx context.Context) error {
	stored, err := k.store.LoadKeys(ctx)
	if err != nil {
		return fmt.Errorf("loading signing keys: %w", err)
	}
	return k.set(stored)
}

// set replaces the keys in memory with stored, oldest first.
func (k *Keys) set(stored []store.StoredKey) error {
	keys := make([]signingKey, 0, len(stored))
	for _, sk := range stored {
		parsed, err := parseSigningKey(sk)
		if err != nil {
			return err
		}
		keys = append(keys, parsed)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].CreatedAt.Before(keys[j].CreatedAt) })
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return nil
}

// parseSigningKey is the signing key of a stored key. A variable for
// the test of a first start, which parses none.
var parseSigningKey = func(sk store.StoredKey) (signingKey, error) {
	priv, err := jwk.ParseKey(sk.JWK)
	if err != nil {
		return signingKey{}, fmt.Errorf("parsing signing key %s: %w", sk.KID, err)
	}
	return signingKeyOf(sk, priv)
}

// signingKeyOf is the signing key of sk, whose private key is priv.
func signingKeyOf(sk store.StoredKey, priv jwk.Key) (signingKey, error) {
	pub, err := priv.PublicKey()
	if err != nil {
		return signingKey{}, fmt.Errorf("deriving public key %s: %w", sk.KID, err)
	}
	signer, err := newES256Signer(priv, sk.KID)
	if err != nil {
		return signingKey{}, err
	}
	return signingKey{StoredKey: sk, private: priv, public: pub, signer: signer}, nil
}

// newStoredKey generates an ES256 key that signs from signFrom.
func newStoredKey(now, signFrom time.Time) (store.StoredKey, error) {
	sk, _, err := newKey(now, signFrom)
	return sk, err
}

// newKey is newStoredKey and the key's private JWK, as stored.
func newKey(now, signFrom time.Time) (store.StoredKey, jwk.Key, error) {
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return store.StoredKey{}, nil, err
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		return store.StoredKey{}, nil, err
	}
	if err := jwk.AssignKeyID(priv); err != nil {
		return store.StoredKey{}, nil, err
	}
	kid, _ := priv.KeyID()
	_ = priv.Set(jwk.AlgorithmKey, jwa.ES256())
	_ = priv.Set(jwk.KeyUsageKey, "sig")
	blob, err := json.Marshal(priv)
	if err != nil {
		return store.StoredKey{}, nil, err
	}
	return store.StoredKey{KID: kid, JWK: blob, CreatedAt: now, SignFrom: signFrom}, priv, nil
}

// Rotate publishes a new key now; it starts signing after publishDelay,
// which gives verifiers caching the JWKS time to see it. The keys it
// replaces retire at that moment, on every instance of the site alike,
// since the moment is stored with them.
func (k *Keys) Rotate(ctx context.Context, now time.Time, publishDelay time.Duration) (string, error) {
	sk, err := newStoredKey(now, now.Add(publishDelay))
	if err != nil {
		return "", err
	}
	if a := store.AuditOf(ctx); a != nil {
		a.Record(store.AuditEvent{Type: store.EventKeyRotated, Target: sk.KID})
	}
	if err := k.store.RotateKey(ctx, sk); err != nil {
		return "", fmt.Errorf("storing signing key: %w", err)
	}
	return sk.KID, k.Reload(ctx)
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
	return sk.signer.sign(payload, typ)
}

// JWKS returns the public key set: every key not yet past its retirement
// plus the ID-token lifetime. The caller must not change it: it is shared
// until the set changes.
func (k *Keys) JWKS(now time.Time) ([]byte, error) {
	var kids strings.Builder
	var published []jwk.Key
	k.mu.RLock()
	for _, sk := range k.keys {
		if !sk.RetiredAt.IsZero() && now.After(sk.RetiredAt.Add(idTokenTTL+time.Minute)) {
			continue
		}
		kids.WriteString(sk.KID)
		kids.WriteByte(0)
		published = append(published, sk.public)
	}
	k.mu.RUnlock()
	if c := k.jwks.Load(); c != nil && c.kids == kids.String() {
		return c.body, nil
	}
	set := jwk.NewSet()
	for _, pub := range published {
		if err := set.AddKey(pub); err != nil {
			return nil, err
		}
	}
	body, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	k.jwks.Store(&encodedJWKS{kids: kids.String(), body: body})
	return body, nil
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
	ctx, _ = s.auditContext(ctx)
	kid, err = s.keys.Rotate(ctx, now, s.cfg.KeyPublishDelay)
	return kid, now.Add(s.cfg.KeyPublishDelay), err
}
