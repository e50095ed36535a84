package pages

import (
	"context"
	"testing"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/schooltest"
	"github.com/schoolgate/schoolgate/store"
)

// The audit trail of what people and operators do on the pages: who
// acted, from where (authserver's audit_test.go has the rest).

// events returns the stored events of type typ, newest first.
func (f *fixture) events(typ string) []store.AuditEvent { return schooltest.Events(f.t, f.store, typ) }

// oneEvent returns the one stored event of type typ, failing otherwise.
func (f *fixture) oneEvent(typ string) store.AuditEvent {
	return schooltest.OneEvent(f.t, f.store, typ)
}

// The test client's address as httptest sets it.
const testClientIP = "192.0.2.1"

func TestAuditDisconnectedByMemberAndOperator(t *testing.T) {
	f := newFixture(t)
	f.grantTo(memberClient, "student", "openid")
	f.grantTo(memberClient, "student", "openid")
	res := f.disconnectForm("student", memberClient, f.accountCSRF("student"), nil)
	if res.StatusCode >= 400 {
		t.Fatalf("disconnect: %d", res.StatusCode)
	}
	e := f.oneEvent(store.EventDisconnected)
	if e.Subject != "member-1" || e.ClientID != memberClient || e.Actor != store.ActorMember || e.Grants != 2 ||
		e.ClientIP != testClientIP {
		t.Errorf("by the member: %+v", e)
	}

	g := f.grantTo(confidential, "student2", "openid")
	if _, err := f.srv.Disconnect(context.Background(), authserver.DisconnectRequest{GrantID: g.grantID, Subject: "member-2"},
		authserver.DisconnectedByOperator); err != nil {
		t.Fatal(err)
	}
	evs := f.events(store.EventDisconnected)
	if len(evs) != 2 {
		t.Fatalf("%d disconnect events, want 2", len(evs))
	}
	if o := evs[0]; o.Subject != "member-2" || o.ClientID != confidential || o.Target != g.grantID ||
		o.Actor != store.ActorOperator || o.Grants != 1 {
		t.Errorf("by an operator: %+v", o)
	}
}

func TestAuditMemberAppCreatedRotatedDeleted(t *testing.T) {
	f := newFixture(t)
	f.enableMCP()
	id, _ := f.newApp("Planner", "confidential", "openid")
	e := f.oneEvent(store.EventMemberAppCreate)
	if e.ClientID != id || e.Actor != store.ActorOperator || e.ActorSub != "operator-1" || e.Detail != "confidential" {
		t.Errorf("created: %+v", e)
	}
	if _, _, err := f.srv.RegenerateSecret(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if e := f.oneEvent(store.EventSecretRotated); e.ClientID != id {
		t.Errorf("secret rotated: %+v", e)
	}
	f.grantTo(id, "student", "openid")
	if _, err := f.srv.DeleteClient(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if e := f.oneEvent(store.EventClientDeleted); e.ClientID != id || e.Grants != 1 || e.Detail != store.KindApp {
		t.Errorf("deleted: %+v", e)
	}
}
