package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// ErrStoreDown is what a store that cannot be reached returns: a plain
// error, none of the ones the contract gives a meaning.
var ErrStoreDown = errors.New("database unreachable")

// Failing is a real store that, once switched on, fails every method
// with ErrStoreDown, or only the methods named: for the tests of what
// stands on a store (a store that fails must never be a refusal a client
// acts on). Nothing reaches the store beneath while a method fails, as
// with a database that is down.
type Failing struct {
	store.Store
	mu   sync.Mutex
	down bool
	only []string
}

// Fail makes the methods named fail, or every method when none is named.
func (f *Failing) Fail(methods ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down, f.only = true, methods
}

func (f *Failing) failing(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down && (len(f.only) == 0 || slices.Contains(f.only, method)) {
		return ErrStoreDown
	}
	return nil
}

func (f *Failing) LoadKeys(ctx context.Context) ([]store.StoredKey, error) {
	if err := f.failing("LoadKeys"); err != nil {
		return nil, err
	}
	return f.Store.LoadKeys(ctx)
}

func (f *Failing) InitKeys(ctx context.Context, first store.StoredKey) ([]store.StoredKey, error) {
	if err := f.failing("InitKeys"); err != nil {
		return nil, err
	}
	return f.Store.InitKeys(ctx, first)
}

func (f *Failing) RotateKey(ctx context.Context, k store.StoredKey) error {
	if err := f.failing("RotateKey"); err != nil {
		return err
	}
	return f.Store.RotateKey(ctx, k)
}

func (f *Failing) GetClient(ctx context.Context, id string) (*store.Client, error) {
	if err := f.failing("GetClient"); err != nil {
		return nil, err
	}
	return f.Store.GetClient(ctx, id)
}

func (f *Failing) PutClient(ctx context.Context, c *store.Client) error {
	if err := f.failing("PutClient"); err != nil {
		return err
	}
	return f.Store.PutClient(ctx, c)
}

func (f *Failing) CreateClient(ctx context.Context, c *store.Client, limit int) (*store.Client, bool, error) {
	if err := f.failing("CreateClient"); err != nil {
		return nil, false, err
	}
	return f.Store.CreateClient(ctx, c, limit)
}

func (f *Failing) DeleteClient(ctx context.Context, id string) (int, error) {
	if err := f.failing("DeleteClient"); err != nil {
		return 0, err
	}
	return f.Store.DeleteClient(ctx, id)
}

func (f *Failing) ListClients(ctx context.Context) ([]*store.Client, error) {
	if err := f.failing("ListClients"); err != nil {
		return nil, err
	}
	return f.Store.ListClients(ctx)
}

func (f *Failing) CountClientsByKind(ctx context.Context, kind string) (int, error) {
	if err := f.failing("CountClientsByKind"); err != nil {
		return 0, err
	}
	return f.Store.CountClientsByKind(ctx, kind)
}

func (f *Failing) PutPending(ctx context.Context, p *store.PendingAuth) error {
	if err := f.failing("PutPending"); err != nil {
		return err
	}
	return f.Store.PutPending(ctx, p)
}

func (f *Failing) TakePending(ctx context.Context, id string) (*store.PendingAuth, error) {
	if err := f.failing("TakePending"); err != nil {
		return nil, err
	}
	return f.Store.TakePending(ctx, id)
}

func (f *Failing) GetConsent(ctx context.Context, clientID, subject string) (*store.Consent, error) {
	if err := f.failing("GetConsent"); err != nil {
		return nil, err
	}
	return f.Store.GetConsent(ctx, clientID, subject)
}

func (f *Failing) PutConsent(ctx context.Context, clientID, subject string, c *store.Consent) error {
	if err := f.failing("PutConsent"); err != nil {
		return err
	}
	return f.Store.PutConsent(ctx, clientID, subject, c)
}

func (f *Failing) PutCode(ctx context.Context, hash string, c *store.Code) error {
	if err := f.failing("PutCode"); err != nil {
		return err
	}
	return f.Store.PutCode(ctx, hash, c)
}

func (f *Failing) RedeemCode(ctx context.Context, hash string, issue func(*store.Code) (*store.Grant, []store.IssuedToken, error)) error {
	if err := f.failing("RedeemCode"); err != nil {
		return err
	}
	return f.Store.RedeemCode(ctx, hash, issue)
}

func (f *Failing) GetToken(ctx context.Context, hash string) (*store.Token, *store.Grant, error) {
	if err := f.failing("GetToken"); err != nil {
		return nil, nil, err
	}
	return f.Store.GetToken(ctx, hash)
}

func (f *Failing) RotateRefresh(ctx context.Context, hash, holder string, now time.Time, grace time.Duration, rotate func(*store.Token, *store.Grant) ([]store.IssuedToken, error)) error {
	if err := f.failing("RotateRefresh"); err != nil {
		return err
	}
	return f.Store.RotateRefresh(ctx, hash, holder, now, grace, rotate)
}

func (f *Failing) RevokeToken(ctx context.Context, hash string) error {
	if err := f.failing("RevokeToken"); err != nil {
		return err
	}
	return f.Store.RevokeToken(ctx, hash)
}

func (f *Failing) RevokeGrant(ctx context.Context, id string) error {
	if err := f.failing("RevokeGrant"); err != nil {
		return err
	}
	return f.Store.RevokeGrant(ctx, id)
}

func (f *Failing) RevokeClientGrants(ctx context.Context, clientID string) (int, error) {
	if err := f.failing("RevokeClientGrants"); err != nil {
		return 0, err
	}
	return f.Store.RevokeClientGrants(ctx, clientID)
}

func (f *Failing) PurgeExpired(ctx context.Context, before time.Time) error {
	if err := f.failing("PurgeExpired"); err != nil {
		return err
	}
	return f.Store.PurgeExpired(ctx, before)
}

func (f *Failing) GetSetting(ctx context.Context, key string) ([]byte, error) {
	if err := f.failing("GetSetting"); err != nil {
		return nil, err
	}
	return f.Store.GetSetting(ctx, key)
}

func (f *Failing) PutSetting(ctx context.Context, key string, value []byte) error {
	if err := f.failing("PutSetting"); err != nil {
		return err
	}
	return f.Store.PutSetting(ctx, key, value)
}

func (f *Failing) InitSetting(ctx context.Context, key string, value []byte) ([]byte, error) {
	if err := f.failing("InitSetting"); err != nil {
		return nil, err
	}
	return f.Store.InitSetting(ctx, key, value)
}

func (f *Failing) PutSettingRevoking(ctx context.Context, key string, value []byte, kind string) (int, error) {
	if err := f.failing("PutSettingRevoking"); err != nil {
		return 0, err
	}
	return f.Store.PutSettingRevoking(ctx, key, value, kind)
}

func (f *Failing) SaveCatalog(ctx context.Context, raw []byte) error {
	if err := f.failing("SaveCatalog"); err != nil {
		return err
	}
	return f.Store.SaveCatalog(ctx, raw)
}

func (f *Failing) LoadCatalog(ctx context.Context) ([]byte, error) {
	if err := f.failing("LoadCatalog"); err != nil {
		return nil, err
	}
	return f.Store.LoadCatalog(ctx)
}

func (f *Failing) ListGrants(ctx context.Context, q store.GrantQuery) ([]*store.Grant, error) {
	if err := f.failing("ListGrants"); err != nil {
		return nil, err
	}
	return f.Store.ListGrants(ctx, q)
}

func (f *Failing) ListConnections(ctx context.Context, q store.ConnectionQuery) ([]*store.Connection, error) {
	if err := f.failing("ListConnections"); err != nil {
		return nil, err
	}
	return f.Store.ListConnections(ctx, q)
}

func (f *Failing) GrantCounts(ctx context.Context) (map[string]store.GrantCount, error) {
	if err := f.failing("GrantCounts"); err != nil {
		return nil, err
	}
	return f.Store.GrantCounts(ctx)
}

func (f *Failing) DisconnectGrant(ctx context.Context, id, subject string) (*store.Grant, error) {
	if err := f.failing("DisconnectGrant"); err != nil {
		return nil, err
	}
	return f.Store.DisconnectGrant(ctx, id, subject)
}

func (f *Failing) DisconnectClient(ctx context.Context, clientID, subject string) (int, error) {
	if err := f.failing("DisconnectClient"); err != nil {
		return 0, err
	}
	return f.Store.DisconnectClient(ctx, clientID, subject)
}

func (f *Failing) QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	if err := f.failing("QueryAudit"); err != nil {
		return store.AuditPage{}, err
	}
	return f.Store.QueryAudit(ctx, q)
}

func (f *Failing) PurgeAudit(ctx context.Context, before time.Time) (int, error) {
	if err := f.failing("PurgeAudit"); err != nil {
		return 0, err
	}
	return f.Store.PurgeAudit(ctx, before)
}

func (f *Failing) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if err := f.failing("ExportSubject"); err != nil {
		return nil, err
	}
	return f.Store.ExportSubject(ctx, subject)
}

func (f *Failing) EraseSubject(ctx context.Context, subject string) (*store.Erased, error) {
	if err := f.failing("EraseSubject"); err != nil {
		return nil, err
	}
	return f.Store.EraseSubject(ctx, subject)
}

func (f *Failing) RecordAudit(ctx context.Context) error {
	if err := f.failing("RecordAudit"); err != nil {
		return err
	}
	return f.Store.RecordAudit(ctx)
}

func (f *Failing) AddUsage(ctx context.Context, d []store.UsageDelta) error {
	if err := f.failing("AddUsage"); err != nil {
		return err
	}
	return f.Store.AddUsage(ctx, d)
}

func (f *Failing) LoadUsage(ctx context.Context) (*store.Usage, error) {
	if err := f.failing("LoadUsage"); err != nil {
		return nil, err
	}
	return f.Store.LoadUsage(ctx)
}

func (f *Failing) AddSteps(ctx context.Context, steps []store.Step) error {
	if err := f.failing("AddSteps"); err != nil {
		return err
	}
	return f.Store.AddSteps(ctx, steps)
}

func (f *Failing) QuerySteps(ctx context.Context, q store.StepQuery) ([]store.Step, error) {
	if err := f.failing("QuerySteps"); err != nil {
		return nil, err
	}
	return f.Store.QuerySteps(ctx, q)
}

func (f *Failing) PurgeSteps(ctx context.Context, before time.Time) (int, error) {
	if err := f.failing("PurgeSteps"); err != nil {
		return 0, err
	}
	return f.Store.PurgeSteps(ctx, before)
}
