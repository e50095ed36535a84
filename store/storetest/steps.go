package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// step is one attempt at epoch+at of client at name, refused for reason
// when it is set.
func step(client, subject, name, reason string, at time.Duration) store.Step {
	s := store.Step{ClientID: client, Subject: subject, Name: name, Reason: reason, Count: 1,
		First: epoch.Add(at), Last: epoch.Add(at)}
	if reason != "" {
		s.Error, s.Detail = "invalid_grant", "detail at "+at.String()
	}
	return s
}

func stepsOf(t *testing.T, s store.Store, q store.StepQuery) []store.Step {
	t.Helper()
	rows, err := s.QuerySteps(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// stepLine names a row and what it holds, for comparing.
func stepLine(r store.Step) string {
	return fmt.Sprintf("%s/%s/%s/%s n=%d %s..%s %s %q", r.ClientID, r.Subject, r.Name, r.Reason, r.Count,
		r.First.UTC().Format(time.TimeOnly), r.Last.UTC().Format(time.TimeOnly), r.Error, r.Detail)
}

func stepLines(rows []store.Step) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(stepLine(r) + "\n")
	}
	return b.String()
}

// testStepsAdd: attempts that end alike add up in one row, which keeps
// the first time, the last one and the last attempt's error and detail,
// however the additions come; each string is kept cut to its bound.
func testStepsAdd(t *testing.T, s store.Store) {
	ctx := context.Background()
	if rows := stepsOf(t, s, store.StepQuery{ClientID: "app-1"}); len(rows) != 0 {
		t.Fatalf("a new school's steps: %v", rows)
	}
	verifier := step("app-1", "ada", "token", "verifier_mismatch", 2*time.Minute)
	verifier.Count = 3
	add := func(steps ...store.Step) {
		t.Helper()
		if err := s.AddSteps(ctx, steps); err != nil {
			t.Fatal(err)
		}
	}
	add(step("app-1", "", "authorize", "", time.Minute), verifier, step("app-2", "", "authorize", "", 0))
	// Later: one more of each, one of them earlier than what is stored
	// (an instance whose flush comes late).
	late := step("app-1", "ada", "token", "verifier_mismatch", 90*time.Second)
	add(step("app-1", "", "authorize", "", 5*time.Minute), late)
	long := step("app-1", "", "use", "insufficient_scope", 6*time.Minute)
	long.Detail = strings.Repeat("é", store.MaxStepField) // two bytes each
	add(long)
	got := stepLines(stepsOf(t, s, store.StepQuery{ClientID: "app-1"}))
	want := "app-1/ada/token/verifier_mismatch n=4 10:01:30..10:02:00 invalid_grant \"detail at 2m0s\"\n" +
		"app-1//authorize/ n=2 10:01:00..10:05:00  \"\"\n" +
		"app-1//use/insufficient_scope n=1 10:06:00..10:06:00 invalid_grant \"" + strings.Repeat("é", store.MaxStepField/2) + "\"\n"
	if got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
}

// testStepsQuery: rows are read by application or by person, from a
// time on, ordered by their last attempt.
func testStepsQuery(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.AddSteps(ctx, []store.Step{
		step("app-1", "ada", "use", "token_expired", 3*time.Minute),
		step("app-1", "", "token", "", 2*time.Minute),
		step("app-2", "ada", "token", "redirect_mismatch", time.Minute),
		step("app-2", "bea", "token", "redirect_mismatch", 4*time.Minute),
		step("app-1", "", "authorize", "", 0),
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    store.StepQuery
		want string
	}{
		{store.StepQuery{ClientID: "app-1"}, "app-1//authorize/ app-1//token/ app-1/ada/use/token_expired"},
		{store.StepQuery{ClientID: "app-1", Since: epoch.Add(2 * time.Minute)}, "app-1//token/ app-1/ada/use/token_expired"},
		{store.StepQuery{Subject: "ada"}, "app-2/ada/token/redirect_mismatch app-1/ada/use/token_expired"},
		{store.StepQuery{Subject: "bea", Since: epoch.Add(5 * time.Minute)}, ""},
		{store.StepQuery{ClientID: "app-3"}, ""},
	} {
		var names []string
		for _, r := range stepsOf(t, s, c.q) {
			names = append(names, r.ClientID+"/"+r.Subject+"/"+r.Name+"/"+r.Reason)
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("%+v: %s, want %s", c.q, got, c.want)
		}
	}
}

// testStepsBounded: a school keeps at most store.MaxSteps rows; past it,
// an addition deletes those of unknown clients first, then the oldest,
// and a query returns the store.MaxStepsRead latest.
func testStepsBounded(t *testing.T, s store.Store) {
	ctx := context.Background()
	var flood []store.Step
	for i := range store.MaxSteps - 5 {
		flood = append(flood, step("app-1", fmt.Sprintf("p%05d", i), "use", "token_expired", time.Duration(i)*time.Millisecond))
	}
	for i := range 10 {
		flood = append(flood, step(fmt.Sprintf("made-up-%d", i), "", "authorize", store.ReasonUnknownClient, time.Hour))
	}
	if err := s.AddSteps(ctx, flood); err != nil {
		t.Fatal(err)
	}
	// Five rows over: the five oldest unknown clients' go, though they
	// are the newest rows.
	kept := stepsOf(t, s, store.StepQuery{ClientID: "app-1"})
	if len(kept) != store.MaxStepsRead || kept[len(kept)-1].Subject != fmt.Sprintf("p%05d", store.MaxSteps-6) {
		t.Errorf("app-1 read %d rows, the last %+v", len(kept), kept[len(kept)-1])
	}
	unknown := 0
	for i := range 10 {
		unknown += len(stepsOf(t, s, store.StepQuery{ClientID: fmt.Sprintf("made-up-%d", i)}))
	}
	if unknown != 5 {
		t.Errorf("%d rows of unknown clients kept, want 5", unknown)
	}
	// Twenty more known: the last unknown clients' go, then the fifteen
	// oldest.
	var more []store.Step
	for i := range 20 {
		more = append(more, step("app-2", fmt.Sprintf("q%02d", i), "use", "token_expired", 2*time.Hour+time.Duration(i)*time.Second))
	}
	if err := s.AddSteps(ctx, more); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if rows := stepsOf(t, s, store.StepQuery{ClientID: fmt.Sprintf("made-up-%d", i)}); len(rows) != 0 {
			t.Errorf("an unknown client's row outlived known ones: %v", rows)
		}
	}
	if rows := stepsOf(t, s, store.StepQuery{ClientID: "app-2"}); len(rows) != 20 {
		t.Errorf("app-2 has %d rows, want 20", len(rows))
	}
	kept = stepsOf(t, s, store.StepQuery{Subject: "p00015"})
	if gone := stepsOf(t, s, store.StepQuery{Subject: "p00014"}); len(kept) != 1 || len(gone) != 0 {
		t.Errorf("the oldest rows were not the ones deleted: p00015 %v, p00014 %v", kept, gone)
	}
}

// testPurgeSteps: the janitor deletes the rows whose last attempt is
// older than the retention, and nothing else.
func testPurgeSteps(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.AddSteps(ctx, []store.Step{
		step("app-1", "", "authorize", "", 0), step("app-1", "ada", "token", "code_expired", time.Hour),
		step("app-2", "", "authorize", "", 30*time.Minute),
	}); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeSteps(ctx, epoch.Add(30*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("purged %d, %v; want 1", n, err)
	}
	if got := stepLines(append(stepsOf(t, s, store.StepQuery{ClientID: "app-1"}),
		stepsOf(t, s, store.StepQuery{ClientID: "app-2"})...)); strings.Count(got, "\n") != 2 ||
		strings.Contains(got, "authorize/ n=1 10:00:00") {
		t.Errorf("after the purge:\n%s", got)
	}
	if n, err := s.PurgeSteps(ctx, epoch.Add(30*time.Minute)); err != nil || n != 0 {
		t.Errorf("a second purge: %d, %v", n, err)
	}
}

// testStepsOfSubject: a person's connection steps are in their export and
// go with their erasure; another person's stay.
func testStepsOfSubject(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.AddSteps(ctx, []store.Step{
		step("app-1", "cid", "use", "token_revoked", 0), step("app-2", "cid", "token", "verifier_mismatch", time.Minute),
		step("app-1", "dee", "use", "token_revoked", 0), step("app-1", "", "authorize", "", 0),
	}); err != nil {
		t.Fatal(err)
	}
	d, err := s.ExportSubject(ctx, "cid")
	if err != nil {
		t.Fatalf("export of a person known only by their steps: %v", err)
	}
	if len(d.Steps) != 2 || d.Steps[0].ClientID != "app-1" || d.Steps[1].Reason != "verifier_mismatch" {
		t.Errorf("exported steps:\n%s", stepLines(d.Steps))
	}
	n, err := s.EraseSubject(ctx, "cid")
	if err != nil {
		t.Fatal(err)
	}
	if n.Steps != 2 {
		t.Errorf("erased %+v, want 2 steps", *n)
	}
	if rows := stepsOf(t, s, store.StepQuery{Subject: "cid"}); len(rows) != 0 {
		t.Errorf("cid's steps after the erasure:\n%s", stepLines(rows))
	}
	if rows := stepsOf(t, s, store.StepQuery{ClientID: "app-1"}); len(rows) != 2 {
		t.Errorf("app-1 after cid's erasure:\n%s", stepLines(rows))
	}
	if _, err := s.ExportSubject(ctx, "cid"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("export after the erasure: %v", err)
	}
}
