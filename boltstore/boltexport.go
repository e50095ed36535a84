package boltstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// Export reads the whole state of the site in a bbolt file, opening it
// read-only so that the file stays as it was (going back is the old
// configuration). A running gateway holds the file's lock, so that is
// refused with a word to stop it first.
func Export(path string) (*store.Dump, error) {
	if _, err := os.Stat(path); err != nil {
		if Making(path) {
			return nil, fmt.Errorf("opening %s: a running gateway is making the file: stop Caddy first", path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("opening %s: the file is locked by a running gateway: stop Caddy first", path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer db.Close()
	d := &store.Dump{Settings: map[string][]byte{}}
	err = db.View(func(tx *bolt.Tx) error {
		if err := checkSchema(tx); err != nil {
			return err
		}
		return exportBuckets(tx, d)
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// checkSchema refuses a file written by a newer build.
func checkSchema(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return errors.New("not a schoolgate store: it has no meta bucket")
	}
	var have int
	if v := meta.Get(keySchemaVersion); v != nil {
		if err := json.Unmarshal(v, &have); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
	}
	if have > schemaVersion {
		return fmt.Errorf("store schema version %d is newer than this build supports (%d)", have, schemaVersion)
	}
	return nil
}

func exportBuckets(tx *bolt.Tx, d *store.Dump) error {
	each := func(name []byte, fn func(k string, v []byte) error) error {
		b := found(tx, name)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error { return fn(string(k), v) })
	}
	steps := []struct {
		bucket []byte
		fn     func(k string, v []byte) error
	}{
		{bucketKeys, func(_ string, v []byte) error {
			return decodeInto(v, func(k *store.StoredKey) { d.Keys = append(d.Keys, *k) })
		}},
		{bucketClients, func(_ string, v []byte) error {
			return decodeInto(v, func(c *store.Client) { d.Clients = append(d.Clients, c) })
		}},
		{bucketConsents, func(k string, v []byte) error {
			client, subject, ok := strings.Cut(k, "\x00")
			if !ok {
				return fmt.Errorf("consent key %q is malformed", k)
			}
			return decodeInto(v, func(c *store.Consent) {
				d.Consents = append(d.Consents, store.DumpConsent{ClientID: client, Subject: subject, Consent: c})
			})
		}},
		{bucketCodes, func(k string, v []byte) error {
			c := new(store.Code)
			if err := decodeCode(v, c); err != nil {
				return err
			}
			d.Codes = append(d.Codes, store.DumpCode{Hash: k, Code: c})
			return nil
		}},
		{bucketGrants, func(_ string, v []byte) error {
			g := new(store.Grant)
			if err := decodeGrant(v, g); err != nil {
				return err
			}
			d.Grants = append(d.Grants, g)
			return nil
		}},
		{bucketTokens, func(k string, v []byte) error {
			t := new(store.Token)
			if err := decodeToken(v, t); err != nil {
				return err
			}
			d.Tokens = append(d.Tokens, store.IssuedToken{Hash: k, Token: t})
			return nil
		}},
		{bucketSettings, func(k string, v []byte) error {
			d.Settings[k] = append([]byte(nil), v...)
			return nil
		}},
	}
	for _, s := range steps {
		if err := each(s.bucket, s.fn); err != nil {
			return fmt.Errorf("reading %s: %w", s.bucket, err)
		}
	}
	if b := found(tx, bucketCatalog); b != nil {
		if v := b.Get([]byte("feed")); v != nil {
			d.Catalog = append([]byte(nil), v...)
		}
	}
	return nil
}

// decodeInto decodes v as a T and hands it to keep.
func decodeInto[T any](v []byte, keep func(*T)) error {
	var x T
	if err := json.Unmarshal(v, &x); err != nil {
		return err
	}
	keep(&x)
	return nil
}
