package boltstore

// The clients a site knows, the authorizations waiting for consent and the
// consents given, in the bbolt store.

import (
	"context"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// GetClient returns a stored client.
func (s *boltStore) GetClient(ctx context.Context, id string) (*store.Client, error) {
	var c store.Client
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return getJSON(rare(tx, bucketClients), id, &c)
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// PutClient stores a client.
func (s *boltStore) PutClient(ctx context.Context, c *store.Client) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(rare(tx, bucketClients), c.ID, c)
	})
}

// CreateClient implements store.ClientStore. Clients are few (registrations
// are capped), so the scan costs little and runs only on creation.
func (s *boltStore) CreateClient(ctx context.Context, c *store.Client, limit int) (*store.Client, bool, error) {
	var got *store.Client
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		got = nil
		b := rare(tx, bucketClients)
		n := 0
		err := b.ForEach(func(k, v []byte) error {
			var old store.Client
			if err := json.Unmarshal(v, &old); err != nil {
				return err
			}
			if string(k) == c.ID || (c.RegistrationKey != "" && old.Kind == c.Kind && old.RegistrationKey == c.RegistrationKey) {
				got = &old
			}
			if old.Kind == c.Kind {
				n++
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case got != nil:
			at.Discard()
			return nil
		case limit > 0 && n >= limit:
			return store.ErrClientLimit
		}
		return putJSON(b, c.ID, c)
	})
	if err != nil {
		return nil, false, err
	}
	if got != nil {
		return got, true, nil
	}
	return c, false, nil
}

// DeleteClient implements store.ClientStore.
func (s *boltStore) DeleteClient(ctx context.Context, id string) (int, error) {
	n := 0
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		b := rare(tx, bucketClients)
		if b.Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		var err error
		n, err = revokeClientGrants(tx, id)
		at.Ended(n)
		return err
	})
	return n, err
}

// ListClients returns every stored client.
func (s *boltStore) ListClients(ctx context.Context) ([]*store.Client, error) {
	var out []*store.Client
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return rare(tx, bucketClients).ForEach(func(_, v []byte) error {
			var c store.Client
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			out = append(out, &c)
			return nil
		})
	})
	return out, err
}

// CountClientsByKind counts stored clients of one kind.
func (s *boltStore) CountClientsByKind(ctx context.Context, kind string) (int, error) {
	clients, err := s.ListClients(ctx)
	n := 0
	for _, c := range clients {
		if c.Kind == kind {
			n++
		}
	}
	return n, err
}

// PutPending stores a pending authorization request.
func (s *boltStore) PutPending(ctx context.Context, p *store.PendingAuth) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketPending), p.ID, p)
	})
}

// TakePending returns and deletes a pending authorization request.
func (s *boltStore) TakePending(ctx context.Context, id string) (*store.PendingAuth, error) {
	var p store.PendingAuth
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPending)
		if err := getJSON(b, id, &p); err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func consentKey(clientID, subject string) string { return clientID + "\x00" + subject }

// GetConsent returns what a person granted a client before.
func (s *boltStore) GetConsent(ctx context.Context, clientID, subject string) (*store.Consent, error) {
	var c store.Consent
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketConsents), consentKey(clientID, subject), &c)
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// PutConsent remembers a person's grant to a client.
func (s *boltStore) PutConsent(ctx context.Context, clientID, subject string, c *store.Consent) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketConsents), consentKey(clientID, subject), c)
	})
}
