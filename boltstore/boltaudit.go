package boltstore

// The audit trail in the bbolt store. An event is kept in bucketAudit
// under its key: the time (Unix nanoseconds, big-endian) and a sequence
// number, so the bucket is in order of time and a cursor is a key. Two
// indexes point at it: by person (the subject concerned and the operator
// who acted) and by client, each key the owner (length-prefixed) then the
// event's key. A query for one person or one application walks its index
// back from the newest and reads a page's events, however many the site
// keeps.
//
// The write that stores an event does not index it, nor put it in
// bucketAudit: it lands in a small bucket of its own (bucketAuditNew), one
// page, which the write that finds auditNewBatch events waiting moves to
// the end of bucketAudit. The indexes catch up in batches (indexAudit),
// from the last event indexed (keyAuditIndexed) to the end of bucketAudit,
// after moving what waits in bucketAuditNew: before a query or an export,
// inside an erasure's transaction, and on the janitor's purge. An event's
// transaction thus writes one page more, and an eighth of the end of the
// tree of every event kept, not that end each time (a leaf and its
// branches) nor a page of each index: what a code exchange or a refresh
// pays for its event. For the catching up to miss none, keys grow in the
// order events commit: an event that commits after a later one (its time is
// taken before its transaction) is keyed at the latest time stored, a few
// milliseconds from its own, which it keeps.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

var (
	bucketAudit          = []byte("audit")
	bucketAuditNew       = []byte("audit_new")
	bucketAuditBySubject = []byte("audit_by_subject")
	bucketAuditByClient  = []byte("audit_by_client")

	keyAuditIndexed = []byte("audit_indexed") // in bucketMeta
	keyAuditLast    = []byte("audit_last")    // in bucketMeta: lastEventKey
)

// purgeAuditBatch bounds the events one purge transaction deletes,
// indexAuditBatch those one catching up indexes, and auditNewBatch those
// bucketAuditNew holds before a write moves them.
const (
	purgeAuditBatch = 5000
	indexAuditBatch = 20000
	auditNewBatch   = 8
)

// updateAudit runs fn in a read-write transaction that also stores the
// audit events of the context and those fn adds.
func (s *boltStore) updateAudit(ctx context.Context, fn func(*bolt.Tx, *store.AuditTx) error) error {
	return s.updateAuditIn(ctx, fn, true)
}

// updateAuditIn is updateAudit; with placed false, a fresh file's first
// commit returns before the file is in its place (commitIn).
func (s *boltStore) updateAuditIn(ctx context.Context, fn func(*bolt.Tx, *store.AuditTx) error, placed bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The request waits for the commit's sync, not the processors; the
	// commit's work is charged to it all the same (boltcharge.go).
	var m chargeMeter
	w := store.WaiterOf(ctx)
	if w != nil {
		w.Pause()
		defer func() {
			w.Charge(time.Duration(m.used()))
			w.Resume()
		}()
	}
	var at *store.AuditTx
	write := auditing(ctx, &at, fn)
	err := s.commitIn(func(tx *bolt.Tx) error {
		if w != nil {
			m = startCharge() // inside: the wait for bbolt's lock is no work
		}
		return write(tx)
	}, placed)
	if err == nil {
		at.Committed()
	}
	return err
}

// writeAudit is updateAudit through the group commit.
func (s *boltStore) writeAudit(ctx context.Context, fn func(*bolt.Tx, *store.AuditTx) error) error {
	var at *store.AuditTx
	err := s.write(ctx, auditing(ctx, &at, fn))
	if err == nil {
		at.Committed()
	}
	return err
}

// auditing wraps fn so that each run of it begins its events anew and
// stores them before the commit.
func auditing(ctx context.Context, at **store.AuditTx, fn func(*bolt.Tx, *store.AuditTx) error) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		*at = store.BeginAudit(ctx)
		if err := fn(tx, *at); err != nil {
			return err
		}
		return putEvents(tx, (*at).Events)
	}
}

// putEvents stores evs in bucketAuditNew, and moves the events there to
// bucketAudit once auditNewBatch are waiting.
func putEvents(tx *bolt.Tx, evs []store.AuditEvent) error {
	if len(evs) == 0 {
		return nil
	}
	b := tx.Bucket(bucketAuditNew)
	// Its few events fill one page rather than split it in two.
	b.FillPercent = 1
	// bucketAuditNew is one page, whose Last is safe (see lastEventKey).
	last, _ := b.Cursor().Last()
	if last == nil {
		last = lastEventKey(tx)
	}
	var seq uint64
	for i := range evs {
		var err error
		if seq, err = b.NextSequence(); err != nil {
			return err
		}
		at := uint64(evs[i].Time.UnixNano())
		if last != nil {
			at = max(at, binary.BigEndian.Uint64(last))
		}
		k := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), at), seq)
		evs[i].ID = hex.EncodeToString(k)
		// Encoded by hand (auditjson.go), into a value of its own: bbolt
		// keeps it until the commit.
		raw, err := appendEvent(make([]byte, 0, eventSize(&evs[i])), &evs[i])
		if err != nil {
			return err
		}
		if err := b.Put(k, raw); err != nil {
			return err
		}
		last = k
	}
	if first, _ := b.Cursor().First(); seq-binary.BigEndian.Uint64(first[8:]) < auditNewBatch-1 {
		return nil
	}
	return moveNew(tx)
}

// moveNew moves the events of bucketAuditNew to the end of bucketAudit,
// where they wait to be indexed.
func moveNew(tx *bolt.Tx) error {
	fresh, events := tx.Bucket(bucketAuditNew), tx.Bucket(bucketAudit)
	var keys [][]byte
	c := fresh.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := events.Put(append([]byte(nil), k...), append([]byte(nil), v...)); err != nil {
			return err
		}
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := fresh.Delete(k); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		return nil
	}
	// Once the waiting events are moved, the newest of them is what the
	// next event's time must not precede (lastEventKey).
	return tx.Bucket(bucketMeta).Put(keyAuditLast, keys[len(keys)-1])
}

// lastEventKey is the key of the newest event ever moved to bucketAudit,
// which a new one's time must not precede. It is kept in bucketMeta (by
// moveNew, and by EraseSubject before it deletes) rather than read
// with Cursor.Last: after a transaction deleted many events (an erasure),
// Last on their bucket can loop forever over the emptied pages before the
// commit rebalances them. A file written before the key existed falls
// back to Last once; EraseSubject reads it before deleting anything.
func lastEventKey(tx *bolt.Tx) []byte {
	if k := tx.Bucket(bucketMeta).Get(keyAuditLast); k != nil {
		return k
	}
	k, _ := tx.Bucket(bucketAudit).Cursor().Last()
	return k
}

// indexPending indexes up to max of the events stored after the last one
// indexed and reports whether any remain.
func indexPending(tx *bolt.Tx, max int) (more bool, err error) {
	if err := moveNew(tx); err != nil {
		return false, err
	}
	meta := tx.Bucket(bucketMeta)
	var keys [][]byte
	var vals [][]byte
	c := tx.Bucket(bucketAudit).Cursor()
	k, v := firstUnindexed(c, meta.Get(keyAuditIndexed))
	for ; k != nil; k, v = c.Next() {
		if len(keys) == max {
			more = true
			break
		}
		keys, vals = append(keys, append([]byte(nil), k...)), append(vals, append([]byte(nil), v...))
	}
	for i, k := range keys {
		var e store.AuditEvent
		if err := json.Unmarshal(vals[i], &e); err != nil {
			return false, err
		}
		if err := indexEvent(tx, k, &e, true); err != nil {
			return false, err
		}
	}
	if len(keys) > 0 {
		return more, meta.Put(keyAuditIndexed, keys[len(keys)-1])
	}
	return more, nil
}

// firstUnindexed positions c on the first event after mark, the last one
// indexed (which a purge may have deleted since).
func firstUnindexed(c *bolt.Cursor, mark []byte) ([]byte, []byte) {
	if mark == nil {
		return c.First()
	}
	k, v := c.Seek(mark)
	if k != nil && bytes.Equal(k, mark) {
		return c.Next()
	}
	return k, v
}

// indexAudit brings the indexes up to date, a batch a transaction, unless
// they are: a read that finds nothing to index writes nothing.
func (s *boltStore) indexAudit(ctx context.Context) error {
	for {
		behind := false
		if err := s.view(ctx, func(tx *bolt.Tx) error {
			k, _ := firstUnindexed(tx.Bucket(bucketAudit).Cursor(), tx.Bucket(bucketMeta).Get(keyAuditIndexed))
			fresh, _ := tx.Bucket(bucketAuditNew).Cursor().First()
			behind = k != nil || fresh != nil
			return nil
		}); err != nil || !behind {
			return err
		}
		more := false
		if err := s.commit(func(tx *bolt.Tx) (err error) {
			more, err = indexPending(tx, indexAuditBatch)
			return err
		}); err != nil || !more {
			return err
		}
	}
}

// timeKey is the start of the keys at t.
func timeKey(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

// ownerKey is the prefix of an owner's keys in an index.
func ownerKey(owner string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(owner))), owner...)
}

// indexEvent adds (or removes) the event's index keys.
func indexEvent(tx *bolt.Tx, k []byte, e *store.AuditEvent, add bool) error {
	type entry struct {
		b     *bolt.Bucket
		owner string
	}
	entries := []entry{{tx.Bucket(bucketAuditBySubject), e.Subject}, {tx.Bucket(bucketAuditByClient), e.ClientID}}
	if e.ActorSub != e.Subject {
		entries = append(entries, entry{tx.Bucket(bucketAuditBySubject), e.ActorSub})
	}
	for _, en := range entries {
		if en.owner == "" {
			continue
		}
		ik := append(ownerKey(en.owner), k...)
		var err error
		if add {
			err = en.b.Put(ik, nil)
		} else {
			err = en.b.Delete(ik)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteEvent removes an event and its index keys.
func deleteEvent(tx *bolt.Tx, k []byte) error {
	b := tx.Bucket(bucketAudit)
	var e store.AuditEvent
	if err := getJSON(b, string(k), &e); err != nil {
		return err
	}
	if err := indexEvent(tx, k, &e, false); err != nil {
		return err
	}
	return b.Delete(k)
}

// untilSlack is how far past a query's Until its scan starts: more than
// a transaction's commit may lag behind the time its event was stamped.
const untilSlack = time.Minute

// QueryAudit implements store.AuditStore.
func (s *boltStore) QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	var page store.AuditPage
	limit := store.AuditLimit(q.Limit)
	start := bytes.Repeat([]byte{0xff}, 16)
	if !q.Until.IsZero() {
		// An event's key is its time or, when it committed after a later
		// one, that one's: the scan starts a little past Until and
		// q.Matches keeps only what is not after it.
		start = timeKey(q.Until.Add(untilSlack))
	}
	if q.Cursor != "" {
		c, err := hex.DecodeString(q.Cursor)
		if err != nil || len(c) != 16 {
			return page, store.ErrBadCursor
		}
		start = c
	}
	if err := s.indexAudit(ctx); err != nil {
		return page, err
	}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		page.Events = nil
		events := tx.Bucket(bucketAudit)
		var prefix []byte
		cur := events.Cursor()
		switch {
		case q.Subject != "":
			prefix, cur = ownerKey(q.Subject), tx.Bucket(bucketAuditBySubject).Cursor()
		case q.ClientID != "":
			prefix, cur = ownerKey(q.ClientID), tx.Bucket(bucketAuditByClient).Cursor()
		}
		since := timeKey(q.Since)
		return scanBack(cur, prefix, append(append([]byte(nil), prefix...), start...), func(k []byte) (bool, error) {
			if !q.Since.IsZero() && bytes.Compare(k[:8], since) < 0 {
				return false, nil
			}
			var e store.AuditEvent
			if err := getJSON(events, string(k), &e); err != nil {
				return false, err
			}
			if !q.Matches(&e) {
				return true, nil
			}
			page.Events = append(page.Events, e)
			if len(page.Events) == limit {
				page.Next = hex.EncodeToString(k)
				return false, nil
			}
			return true, nil
		})
	})
	return page, err
}

// scanBack calls fn with the event key of each key of c under prefix and
// before start, newest first, while fn says go on.
func scanBack(c *bolt.Cursor, prefix, start []byte, fn func(k []byte) (bool, error)) error {
	k, _ := c.Seek(start)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		more, err := fn(append([]byte(nil), k[len(prefix):]...))
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// PurgeAudit implements store.AuditStore, a batch of events per
// transaction.
func (s *boltStore) PurgeAudit(ctx context.Context, before time.Time) (int, error) {
	if err := s.indexAudit(ctx); err != nil {
		return 0, err
	}
	total := 0
	end := timeKey(before)
	for {
		n := 0
		err := s.update(ctx, func(tx *bolt.Tx) error {
			n = 0
			var dead [][]byte
			c := tx.Bucket(bucketAudit).Cursor()
			for k, _ := c.First(); k != nil && bytes.Compare(k[:8], end) < 0 && len(dead) < purgeAuditBatch; k, _ = c.Next() {
				dead = append(dead, append([]byte(nil), k...))
			}
			for _, k := range dead {
				if err := deleteEvent(tx, k); err != nil {
					return err
				}
			}
			n = len(dead)
			return nil
		})
		total += n
		if err != nil || n < purgeAuditBatch {
			return total, err
		}
	}
}

// RecordAudit implements store.AuditStore.
func (s *boltStore) RecordAudit(ctx context.Context) error {
	return s.update(ctx, func(*bolt.Tx) error { return nil })
}
