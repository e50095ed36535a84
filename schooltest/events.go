package schooltest

import (
	"context"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// Events returns the audit events of type typ stored in st, newest
// first.
func Events(tb testing.TB, st store.Store, typ string) []store.AuditEvent {
	tb.Helper()
	page, err := st.QueryAudit(context.Background(), store.AuditQuery{Type: typ, Limit: store.MaxAuditPage})
	if err != nil {
		tb.Fatal(err)
	}
	return page.Events
}

// OneEvent returns the one audit event of type typ stored in st, failing
// the test if there is not exactly one.
func OneEvent(tb testing.TB, st store.Store, typ string) store.AuditEvent {
	tb.Helper()
	evs := Events(tb, st, typ)
	if len(evs) != 1 {
		tb.Fatalf("%d %s events, want 1: %+v", len(evs), typ, evs)
	}
	return evs[0]
}
