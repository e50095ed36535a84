package authserver

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/store"
)

// DoctorReport is the connection doctor's answer for one application:
// the steps of its recent attempts in order, and where the latest one
// stopped. The admin API, the command line and the admin page show it.
type DoctorReport struct {
	ClientID string `json:"client_id"`
	// Name is the application's, when the school knows it.
	Name  string `json:"name,omitempty"`
	Known bool   `json:"known"`
	// Steps are the rows, ordered by their last attempt.
	Steps []DoctorStep `json:"steps"`
	// Stopped is the latest refusal when no step went through after it:
	// where the application's latest attempt stopped; nil when none did.
	Stopped *DoctorStep `json:"stopped,omitempty"`
}

// DoctorStep is a row with its outcome and its reason in words.
type DoctorStep struct {
	store.Step
	// Outcome is "passed" or "refused".
	Outcome string `json:"outcome"`
	// Why is the reason in words, in the language asked for.
	Why string `json:"why,omitempty"`
}

// Doctor returns the connection doctor's report of clientID, its
// reasons worded in lang.
func (s *Server) Doctor(ctx context.Context, clientID, lang string) (*DoctorReport, error) {
	rows, err := s.ClientSteps(ctx, clientID)
	if err != nil {
		return nil, err
	}
	rep := &DoctorReport{ClientID: clientID, Name: clientID, Steps: make([]DoctorStep, 0, len(rows))}
	c, err := s.KnownClient(ctx, clientID)
	if err != nil {
		return nil, err
	}
	if c != nil {
		rep.Name, rep.Known = c.Name, true
	}
	// Attempts made within the same instant follow the order of the
	// steps, so that a flow's page reads top to bottom.
	slices.SortStableFunc(rows, func(a, b store.Step) int {
		return cmp.Or(a.Last.Compare(b.Last), stepRank(a.Name)-stepRank(b.Name))
	})
	lastPassed := -1
	for i := range rows {
		d := DoctorStep{Step: rows[i], Outcome: "passed"}
		if rows[i].Refused() {
			d.Outcome, d.Why = "refused", ReasonText(lang, rows[i].Reason)
		} else {
			lastPassed = i
		}
		rep.Steps = append(rep.Steps, d)
	}
	for i := len(rep.Steps) - 1; i > lastPassed; i-- {
		if rep.Steps[i].Outcome == "refused" {
			st := rep.Steps[i]
			rep.Stopped = &st
			break
		}
	}
	return rep, nil
}

// ReasonText is a reason in words in lang: doctor.reason.<reason> of the
// school's messages, or the reason itself for one no language words.
func ReasonText(lang, reason string) string {
	key := "doctor.reason." + reason
	if !i18n.Has(key) {
		return reason
	}
	return i18n.Msg(lang, key)
}

// StepText is a step's name in words in lang.
func StepText(lang, step string) string {
	key := "doctor.step." + step
	if !i18n.Has(key) {
		return step
	}
	return i18n.Msg(lang, key)
}

// StepRetentionDays is how many days the doctor keeps steps, for the
// pages that say so.
func (s *Server) StepRetentionDays() int {
	return max(1, int(s.cfg.DoctorRetention.D()/(24*time.Hour)))
}
