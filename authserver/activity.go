package authserver

import (
	"strings"
	"time"

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
	if _, ok := messages[Languages[0]][key]; ok && value != "" {
		return msg(lang, key)
	}
	return value
}

