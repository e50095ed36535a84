package pages

import (
	"net/http"
	"strconv"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/schoolgate/schoolgate/store"
)

// The admin area's usage page: what the school served in the last 5
// minutes, hour and day, at every instance — requests, tokens issued,
// refusals, the requests turned away by status and cause, response
// times — and when it last served one. The figures are per school;
// nothing names a person.

type adminUsageView struct {
	adminPage
	// LastActive is zero for a school that never served a request.
	LastActive time.Time
	// Windows are the columns' headings, Rows the figures.
	Windows []string
	Rows    []usageRow
}

// usageRow is one figure in each window.
type usageRow struct {
	// ID names the row for tests and scripts; Label is its words.
	ID, Label string
	Values    []string
	// Cause marks a cause's row under its status's.
	Cause bool
}

// usageWindowKeys are the headings of store.UsageWindows.
var usageWindowKeys = []string{"admin.usage_window.5m", "admin.usage_window.1h", "admin.usage_window.24h"}

func (a *adminCtx) usage() {
	u, err := a.p.cfg.Usage(a.r.Context())
	if err != nil {
		a.unavailable("reading the usage", err)
		return
	}
	now := a.p.cfg.Now()
	windows := make([]store.UsageWindow, len(store.UsageWindows))
	for i, length := range store.UsageWindows {
		windows[i] = u.Window(length, now)
	}
	v := adminUsageView{adminPage: a.page("admin.usage_title"), LastActive: u.LastActive}
	for _, key := range usageWindowKeys {
		v.Windows = append(v.Windows, a.t(key))
	}
	p := message.NewPrinter(language.Make(a.lang))
	row := func(id, label string, cause bool, value func(w *store.UsageWindow) string) {
		r := usageRow{ID: id, Label: label, Cause: cause}
		for i := range windows {
			r.Values = append(r.Values, value(&windows[i]))
		}
		v.Rows = append(v.Rows, r)
	}
	count := func(n uint64) string { return p.Sprintf("%d", n) }
	row("requests", a.t("admin.usage_requests"), false, func(w *store.UsageWindow) string { return count(w.Requests()) })
	row("tokens", a.t("admin.usage_tokens"), false, func(w *store.UsageWindow) string { return count(w.Tokens) })
	row("refused", a.t("admin.usage_refused"), false, func(w *store.UsageWindow) string { return count(w.Refused) })
	for _, status := range store.CauseStatuses {
		row("status-"+strconv.Itoa(status), a.t("admin.usage_status_"+strconv.Itoa(status)), false,
			func(w *store.UsageWindow) string { return count(w.StatusTotal(status)) })
		for c := range store.NumCauses {
			if c.Status() == status {
				row("cause-"+c.String(), a.t("cause."+c.String()), true,
					func(w *store.UsageWindow) string { return count(w.Causes[c]) })
			}
		}
	}
	for _, q := range []struct {
		id  string
		key string
		q   float64
	}{{"p50", "admin.usage_p50", 0.5}, {"p99", "admin.usage_p99", 0.99}} {
		row(q.id, a.t(q.key), false, func(w *store.UsageWindow) string {
			if w.Requests() == 0 {
				return "—"
			}
			return durationIn(p, w.Latency.Quantile(q.q))
		})
	}
	a.render(http.StatusOK, usageTmpl, v)
}

// durationIn is a response time for a person, in the printer's
// language: µs below a millisecond, ms below a second (a decimal below
// ten), s above.
func durationIn(p *message.Printer, d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return p.Sprintf("%d µs", d.Microseconds())
	case d < 10*time.Millisecond:
		return p.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return p.Sprintf("%d ms", d.Milliseconds())
	}
	return p.Sprintf("%.1f s", d.Seconds())
}
