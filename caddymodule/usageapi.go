package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

func init() {
	caddy.RegisterModule(usageAPI{})
}

// usageAPI adds each school's usage to Caddy's admin API
// (docs/operator.md, "Usage"):
//
//	GET /schoolgate/usage?issuer=...   requests, tokens, refusals by cause, p50/p99 of the last 5 min, hour and day; last active
type usageAPI struct{}

// CaddyModule returns the Caddy module information.
func (usageAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.schoolgate_usage",
		New: func() caddy.Module { return new(usageAPI) },
	}
}

// Routes returns the admin routes.
func (usageAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/schoolgate/usage", Handler: caddy.AdminHandlerFunc(handleUsage)}}
}

var _ caddy.AdminRouter = usageAPI{}

// usageReport is a school's usage as the admin API answers it.
type usageReport struct {
	Issuer string `json:"issuer"`
	// At is when the windows end.
	At time.Time `json:"at"`
	// LastActive is when the school last served a request, at any
	// instance; null if never.
	LastActive *time.Time   `json:"last_active"`
	Windows    usageWindows `json:"windows"`
}

type usageWindows struct {
	Last5m  usageWindow `json:"5m"`
	Last1h  usageWindow `json:"1h"`
	Last24h usageWindow `json:"24h"`
}

// usageWindow is the figures of one window.
type usageWindow struct {
	// From is the start of the window's first bucket: windows are
	// counted to the minute (5m, 1h) or the hour (24h).
	From         time.Time `json:"from"`
	Requests     uint64    `json:"requests"`
	TokensIssued uint64    `json:"tokens_issued"`
	Refused      uint64    `json:"refused"`
	// The refusals for want of capacity, by status and cause: every cause
	// of the status and its total.
	Status429 map[string]uint64 `json:"status_429"`
	Status503 map[string]uint64 `json:"status_503"`
	Status504 map[string]uint64 `json:"status_504"`
	// P50MS and P99MS are the median and 99th percentile of the
	// requests' durations in milliseconds (within 12.5 %); null without
	// a request.
	P50MS *float64 `json:"p50_ms"`
	P99MS *float64 `json:"p99_ms"`
}

// newUsageReport is u's windows ending at now.
func newUsageReport(issuer string, u *store.Usage, now time.Time) usageReport {
	r := usageReport{Issuer: issuer, At: now.UTC().Truncate(time.Second)}
	if !u.LastActive.IsZero() {
		last := u.LastActive.UTC()
		r.LastActive = &last
	}
	windows := []*usageWindow{&r.Windows.Last5m, &r.Windows.Last1h, &r.Windows.Last24h}
	for i, length := range store.UsageWindows {
		*windows[i] = newUsageWindow(u.Window(length, now))
	}
	return r
}

func newUsageWindow(w store.UsageWindow) usageWindow {
	out := usageWindow{From: w.From, Requests: w.Requests(), TokensIssued: w.Tokens, Refused: w.Refused}
	byStatus := map[int]map[string]uint64{}
	for _, st := range store.CauseStatuses {
		byStatus[st] = map[string]uint64{"total": w.StatusTotal(st)}
	}
	for c := range store.NumCauses {
		byStatus[c.Status()][c.String()] = w.Causes[c]
	}
	out.Status429, out.Status503, out.Status504 = byStatus[429], byStatus[503], byStatus[504]
	if w.Requests() > 0 {
		out.P50MS, out.P99MS = millis(w.Latency.Quantile(0.5)), millis(w.Latency.Quantile(0.99))
	}
	return out
}

// millis is d in milliseconds to the microsecond.
func millis(d time.Duration) *float64 {
	ms := math.Round(float64(d)/float64(time.Microsecond)) / 1000
	return &ms
}

func handleUsage(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	q := r.URL.Query()
	if err := onlyParams(q, "the usage", "issuer"); err != nil {
		return badRequest(err.Error())
	}
	issuer := q.Get("issuer")
	if issuer == "" {
		return badRequest("name the school: issuer=<the school's origin>")
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return badRequest(fmt.Sprintf("issuer: %v", err))
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeCallTimeout)
	defer cancel()
	u, err := usageOf(ctx, w, origin)
	switch {
	case errors.Is(err, errUsageUnread):
		return school.WriteTemporarilyUnavailable(w, policy.RetryAfterUnavailable,
			"the school's usage could not be read from its store; try again shortly")
	case err != nil:
		return err
	}
	return writeAdminJSON(w, http.StatusOK, newUsageReport(origin, u, time.Now()))
}

// errUsageUnread is a store that failed to answer, logged where it
// failed: the 503 of the admin API.
var errUsageUnread = errors.New("the store failed")

// unreadable logs a failed read of a school's usage as errUsageUnread.
func unreadable(log *slog.Logger, issuer string, u *store.Usage, err error) (*store.Usage, error) {
	if err != nil {
		log.Error("reading a school's usage failed", "issuer", issuer, "error", err)
		return nil, errUsageUnread
	}
	return u, nil
}

// usageOf reads the usage of the school with the issuer (in its one
// spelling): a built school's from its store and what it has counted
// since its last flush; a platform's idle school's (and a disabled or a
// failed one's) from its store alone, without building it
// (storedread.go).
func usageOf(ctx context.Context, w http.ResponseWriter, issuer string) (*store.Usage, error) {
	s, e, release, err := schoolToRead(w, issuer)
	if err != nil {
		return nil, err
	}
	defer release()
	if s != nil {
		u, err := s.Usage(ctx)
		return unreadable(s.log, issuer, u, err)
	}
	g, err := e.placed("usage")
	if err != nil {
		return nil, err
	}
	u, err := g.storedUsage(ctx)
	return unreadable(e.p.ctx.Slogger(), issuer, u, err)
}

// storedUsage reads the school's usage from its store without opening it
// as a school.
func (g *Gateway) storedUsage(ctx context.Context) (*store.Usage, error) {
	if opts := g.Store.options(); opts != nil {
		return opts.loadUsage(ctx, g.Issuer)
	}
	path := g.dataPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return &store.Usage{}, nil
	}
	s, err := acquireBolt(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = releaseBolt(path) }()
	return s.LoadUsage(ctx)
}
