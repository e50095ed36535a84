package boltstore

// A person's rows in the bbolt store, for the export and erasure of
// what the school keeps of them (docs/privacy.md): found by reading every
// grant, token, code and pending request, and the audit trail's index by
// person.

import (
	"bytes"
	"context"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// subjectEventKeys returns the keys of the events naming subject, newest
// first.
func subjectEventKeys(tx *bolt.Tx, subject string) ([][]byte, error) {
	var keys [][]byte
	prefix := ownerKey(subject)
	err := scanBack(tx.Bucket(bucketAuditBySubject).Cursor(), prefix, append(prefix, bytes.Repeat([]byte{0xff}, 16)...),
		func(k []byte) (bool, error) { keys = append(keys, k); return true, nil })
	return keys, err
}

// subjectRows is what the store keeps of one person, found by reading
// every grant, token, code and pending request: exports and erasures are
// rare, and the revoked grants are in no index.
type subjectRows struct {
	consents [][]byte
	grants   []*store.Grant
	tokens   [][]byte
	codes    [][]byte
	pending  [][]byte
	events   [][]byte
}

func findSubject(tx *bolt.Tx, subject string) (*subjectRows, error) {
	r := &subjectRows{}
	suffix := []byte("\x00" + subject)
	if err := tx.Bucket(bucketConsents).ForEach(func(k, _ []byte) error {
		if bytes.HasSuffix(k, suffix) {
			r.consents = append(r.consents, append([]byte(nil), k...))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	if err := tx.Bucket(bucketGrants).ForEach(func(_, v []byte) error {
		var g store.Grant
		if err := decodeGrant(v, &g); err != nil {
			return err
		}
		if g.Identity.Subject == subject {
			r.grants = append(r.grants, &g)
			ids[g.ID] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var err error
	if r.tokens, err = keysWhere(tx.Bucket(bucketTokens), func(v []byte) bool {
		var t store.Token
		return decodeToken(v, &t) == nil && ids[t.GrantID]
	}); err != nil {
		return nil, err
	}
	if r.codes, err = keysWhere(tx.Bucket(bucketCodes), func(v []byte) bool {
		var c store.Code
		return decodeCode(v, &c) == nil && c.Identity.Subject == subject
	}); err != nil {
		return nil, err
	}
	if r.pending, err = keysWhere(tx.Bucket(bucketPending), func(v []byte) bool {
		var p store.PendingAuth
		return json.Unmarshal(v, &p) == nil && p.Identity.Subject == subject
	}); err != nil {
		return nil, err
	}
	r.events, err = subjectEventKeys(tx, subject)
	return r, err
}

func keysWhere(b *bolt.Bucket, match func(v []byte) bool) ([][]byte, error) {
	var keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if match(v) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return nil
	})
	return keys, err
}

// ExportSubject implements store.AuditStore.
func (s *boltStore) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if subject == "" {
		return nil, store.ErrNotFound
	}
	if err := s.indexAudit(ctx); err != nil {
		return nil, err
	}
	d := &store.SubjectData{Subject: subject}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		r, err := findSubject(tx, subject)
		if err != nil {
			return err
		}
		for _, k := range r.consents {
			var c store.Consent
			if err := getJSON(tx.Bucket(bucketConsents), string(k), &c); err != nil {
				return err
			}
			client, _, _ := bytes.Cut(k, []byte{0})
			d.Consents = append(d.Consents, store.SubjectConsent{ClientID: string(client), Consent: c})
		}
		d.Grants = r.grants
		d.Tokens, d.Codes, d.Pending = len(r.tokens), len(r.codes), len(r.pending)
		for _, k := range r.events {
			var e store.AuditEvent
			if err := getJSON(tx.Bucket(bucketAudit), string(k), &e); err != nil {
				return err
			}
			d.Events = append(d.Events, e)
		}
		d.Steps, err = subjectSteps(tx, subject)
		return err
	})
	return store.FoundSubject(d, err)
}

// EraseSubject implements store.AuditStore.
func (s *boltStore) EraseSubject(ctx context.Context, subject string) (*store.Erased, error) {
	if subject == "" {
		return nil, store.ErrNotFound
	}
	var n store.Erased
	err := s.updateAudit(ctx, func(tx *bolt.Tx, at *store.AuditTx) error {
		n = store.Erased{}
		// Every event naming the person is in the index before it is read.
		for more := true; more; {
			var err error
			if more, err = indexPending(tx, indexAuditBatch); err != nil {
				return err
			}
		}
		r, err := findSubject(tx, subject)
		if err != nil {
			return err
		}
		// The key of the newest event, read before the deletions (see
		// lastEventKey).
		if last := lastEventKey(tx); last != nil {
			if err := tx.Bucket(bucketMeta).Put(keyAuditLast, append([]byte(nil), last...)); err != nil {
				return err
			}
		}
		for _, del := range []struct {
			b    []byte
			keys [][]byte
		}{{bucketConsents, r.consents}, {bucketTokens, r.tokens}, {bucketCodes, r.codes}, {bucketPending, r.pending}} {
			for _, k := range del.keys {
				if err := tx.Bucket(del.b).Delete(k); err != nil {
					return err
				}
			}
		}
		for _, g := range r.grants {
			if !g.Revoked {
				n.Revoked++
				if err := unindexGrant(tx, g); err != nil {
					return err
				}
			}
			if err := tx.Bucket(bucketGrants).Delete([]byte(g.ID)); err != nil {
				return err
			}
		}
		for _, k := range r.events {
			if err := deleteEvent(tx, k); err != nil {
				return err
			}
		}
		steps, err := subjectSteps(tx, subject)
		if err != nil {
			return err
		}
		keys := make([]store.StepKey, len(steps))
		for i := range steps {
			keys[i] = steps[i].Key()
		}
		if err := deleteSteps(tx, keys); err != nil {
			return err
		}
		n.Consents, n.Grants, n.Tokens = len(r.consents), len(r.grants), len(r.tokens)
		n.Codes, n.Pending, n.Events, n.Steps = len(r.codes), len(r.pending), len(r.events), len(steps)
		return at.Erased(subject, &n)
	})
	if err != nil {
		return nil, err
	}
	return &n, nil
}
