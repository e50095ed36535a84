package adminapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

// UsageAPI answers a school's usage.
type UsageAPI struct {
	// Read reads the usage of the school with the issuer (in its one
	// spelling), without building a school that is not built; a store
	// that failed to answer is ErrUsageUnread, logged where it failed.
	Read func(ctx context.Context, w http.ResponseWriter, issuer string) (*store.Usage, error)
}

// ErrUsageUnread is a store that failed to answer a read of a school's
// usage: the admin API's 503.
var ErrUsageUnread = errors.New("the store failed")

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

// Usage answers GET /schoolgate/usage?issuer=...: a school's requests,
// tokens issued, refusals by cause and latency in the last 5 minutes,
// hour and day, and when it was last active.
func (a UsageAPI) Usage(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return Error{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	q := r.URL.Query()
	if err := OnlyParams(q, "the usage", "issuer"); err != nil {
		return BadRequest(err.Error())
	}
	issuer := q.Get("issuer")
	if issuer == "" {
		return BadRequest("name the school: issuer=<the school's origin>")
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return BadRequest(fmt.Sprintf("issuer: %v", err))
	}
	u, err := a.Read(r.Context(), w, origin)
	switch {
	case errors.Is(err, ErrUsageUnread):
		return school.WriteTemporarilyUnavailable(w, policy.RetryAfterUnavailable,
			"the school's usage could not be read from its store; try again shortly")
	case err != nil:
		return err
	}
	return school.WriteJSON(w, http.StatusOK, newUsageReport(origin, u, time.Now()))
}
