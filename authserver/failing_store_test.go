package authserver

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// errStoreDown is what a store that cannot be reached returns: a plain
// error, none of the ones the contract gives a meaning.
var errStoreDown = errors.New("database unreachable")

// failingStore is a real store that, once switched on, fails every method
// with errStoreDown, or only the methods named. Nothing reaches the
// store beneath while a method fails, as with a database that is down.
type failingStore struct {
	store.Store
	mu   sync.Mutex
	down bool
	only []string
}

// fail makes the methods named fail, or every method when none is named.
func (f *failingStore) fail(methods ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down, f.only = true, methods
}

func (f *failingStore) failing(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down && (len(f.only) == 0 || slices.Contains(f.only, method)) {
		return errStoreDown
	}
	return nil
}

// failingFixture is a fixture whose server's store can be made to fail.
func failingFixture(t testing.TB) (*fixture, *failingStore) {
	f := newFixture(t)
	fs := &failingStore{Store: f.store}
	f.srv.store = fs
	return f, fs
}

func (f *failingStore) LoadKeys(ctx context.Context) ([]store.StoredKey, error) {
	if err := f.failing("LoadKeys"); err != nil {
		return nil, err
	}
	return f.Store.LoadKeys(ctx)
}

func (f *failingStore) InitKeys(ctx context.Context, first store.StoredKey) ([]store.StoredKey, error) {
	if err := f.failing("InitKeys"); err != nil {
		return nil, err
	}
	return f.Store.InitKeys(ctx, first)
}

func (f *failingStore) RotateKey(ctx context.Context, k store.StoredKey) error {
	if err := f.failing("RotateKey"); err != nil {
		return err
	}
	return f.Store.RotateKey(ctx, k)
}

func (f *failingStore) GetClient(ctx context.Context, id string) (*store.Client, error) {
	if err := f.failing("GetClient"); err != nil {
		return nil, err
	}
	return f.Store.GetClient(ctx, id)
}

func (f *failingStore) PutClient(ctx context.Context, c *store.Client) error {
	if err := f.failing("PutClient"); err != nil {
		return err
	}
	return f.Store.PutClient(ctx, c)
}

func (f *failingStore) CreateClient(ctx context.Context, c *store.Client, limit int) (*store.Client, bool, error) {
	if err := f.failing("CreateClient"); err != nil {
		return nil, false, err
	}
	return f.Store.CreateClient(ctx, c, limit)
}

func (f *failingStore) DeleteClient(ctx context.Context, id string) (int, error) {
	if err := f.failing("DeleteClient"); err != nil {
		return 0, err
	}
	return f.Store.DeleteClient(ctx, id)
}

func (f *failingStore) ListClients(ctx context.Context) ([]*store.Client, error) {
	if err := f.failing("ListClients"); err != nil {
		return nil, err
	}
	return f.Store.ListClients(ctx)
}

func (f *failingStore) CountClientsByKind(ctx context.Context, kind string) (int, error) {
	if err := f.failing("CountClientsByKind"); err != nil {
		return 0, err
	}
	return f.Store.CountClientsByKind(ctx, kind)
}

func (f *failingStore) PutPending(ctx context.Context, p *store.PendingAuth) error {
	if err := f.failing("PutPending"); err != nil {
		return err
	}
	return f.Store.PutPending(ctx, p)
}

func (f *failingStore) TakePending(ctx context.Context, id string) (*store.PendingAuth, error) {
	if err := f.failing("TakePending"); err != nil {
		return nil, err
	}
	return f.Store.TakePending(ctx, id)
}

func (f *failingStore) GetConsent(ctx context.Context, clientID, subject string) (*store.Consent, error) {
	if err := f.failing("GetConsent"); err != nil {
		return nil, err
	}
	return f.Store.GetConsent(ctx, clientID, subject)
}

func (f *failingStore) PutConsent(ctx context.Context, clientID, subject string, c *store.Consent) error {
	if err := f.failing("PutConsent"); err != nil {
		return err
	}
	return f.Store.PutConsent(ctx, clientID, subject, c)
}

func (f *failingStore) PutCode(ctx context.Context, hash string, c *store.Code) error {
	if err := f.failing("PutCode"); err != nil {
		return err
	}
	return f.Store.PutCode(ctx, hash, c)
}

func (f *failingStore) RedeemCode(ctx context.Context, hash string, issue func(*store.Code) (*store.Grant, []store.IssuedToken, error)) error {
	if err := f.failing("RedeemCode"); err != nil {
		return err
	}
	return f.Store.RedeemCode(ctx, hash, issue)
}

func (f *failingStore) GetToken(ctx context.Context, hash string) (*store.Token, *store.Grant, error) {
	if err := f.failing("GetToken"); err != nil {
		return nil, nil, err
	}
	return f.Store.GetToken(ctx, hash)
}

func (f *failingStore) RotateRefresh(ctx context.Context, hash, holder string, now time.Time, grace time.Duration, rotate func(*store.Token, *store.Grant) ([]store.IssuedToken, error)) error {
	if err := f.failing("RotateRefresh"); err != nil {
		return err
	}
	return f.Store.RotateRefresh(ctx, hash, holder, now, grace, rotate)
}

func (f *failingStore) RevokeToken(ctx context.Context, hash string) error {
	if err := f.failing("RevokeToken"); err != nil {
		return err
	}
	return f.Store.RevokeToken(ctx, hash)
}

func (f *failingStore) RevokeGrant(ctx context.Context, id string) error {
	if err := f.failing("RevokeGrant"); err != nil {
		return err
	}
	return f.Store.RevokeGrant(ctx, id)
}

func (f *failingStore) RevokeClientGrants(ctx context.Context, clientID string) (int, error) {
	if err := f.failing("RevokeClientGrants"); err != nil {
		return 0, err
	}
	return f.Store.RevokeClientGrants(ctx, clientID)
}

func (f *failingStore) PurgeExpired(ctx context.Context, before time.Time) error {
	if err := f.failing("PurgeExpired"); err != nil {
		return err
	}
	return f.Store.PurgeExpired(ctx, before)
}

func (f *failingStore) GetSetting(ctx context.Context, key string) ([]byte, error) {
	if err := f.failing("GetSetting"); err != nil {
		return nil, err
	}
	return f.Store.GetSetting(ctx, key)
}

func (f *failingStore) PutSetting(ctx context.Context, key string, value []byte) error {
	if err := f.failing("PutSetting"); err != nil {
		return err
	}
	return f.Store.PutSetting(ctx, key, value)
}

func (f *failingStore) InitSetting(ctx context.Context, key string, value []byte) ([]byte, error) {
	if err := f.failing("InitSetting"); err != nil {
		return nil, err
	}
	return f.Store.InitSetting(ctx, key, value)
}

func (f *failingStore) PutSettingRevoking(ctx context.Context, key string, value []byte, kind string) (int, error) {
	if err := f.failing("PutSettingRevoking"); err != nil {
		return 0, err
	}
	return f.Store.PutSettingRevoking(ctx, key, value, kind)
}

func (f *failingStore) SaveCatalog(ctx context.Context, raw []byte) error {
	if err := f.failing("SaveCatalog"); err != nil {
		return err
	}
	return f.Store.SaveCatalog(ctx, raw)
}

func (f *failingStore) LoadCatalog(ctx context.Context) ([]byte, error) {
	if err := f.failing("LoadCatalog"); err != nil {
		return nil, err
	}
	return f.Store.LoadCatalog(ctx)
}

func (f *failingStore) ListGrants(ctx context.Context, q store.GrantQuery) ([]*store.Grant, error) {
	if err := f.failing("ListGrants"); err != nil {
		return nil, err
	}
	return f.Store.ListGrants(ctx, q)
}

func (f *failingStore) ListConnections(ctx context.Context, q store.ConnectionQuery) ([]*store.Connection, error) {
	if err := f.failing("ListConnections"); err != nil {
		return nil, err
	}
	return f.Store.ListConnections(ctx, q)
}

func (f *failingStore) GrantCounts(ctx context.Context) (map[string]store.GrantCount, error) {
	if err := f.failing("GrantCounts"); err != nil {
		return nil, err
	}
	return f.Store.GrantCounts(ctx)
}

func (f *failingStore) DisconnectGrant(ctx context.Context, id, subject string) (*store.Grant, error) {
	if err := f.failing("DisconnectGrant"); err != nil {
		return nil, err
	}
	return f.Store.DisconnectGrant(ctx, id, subject)
}

func (f *failingStore) DisconnectClient(ctx context.Context, clientID, subject string) (int, error) {
	if err := f.failing("DisconnectClient"); err != nil {
		return 0, err
	}
	return f.Store.DisconnectClient(ctx, clientID, subject)
}

// A method added to Store would reach the real store through the
// embedded interface and never fail, and the tests built on failingStore
// would pass without exercising it: every method but Close must fail, and
// fail before it touches the store beneath (zero arguments would make the
// real store panic or answer store.ErrNotFound).
func TestFailingStoreFailsEveryMethod(t *testing.T) {
	_, fs := failingFixture(t)
	fs.fail()
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	v := reflect.ValueOf(fs)
	st := reflect.TypeFor[store.Store]()
	for i := range st.NumMethod() {
		m := st.Method(i)
		if m.Name == "Close" {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			fn := v.MethodByName(m.Name)
			args := make([]reflect.Value, fn.Type().NumIn())
			for j := range args {
				in := fn.Type().In(j)
				if in == ctxType {
					args[j] = reflect.ValueOf(context.Background())
				} else {
					args[j] = reflect.Zero(in)
				}
			}
			var out []reflect.Value
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("reached the real store (%v): failingStore must override %s", p, m.Name)
					}
				}()
				out = fn.Call(args)
			}()
			last := out[len(out)-1]
			if last.Type() != errType {
				t.Fatalf("%s does not return an error last", m.Name)
			}
			if err, _ := last.Interface().(error); !errors.Is(err, errStoreDown) {
				t.Errorf("%s returned %v, want %v: failingStore must override it", m.Name, err, errStoreDown)
			}
		})
	}
}

func (f *failingStore) QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	if err := f.failing("QueryAudit"); err != nil {
		return store.AuditPage{}, err
	}
	return f.Store.QueryAudit(ctx, q)
}

func (f *failingStore) PurgeAudit(ctx context.Context, before time.Time) (int, error) {
	if err := f.failing("PurgeAudit"); err != nil {
		return 0, err
	}
	return f.Store.PurgeAudit(ctx, before)
}

func (f *failingStore) ExportSubject(ctx context.Context, subject string) (*store.SubjectData, error) {
	if err := f.failing("ExportSubject"); err != nil {
		return nil, err
	}
	return f.Store.ExportSubject(ctx, subject)
}

func (f *failingStore) EraseSubject(ctx context.Context, subject string) (*store.Erased, error) {
	if err := f.failing("EraseSubject"); err != nil {
		return nil, err
	}
	return f.Store.EraseSubject(ctx, subject)
}

func (f *failingStore) RecordAudit(ctx context.Context) error {
	if err := f.failing("RecordAudit"); err != nil {
		return err
	}
	return f.Store.RecordAudit(ctx)
}

func (f *failingStore) AddUsage(ctx context.Context, d []store.UsageDelta) error {
	if err := f.failing("AddUsage"); err != nil {
		return err
	}
	return f.Store.AddUsage(ctx, d)
}

func (f *failingStore) LoadUsage(ctx context.Context) (*store.Usage, error) {
	if err := f.failing("LoadUsage"); err != nil {
		return nil, err
	}
	return f.Store.LoadUsage(ctx)
}
