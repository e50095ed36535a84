package boltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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
