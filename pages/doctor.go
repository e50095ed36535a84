package pages

import (
	"context"
	"net/http"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
)

// The connection doctor's pages (docs/operator.md, "Why can't this
// application connect?"): in the admin area, the steps of one
// application's recent attempts with why a refused one stopped; on the
// person's own page, the applications that tried to connect for them in
// the last day and stopped, with why in words and nothing else (no
// error code, no detail: what a stranger looking over a shoulder could
// use is for the operator's view).

type adminDoctorView struct {
	adminPage
	ClientID, Name, Kind string
	// Days is how long steps are kept.
	Days    int
	Steps   []doctorRow
	Stopped *doctorRow
}

// doctorRow is a step in the operator's language.
type doctorRow struct {
	authserver.DoctorStep
	// Step is the step's name in words.
	Step string
}

// doctor shows the connection doctor of the application the link names.
func (a *adminCtx) doctor() {
	ctx := a.r.Context()
	clientID := a.r.URL.Query().Get("client_id")
	if clientID == "" || len(clientID) > authserver.MaxClientIDLen {
		a.fail(http.StatusBadRequest, "admin.error.bad_activity_link")
		return
	}
	rep, err := a.as.Doctor(ctx, clientID, a.lang)
	if err != nil {
		a.unavailable("reading the connection doctor's steps", err)
		return
	}
	v := adminDoctorView{ClientID: clientID, Name: rep.Name, Days: a.as.StepRetentionDays()}
	if rep.Known {
		if c, err := a.as.KnownClient(ctx, clientID); err == nil && c != nil {
			v.Kind = c.Kind
		}
	}
	v.adminPage = a.page("admin.doctor_title", "name", v.Name)
	for i := range rep.Steps {
		v.Steps = append(v.Steps, doctorRow{DoctorStep: rep.Steps[i], Step: authserver.StepText(a.lang, rep.Steps[i].Name)})
	}
	if rep.Stopped != nil {
		v.Stopped = &doctorRow{DoctorStep: *rep.Stopped, Step: authserver.StepText(a.lang, rep.Stopped.Name)}
	}
	a.render(http.StatusOK, doctorTmpl, v)
}

// memberAttempt is an application that tried to connect for the person
// and stopped: its name, when, and why in words.
type memberAttempt struct {
	ClientID, Name, Why string
	Last                time.Time
}

// stoppedAttempts are the person's applications whose latest attempt
// for them in the last day stopped, latest first. Like the activity, it
// is an aid: a store that cannot answer leaves it out, logged.
func (p *Pages) stoppedAttempts(ctx context.Context, lang, subject string) []memberAttempt {
	rows, err := p.as.Attempts(ctx, subject)
	if err != nil {
		p.cfg.Logger.Error("account: reading the applications' attempts", "error", err)
		return nil
	}
	seen := map[string]bool{}
	var out []memberAttempt
	for i := len(rows) - 1; i >= 0; i-- { // latest first
		r := &rows[i]
		if seen[r.ClientID] {
			continue
		}
		seen[r.ClientID] = true
		name := r.ClientID
		if c, err := p.as.KnownClient(ctx, r.ClientID); err == nil && c != nil {
			name = c.Name
		}
		out = append(out, memberAttempt{ClientID: r.ClientID, Name: name, Last: r.Last,
			Why: authserver.ReasonText(lang, r.Reason)})
	}
	return out
}
