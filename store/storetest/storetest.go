// Package storetest is the conformance suite of store.Store: every
// store (bbolt today, others to come) passes it unchanged, so the protocol
// code can rely on the contract and not on one implementation.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// Run checks the store that open returns, a fresh and empty one per
// subtest, against the contract stated on store.Store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"NotFound", testNotFound},
		{"Clients", testClients},
		{"CreateClient", testCreateClient},
		{"PendingTakenOnce", testPendingTakenOnce},
		{"Consents", testConsents},
		{"CodeRedeemedOnce", testCodeRedeemedOnce},
		{"CodeCallbackError", testCodeCallbackError},
		{"ConcurrentRedeem", testConcurrentRedeem},
		{"RefreshRotation", testRefreshRotation},
		{"RefreshCallbackError", testRefreshCallbackError},
		{"ConcurrentRotation", testConcurrentRotation},
		{"DPoPBindings", testDPoPBindings},
		{"RefreshHolder", testRefreshHolder},
		{"Revocation", testRevocation},
		{"RevokeClientGrants", testRevokeClientGrants},
		{"PurgeExpired", testPurgeExpired},
		{"Settings", testSettings},
		{"InitSetting", testInitSetting},
		{"PutSettingRevoking", testPutSettingRevoking},
		{"PurgeGrants", testPurgeGrants},
		{"ListGrants", testListGrants},
		{"GrantPages", testGrantPages},
		{"GrantCounts", testGrantCounts},
		{"DisconnectGrant", testDisconnectGrant},
		{"DisconnectClient", testDisconnectClient},
		{"ListConnections", testListConnections},
		{"RefreshedAt", testRefreshedAt},
		{"Keys", testKeys},
		{"Catalog", testCatalog},
		{"CancelledContext", testCancelledContext},
		{"CallbacksRerun", testCallbacksRerun},
		{"AuditInTransaction", testAuditInTransaction},
		{"AuditStoreDecided", testAuditStoreDecided},
		{"AuditQuery", testAuditQuery},
		{"PurgeAudit", testPurgeAudit},
		{"ExportSubject", testExportSubject},
		{"EraseSubject", testEraseSubject},
		{"UsageAdds", testUsageAdds},
		{"UsageRetention", testUsageRetention},
		{"UsageLastActive", testUsageLastActive},
		{"StepsAdd", testStepsAdd},
		{"StepsQuery", testStepsQuery},
		{"StepsBounded", testStepsBounded},
		{"PurgeSteps", testPurgeSteps},
		{"StepsOfSubject", testStepsOfSubject},
		{"Waiter", testWaiter},
		{"WaiterResumesHoldingNothing", WaiterResumesHoldingNothing},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// epoch is the suite's clock: whole seconds in UTC, which every store
// keeps exactly.
var epoch = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

var serial atomic.Int64

// unique returns a fresh name with a readable prefix.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, serial.Add(1)) }

func newCode(clientID string) *store.Code {
	return &store.Code{
		Request: store.AuthRequest{ClientID: clientID, RedirectURI: "https://app.example/cb",
			Scopes: []string{"openid"}, Audience: store.AudienceMember},
		Identity:  store.Identity{Subject: "ada"},
		AuthTime:  epoch,
		ExpiresAt: epoch.Add(time.Minute),
	}
}

// pair is a grant's access and refresh token hashes.
type pair struct{ access, refresh string }

// newTokens returns a fresh access and refresh token for g.
func newTokens(g *store.Grant) (pair, []store.IssuedToken) {
	p := pair{unique("access"), unique("refresh")}
	return p, []store.IssuedToken{
		{Hash: p.access, Token: &store.Token{Kind: store.TokenAccess, GrantID: g.ID,
			ClientID: g.ClientID, IssuedAt: epoch, ExpiresAt: epoch.Add(time.Hour)}},
		{Hash: p.refresh, Token: &store.Token{Kind: store.TokenRefresh, GrantID: g.ID,
			ClientID: g.ClientID, IssuedAt: epoch, ExpiresAt: epoch.Add(24 * time.Hour)}},
	}
}

// newGrant is the callback's grant for a code.
func newGrant(c *store.Code) *store.Grant {
	return &store.Grant{ID: unique("grant"), ClientID: c.Request.ClientID,
		Audience: c.Request.Audience, Scopes: c.Request.Scopes, Identity: c.Identity,
		AuthTime: c.AuthTime, CreatedAt: epoch}
}

// grantOf stores a code for clientID and redeems it: a live grant with
// an access and a refresh token.
func grantOf(t *testing.T, s store.Store, clientID string) (string, pair) {
	t.Helper()
	ctx := context.Background()
	code := unique("code")
	if err := s.PutCode(ctx, code, newCode(clientID)); err != nil {
		t.Fatal(err)
	}
	var grantID string
	var p pair
	err := s.RedeemCode(ctx, code, func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
		g := newGrant(c)
		var toks []store.IssuedToken
		p, toks = newTokens(g)
		grantID = g.ID
		return g, toks, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return grantID, p
}

// revoked reports whether the token under hash no longer grants access,
// by its own flag or its grant's.
func revoked(t *testing.T, s store.Store, hash string) bool {
	t.Helper()
	tok, g, err := s.GetToken(context.Background(), hash)
	if err != nil {
		t.Fatalf("GetToken(%s): %v", hash, err)
	}
	return tok.Revoked || g.Revoked
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}
