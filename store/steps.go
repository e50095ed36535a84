package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// Connection steps: what the connection doctor shows of an application's
// attempts to connect. The audit trail stores what changed; most of an
// attempt that fails changes nothing (a redirect URI that differs, a
// verifier of another attempt, a token used where it is not valid), so
// its steps have a path of their own, bounded so that a flood of
// refused requests cannot fill a store or slow its reader:
//
//   - counted, not repeated: one row per application, person (when the
//     step knows them), step and reason, which every attempt ending the
//     same way adds one to, keeping its first and last time and the last
//     attempt's detail;
//   - at most MaxSteps rows a school, those of applications no one
//     registered going first when there are more;
//   - kept a week by default (the janitor's purge, PurgeSteps).
//
// A row never holds a token, code, verifier or secret, nor a person's
// e-mail: the subject is the person's stable identifier, and Detail is
// what the protocol code chose to keep (a scope, a host, a status).

// Step is one row: the attempts of one application at one step that
// ended alike.
type Step struct {
	ClientID string `json:"client_id"`
	// Subject is the person the attempts were for, when the step knows
	// it (after sign-in) and they were refused; empty otherwise.
	Subject string `json:"sub,omitempty"`
	// Name is the step (the protocol's names: metadata, authorize,
	// token, use, …).
	Name string `json:"step"`
	// Reason is why the step stopped, one of the protocol's reasons;
	// empty for a step that went through.
	Reason string `json:"reason,omitempty"`
	// Error is the RFC error code the last attempt was answered with;
	// empty for a step that went through.
	Error string `json:"error,omitempty"`
	// Detail is the last attempt's detail that is safe to keep.
	Detail string `json:"detail,omitempty"`
	// Count is how many attempts ended so; First and Last are the first
	// and the last one's times.
	Count int64     `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Refused reports whether the step stopped the attempt.
func (s *Step) Refused() bool { return s.Reason != "" }

// StepKey is what a row is counted under.
type StepKey struct{ ClientID, Subject, Name, Reason string }

// Key is the row's key.
func (s *Step) Key() StepKey { return StepKey{s.ClientID, s.Subject, s.Name, s.Reason} }

// Merge adds o, of the same key, to s: counts add up, First is the
// earlier, Last the later, and Error and Detail are the later
// attempt's.
func (s *Step) Merge(o *Step) {
	s.Count += o.Count
	if s.First.IsZero() || o.First.Before(s.First) {
		s.First = o.First
	}
	if !o.Last.Before(s.Last) {
		s.Last, s.Error, s.Detail = o.Last, o.Error, o.Detail
	}
}

// Compare orders keys by their bytes: client, subject, step, reason. Every
// store takes the rows of an addition in this order, so that two
// instances adding at once never wait on each other in a cycle.
func (k StepKey) Compare(o StepKey) int {
	return cmp.Or(strings.Compare(k.ClientID, o.ClientID), strings.Compare(k.Subject, o.Subject),
		strings.Compare(k.Name, o.Name), strings.Compare(k.Reason, o.Reason))
}

// SortSteps orders steps by key, as AddSteps takes them.
func SortSteps(steps []Step) {
	slices.SortFunc(steps, func(a, b Step) int { return a.Key().Compare(b.Key()) })
}

// Bounds of the steps.
const (
	// MaxSteps bounds the rows one school keeps: a week of a busy
	// school's applications, each a few dozen rows, fits many times.
	MaxSteps = 10000
	// MaxStepsRead bounds the rows one query returns, the latest.
	MaxStepsRead = 1000
	// MaxStepField bounds each string of a row, in bytes; a store
	// refuses nothing longer but keeps it cut.
	MaxStepField = 256
)

// ReasonUnknownClient is the reason of an attempt by a client_id the
// school does not know: its rows are the first to go past MaxSteps, since
// anyone can make them up by the thousand.
const ReasonUnknownClient = "unknown_client"

// StepStore keeps the connection steps.
type StepStore interface {
	// AddSteps adds each step to the stored row of its key (one not
	// stored starts at zero) as Step.Merge does, in one transaction. A
	// store clips each string to MaxStepField bytes. Then, when the
	// school holds more than MaxSteps rows, it deletes the rows past it:
	// those of ReasonUnknownClient first, then the oldest by Last.
	// Instances adding at once each add all of theirs.
	AddSteps(ctx context.Context, steps []Step) error
	// QuerySteps returns the rows of q.ClientID, or of q.Subject (exactly
	// one is set), whose Last is at or after q.Since: the MaxStepsRead
	// latest, ordered by Last then key.
	QuerySteps(ctx context.Context, q StepQuery) ([]Step, error)
	// PurgeSteps deletes the rows whose Last is before before and
	// returns how many.
	PurgeSteps(ctx context.Context, before time.Time) (int, error)
}

// StepQuery selects rows: of one application or of one person.
type StepQuery struct {
	ClientID string
	Subject  string
	Since    time.Time
}

// ClipStep cuts each string of s to MaxStepField bytes, at a character
// boundary.
func ClipStep(s *Step) {
	for _, f := range []*string{&s.ClientID, &s.Subject, &s.Name, &s.Reason, &s.Error, &s.Detail} {
		*f = clipString(*f, MaxStepField)
	}
}

func clipString(v string, n int) string {
	if len(v) <= n {
		return v
	}
	i := n
	for i > 0 && v[i]&0xC0 == 0x80 { // not in the middle of a UTF-8 sequence
		i--
	}
	return v[:i]
}

// LatestSteps orders rows by Last then key, and keeps the MaxStepsRead
// latest: the order of QuerySteps, for a store that reads them in
// another.
func LatestSteps(rows []Step) []Step {
	slices.SortFunc(rows, func(a, b Step) int {
		return cmp.Or(a.Last.Compare(b.Last), a.Key().Compare(b.Key()))
	})
	if len(rows) > MaxStepsRead {
		rows = rows[len(rows)-MaxStepsRead:]
	}
	return rows
}

// EvictSteps returns the keys of the rows to delete so that at most max
// stay: those of ReasonUnknownClient first, then the oldest by Last.
func EvictSteps(rows []Step, max int) []StepKey {
	if len(rows) <= max {
		return nil
	}
	slices.SortFunc(rows, func(a, b Step) int {
		au, bu := a.Reason == ReasonUnknownClient, b.Reason == ReasonUnknownClient
		switch {
		case au && !bu:
			return -1
		case bu && !au:
			return 1
		}
		return cmp.Or(a.Last.Compare(b.Last), a.Key().Compare(b.Key()))
	})
	out := make([]StepKey, len(rows)-max)
	for i := range out {
		out[i] = rows[i].Key()
	}
	return out
}
