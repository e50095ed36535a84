package authserver

import (
	"cmp"
	"context"
	"errors"
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
// reasons worded in lang: the stored steps and those noted here and not
// yet stored.
func (s *Server) Doctor(ctx context.Context, clientID, lang string) (*DoctorReport, error) {
	rows, err := s.ClientSteps(ctx, clientID)
	if err != nil {
		return nil, err
	}
	c, err := s.knownClient(ctx, clientID, map[string]*store.Client{})
	if err != nil {
		return nil, err
	}
	return doctorReport(rows, c, clientID, lang), nil
}

// DoctorSource is what the connection doctor reads of a school's store.
type DoctorSource interface {
	QuerySteps(ctx context.Context, q store.StepQuery) ([]store.Step, error)
	GetClient(ctx context.Context, id string) (*store.Client, error)
}

// StoredDoctor is Doctor for a school that is not running here, read
// from its store alone: a platform's idle school, which reading its
// doctor must not build (building one lets go of another past
// max_active). Such a school has no steps waiting to be stored; what
// another instance has noted and not yet stored is missing, as it is
// from Doctor.
func StoredDoctor(ctx context.Context, src DoctorSource, vendors []VendorClient, clientID, lang string) (*DoctorReport, error) {
	rows, err := src.QuerySteps(ctx, store.StepQuery{ClientID: clientID})
	if err != nil {
		return nil, err
	}
	var c *store.Client
	if i := slices.IndexFunc(vendors, func(v VendorClient) bool { return v.ClientID == clientID }); i >= 0 {
		c = vendorClients(vendors[i : i+1])[clientID]
	} else if c, err = src.GetClient(ctx, clientID); errors.Is(err, store.ErrNotFound) {
		c = nil
	} else if err != nil {
		return nil, err
	}
	return doctorReport(rows, c, clientID, lang), nil
}

// doctorReport is the report of clientID's rows, whose client is c (nil
// when no longer known).
func doctorReport(rows []store.Step, c *store.Client, clientID, lang string) *DoctorReport {
	rep := &DoctorReport{ClientID: clientID, Name: clientID, Steps: make([]DoctorStep, 0, len(rows))}
	if c != nil {
		rep.Name, rep.Known = displayName(c), true
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
	return rep
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
