package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// An event that commits after a later one (its time was taken before its
// transaction) is indexed all the same: the indexes catch up in commit
// order, and a query by person finds both, each with its own time.
func TestAuditLateCommitIndexed(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	record := func(when time.Time) {
		a := &store.Audit{}
		a.Record(store.AuditEvent{Time: when, Type: store.EventKeyRotated, Subject: "ada"})
		if err := st.RecordAudit(store.WithAudit(context.Background(), a)); err != nil {
			t.Fatal(err)
		}
	}
	record(at)
	// A query indexes what is stored so far.
	if page, err := st.QueryAudit(context.Background(), store.AuditQuery{Subject: "ada"}); err != nil || len(page.Events) != 1 {
		t.Fatalf("first query: %+v, %v", page.Events, err)
	}
	record(at.Add(-time.Second)) // taken before the first, committed after
	page, err := st.QueryAudit(context.Background(), store.AuditQuery{Subject: "ada"})
	if err != nil || len(page.Events) != 2 {
		t.Fatalf("the late event is not indexed: %+v, %v", page.Events, err)
	}
	// Listed in the order of commit, each with its own time.
	if !page.Events[0].Time.Equal(at.Add(-time.Second)) || !page.Events[1].Time.Equal(at) {
		t.Errorf("times %v, %v; want the late event's own first", page.Events[0].Time, page.Events[1].Time)
	}
}

// An event's write leaves it in bucketAuditNew until auditNewBatch wait
// there; that write moves them all to bucketAudit. A query finds them
// wherever they are, with or without a filter.
func TestAuditNewMoved(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*boltStore)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	record := func(i int) {
		a := &store.Audit{}
		a.Record(store.AuditEvent{Time: at.Add(time.Duration(i) * time.Second), Type: store.EventKeyRotated, Subject: "ada"})
		if err := st.RecordAudit(store.WithAudit(context.Background(), a)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(name []byte) (n int) {
		_ = s.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(name).Stats().KeyN; return nil })
		return n
	}
	for i := range auditNewBatch - 1 {
		record(i)
	}
	if n, m := count(bucketAuditNew), count(bucketAudit); n != auditNewBatch-1 || m != 0 {
		t.Fatalf("before the batch: %d waiting, %d moved; want %d, 0", n, m, auditNewBatch-1)
	}
	record(auditNewBatch - 1)
	if n, m := count(bucketAuditNew), count(bucketAudit); n != 0 || m != auditNewBatch {
		t.Fatalf("after the batch: %d waiting, %d moved; want 0, %d", n, m, auditNewBatch)
	}
	record(auditNewBatch)
	for _, q := range []store.AuditQuery{{}, {Subject: "ada"}, {Type: store.EventKeyRotated}} {
		page, err := st.QueryAudit(context.Background(), store.AuditQuery{Subject: q.Subject, Type: q.Type, Limit: 1000})
		if err != nil || len(page.Events) != auditNewBatch+1 {
			t.Fatalf("query %+v: %d events, %v; want %d", q, len(page.Events), err, auditNewBatch+1)
		}
		if !page.Events[0].Time.Equal(at.Add(auditNewBatch * time.Second)) {
			t.Errorf("query %+v: newest %v", q, page.Events[0].Time)
		}
	}
}

// A file written before bucketAuditNew existed keeps its events in
// bucketAudit, the last ones not indexed yet. Opened by this build, its
// new events are keyed after them (the sequence goes on), and a query by
// person finds the old indexed, the old unindexed and the new.
func TestAuditNewMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*boltStore)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ev := func(i int) store.AuditEvent {
		return store.AuditEvent{Time: at.Add(time.Duration(i) * time.Second), Type: store.EventKeyRotated, Subject: "ada"}
	}
	// The older layout: events in bucketAudit by its own sequence, two
	// indexed and one not, and no bucketAuditNew.
	err = s.commit(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketAuditNew); err != nil {
			return err
		}
		b := tx.Bucket(bucketAudit)
		for i := range 3 {
			seq, _ := b.NextSequence()
			k := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(ev(i).Time.UnixNano())), seq)
			e := ev(i)
			e.ID = hex.EncodeToString(k)
			if err := putJSON(b, string(k), &e); err != nil {
				return err
			}
			if i < 2 {
				if err := indexEvent(tx, k, &e, true); err != nil {
					return err
				}
				if err := tx.Bucket(bucketMeta).Put(keyAuditIndexed, k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = Open(path, time.Second); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Taken before the last old event, committed after it: keyed at that
	// event's time, where only the sequence puts it after.
	a := &store.Audit{}
	late := ev(1)
	late.Type = store.EventCodeIssued
	a.Record(late)
	if err := st.RecordAudit(store.WithAudit(context.Background(), a)); err != nil {
		t.Fatal(err)
	}
	page, err := st.QueryAudit(context.Background(), store.AuditQuery{Subject: "ada"})
	if err != nil || len(page.Events) != 4 {
		t.Fatalf("query: %+v, %v; want 4 events", page.Events, err)
	}
	if e := page.Events[0]; e.Type != store.EventCodeIssued || !e.Time.Equal(late.Time) {
		t.Errorf("newest listed %+v, want the new event", e)
	}
	for i, e := range page.Events[1:] {
		if want := ev(2 - i).Time; !e.Time.Equal(want) {
			t.Errorf("old event %d at %v, want %v", i, e.Time, want)
		}
	}
	if page.Events[0].ID <= page.Events[1].ID {
		t.Errorf("the new event's key %s is not after the old %s", page.Events[0].ID, page.Events[1].ID)
	}
}

// A transaction that stores one event writes about one page more than one
// that stores nothing of the audit trail (bbolt writes each dirty page with
// a call of its own): the page where events wait, and now and then the end
// of the bucket of events, not that end (a leaf and its branches) each
// time.
func TestAuditEventPages(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*boltStore)
	s.db.NoSync = true
	ctx := context.Background()
	event := store.AuditEvent{Type: store.EventTokenRefreshed, Subject: "member-1", ClientID: "member-app",
		Actor: store.ActorClient, Target: "000660eea828e800JCqnNyxNtXX7rOFWZjdGVQ", Outcome: "issued",
		RequestID: "4f1c2a9e7b", ClientIP: "192.0.2.1"}
	record := func() {
		a := &store.Audit{}
		a.Record(event)
		if err := st.RecordAudit(store.WithAudit(ctx, a)); err != nil {
			t.Fatal(err)
		}
	}
	writes := func() int64 { stats := s.db.Stats(); return stats.TxStats.GetWrite() }
	for range 10 { // a bucket of events two branches deep, in ten commits
		a := &store.Audit{}
		for range 500 {
			a.Record(event)
		}
		if err := st.RecordAudit(store.WithAudit(ctx, a)); err != nil {
			t.Fatal(err)
		}
	}
	const n = 800
	w := writes()
	for range n {
		record()
	}
	perEvent := float64(writes()-w) / n
	w = writes()
	for range n {
		if err := s.update(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("x"), []byte("y")) }); err != nil {
			t.Fatal(err)
		}
	}
	perMeta := float64(writes()-w) / n
	if perEvent-perMeta > 1.5 {
		t.Errorf("storing an event writes %.2f pages, %.2f more than a write of one key elsewhere; want at most 1.5 more",
			perEvent, perEvent-perMeta)
	}
}

// TestEraseManyEventsDoesNotHang: an erasure deletes every event naming
// the person and then stores its own, in one transaction. bbolt's
// Cursor.Last on a bucket whose pages that transaction emptied can loop
// for ever, holding the write lock, so the new event's key must not come
// from it (lastEventKey). Then the store writes on as before.
func TestEraseManyEventsDoesNotHang(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Closed at the end only: Close waits for a hung erasure's transaction.
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for batch := range 10 {
		a := &store.Audit{}
		for i := range 500 {
			a.Record(store.AuditEvent{Time: at.Add(time.Duration(batch*500+i) * time.Millisecond),
				Type: store.EventTokenRefreshed, Subject: "ada", ClientID: "app", Target: "grant-1"})
		}
		if err := st.RecordAudit(store.WithAudit(context.Background(), a)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.EraseSubject(context.Background(), "ada")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("EraseSubject: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("EraseSubject of 5,000 events did not return within 30 s")
	}
	a := &store.Audit{}
	a.Record(store.AuditEvent{Time: at, Type: store.EventKeyRotated, Target: "k2"})
	if err := st.RecordAudit(store.WithAudit(context.Background(), a)); err != nil {
		t.Fatal(err)
	}
	page, err := st.QueryAudit(context.Background(), store.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range page.Events {
		types = append(types, e.Type)
	}
	if len(types) != 2 || types[0] != store.EventKeyRotated || types[1] != store.EventSubjectErased {
		t.Errorf("events after the erasure: %v, want [%s %s] (the newest first, never before the erasure)",
			types, store.EventKeyRotated, store.EventSubjectErased)
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
}

// TestAuditUntilFindsLateCommits: an event stamped before a later one but
// committed after it is keyed at the later one's time; a query up to a
// time between the two still finds it.
func TestAuditUntilFindsLateCommits(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, sec := range []int{5, 1} {
		a := &store.Audit{}
		a.Record(store.AuditEvent{Time: at.Add(time.Duration(sec) * time.Second), Type: store.EventKeyRotated, Subject: "ada"})
		if err := st.RecordAudit(store.WithAudit(context.Background(), a)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []store.AuditQuery{{Until: at.Add(3 * time.Second)}, {Subject: "ada", Until: at.Add(3 * time.Second)}} {
		page, err := st.QueryAudit(context.Background(), q)
		if err != nil || len(page.Events) != 1 || !page.Events[0].Time.Equal(at.Add(time.Second)) {
			t.Errorf("query %+v: %+v, %v; want the event of 10:00:01", q, page.Events, err)
		}
	}
}

// Events waiting to be moved are few, but not always small: a metadata
// document's client id is a URL of up to 2 KB, and eight such events
// take several pages. Events stored after the move in the same
// transaction (a group commit holds many requests) must not find those
// pages emptied: bbolt's Last can loop forever over them.
func TestEventsAfterAMoveOfLargeOnes(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Closed at the end only: Close waits for a hung transaction.
	s := st.(*boltStore)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	big := "https://app.example/" + strings.Repeat("m", 2000)
	event := func(i int) []store.AuditEvent {
		return []store.AuditEvent{{Time: at.Add(time.Duration(i) * time.Millisecond), Type: store.EventCodeIssued,
			Subject: "ada", ClientID: big, Detail: strings.Repeat("d", 200)}}
	}
	done := make(chan error, 1)
	go func() {
		done <- s.commit(func(tx *bolt.Tx) error {
			for i := range 3 * auditNewBatch {
				if err := putEvents(tx, event(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("storing events after a move of large ones did not return within 20 s")
	}
	page, err := st.QueryAudit(context.Background(), store.AuditQuery{Subject: "ada", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 3*auditNewBatch {
		t.Errorf("%d events found, want %d", len(page.Events), 3*auditNewBatch)
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
}
