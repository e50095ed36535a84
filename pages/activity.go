package pages

import (
	"context"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/store"
)

// The audit trail in words, for the pages that show it: the admin
// area's activity view and each application's recent activity on the
// person's own page. An event's type, actor and outcome each have a
// message; a value the catalog does not know is shown as it is stored.

// activityEvent is one audit event as a page shows it.
type activityEvent struct {
	Time time.Time
	// What happened, who acted and how it ended, in words.
	Words, Actor, Outcome string
	// The identifiers, for whoever needs them.
	Subject, ClientID, ActorSub, Target, ClientIP string
	Grants                                        int
}

// activityIn is e in lang.
func activityIn(lang string, e *store.AuditEvent) activityEvent {
	return activityEvent{Time: e.Time, Words: catalogOr(lang, "event.", e.Type),
		Actor: catalogOr(lang, "actor.", e.Actor), Outcome: catalogOr(lang, "outcome.", e.Outcome),
		Subject: e.Subject, ClientID: e.ClientID, ActorSub: e.ActorSub, Target: e.Target,
		ClientIP: e.ClientIP, Grants: e.Grants}
}

// catalogOr is the message prefix+value (spaces read as underscores) in
// lang, or the value itself when the catalog has no such message.
func catalogOr(lang, prefix, value string) string {
	key := prefix + strings.ReplaceAll(value, " ", "_")
	if i18n.Has(key) && value != "" {
		return msg(lang, key)
	}
	return value
}

// Each application on the person's page shows its recent activity for
// them: when and from where it was last used, and its latest events.
const (
	// accountActivityEvents is how many of the person's latest events
	// one query reads for the whole page, grouped by application: an
	// application quiet for that long shows none.
	accountActivityEvents = 100
	// accountActivityShown is how many events a row lists.
	accountActivityShown = 3
)

// addActivity sets the recent activity of the person's applications in
// apps from one query of their latest events. The activity is an aid, not
// the page's purpose: when the store cannot answer, the page goes without
// it and the failure is logged.
func (p *Pages) addActivity(ctx context.Context, lang, subject string, apps []accountApp) {
	if len(apps) == 0 {
		return
	}
	page, err := p.as.Audit(ctx, store.AuditQuery{Subject: subject, Limit: accountActivityEvents})
	if err != nil {
		p.cfg.Logger.Error("account: reading the applications' activity", "error", err)
		return
	}
	row := make(map[string]*accountApp, len(apps))
	for i := range apps {
		row[apps[i].ClientID] = &apps[i]
	}
	for i := range page.Events {
		e := &page.Events[i]
		// The query also finds what an operator did as themselves in
		// the admin area; the person's page is about them.
		app := row[e.ClientID]
		if app == nil || e.Subject != subject {
			continue
		}
		if app.From == "" {
			app.From = e.ClientIP
		}
		if len(app.Activity) < accountActivityShown {
			app.Activity = append(app.Activity, activityIn(lang, e))
		}
	}
}
