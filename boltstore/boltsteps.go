package boltstore

// The connection steps (store.StepStore) in bucketSteps: a row under its
// key, the client, subject, step and reason each length-prefixed (so that
// an application's rows are one range, and no field's bytes can pass for
// another's), its value the row as JSON. bucketStepsBySubject holds, for
// each row that names a person, the subject length-prefixed then the
// row's key, so that a person's rows (their page, their export and
// erasure) are one range too. keyStepsCount in bucketMeta is how many
// rows there are, kept by every write, so that the bound is checked
// without counting them. An addition joins the group commit: a school's
// flush every few seconds is one more writer in a commit that may be
// under way anyway.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

var (
	bucketSteps          = []byte("steps")
	bucketStepsBySubject = []byte("steps_by_subject")

	keyStepsCount = []byte("steps_count") // in bucketMeta
)

// stepKey is a row's key.
func stepKey(k store.StepKey) []byte {
	var out []byte
	for _, f := range []string{k.ClientID, k.Subject, k.Name, k.Reason} {
		out = append(out, ownerKey(f)...)
	}
	return out
}

// stepsCount and setStepsCount read and write the number of rows.
func stepsCount(tx *bolt.Tx) int {
	v := tx.Bucket(bucketMeta).Get(keyStepsCount)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

func addStepsCount(tx *bolt.Tx, delta int) error {
	if delta == 0 {
		return nil
	}
	return tx.Bucket(bucketMeta).Put(keyStepsCount, binary.BigEndian.AppendUint64(nil, uint64(max(stepsCount(tx)+delta, 0))))
}

func readStep(v []byte) (store.Step, error) {
	var s store.Step
	err := json.Unmarshal(v, &s)
	return s, err
}

// AddSteps implements store.StepStore.
func (s *boltStore) AddSteps(ctx context.Context, steps []store.Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(steps) == 0 {
		return nil
	}
	rows := make([]store.Step, len(steps))
	copy(rows, steps)
	for i := range rows {
		store.ClipStep(&rows[i])
	}
	store.SortSteps(rows)
	return s.write(ctx, func(tx *bolt.Tx) error {
		b := rare(tx, bucketSteps)
		added := 0
		for i := range rows {
			row := rows[i] // each run adds to what is stored anew
			k := stepKey(row.Key())
			if v := b.Get(k); v != nil {
				stored, err := readStep(v)
				if err != nil {
					return err
				}
				stored.Merge(&row)
				row = stored
			} else {
				added++
				if row.Subject != "" {
					if err := rare(tx, bucketStepsBySubject).Put(append(ownerKey(row.Subject), k...), nil); err != nil {
						return err
					}
				}
			}
			raw, err := json.Marshal(&row)
			if err != nil {
				return err
			}
			if err := b.Put(k, raw); err != nil {
				return err
			}
		}
		if err := addStepsCount(tx, added); err != nil {
			return err
		}
		if stepsCount(tx) <= store.MaxSteps {
			return nil
		}
		return evictSteps(tx)
	})
}

// evictSteps deletes the rows past store.MaxSteps, as store.EvictSteps
// picks them: every row is read, which a school comes to only when its
// rows are past the bound.
func evictSteps(tx *bolt.Tx) error {
	var all []store.Step
	err := rare(tx, bucketSteps).ForEach(func(_, v []byte) error {
		row, err := readStep(v)
		all = append(all, row)
		return err
	})
	if err != nil {
		return err
	}
	return deleteSteps(tx, store.EvictSteps(all, store.MaxSteps))
}

// deleteSteps deletes rows and their index keys.
func deleteSteps(tx *bolt.Tx, keys []store.StepKey) error {
	b, bySubject := rare(tx, bucketSteps), rare(tx, bucketStepsBySubject)
	gone := 0
	for _, key := range keys {
		k := stepKey(key)
		if b.Get(k) == nil {
			continue
		}
		if err := b.Delete(k); err != nil {
			return err
		}
		if key.Subject != "" {
			if err := bySubject.Delete(append(ownerKey(key.Subject), k...)); err != nil {
				return err
			}
		}
		gone++
	}
	return addStepsCount(tx, -gone)
}

// subjectSteps reads the rows that name subject, in the order of their
// keys.
func subjectSteps(tx *bolt.Tx, subject string) ([]store.Step, error) {
	b := rare(tx, bucketSteps)
	prefix := ownerKey(subject)
	var rows []store.Step
	c := rare(tx, bucketStepsBySubject).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		v := b.Get(k[len(prefix):])
		if v == nil {
			continue
		}
		row, err := readStep(v)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// QuerySteps implements store.StepStore.
func (s *boltStore) QuerySteps(ctx context.Context, q store.StepQuery) ([]store.Step, error) {
	var rows []store.Step
	err := s.view(ctx, func(tx *bolt.Tx) error {
		rows = nil
		keep := func(row store.Step) {
			if !row.Last.Before(q.Since) {
				rows = append(rows, row)
			}
		}
		if q.ClientID == "" {
			found, err := subjectSteps(tx, q.Subject)
			for _, row := range found {
				keep(row)
			}
			return err
		}
		prefix := ownerKey(q.ClientID)
		c := rare(tx, bucketSteps).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			row, err := readStep(v)
			if err != nil {
				return err
			}
			keep(row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return store.LatestSteps(rows), nil
}

// PurgeSteps implements store.StepStore, in one transaction (a school
// holds at most store.MaxSteps rows), and none when nothing is old: a
// janitor's pass over a quiet school writes nothing.
func (s *boltStore) PurgeSteps(ctx context.Context, before time.Time) (int, error) {
	var old []store.StepKey
	if err := s.view(ctx, func(tx *bolt.Tx) error {
		old = nil
		var err error
		old, err = oldSteps(tx, before)
		return err
	}); err != nil || len(old) == 0 {
		return 0, err
	}
	var n int
	err := s.update(ctx, func(tx *bolt.Tx) error {
		// Read again: another write may have made a row recent.
		old, err := oldSteps(tx, before)
		if err != nil {
			return err
		}
		n = len(old)
		return deleteSteps(tx, old)
	})
	return n, err
}

// oldSteps are the keys of the rows whose Last is before before.
func oldSteps(tx *bolt.Tx, before time.Time) ([]store.StepKey, error) {
	var old []store.StepKey
	err := rare(tx, bucketSteps).ForEach(func(_, v []byte) error {
		row, err := readStep(v)
		if err == nil && row.Last.Before(before) {
			old = append(old, row.Key())
		}
		return err
	})
	return old, err
}
