package platform

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// watchedSchool is a fake school of one record, active or not, counting
// its warm-ups.
type watchedSchool struct {
	rec    registry.Record
	active bool
	warmed int
}

func (s *watchedSchool) Record() *registry.Record { return &s.rec }
func (s *watchedSchool) IsActive() bool           { return s.active }
func (s *watchedSchool) Warm(int64)               { s.warmed++ }

func newWatched(rec registry.Record) *watchedSchool { return &watchedSchool{rec: rec} }

// watchedOf is newWatched as a table's change makes a school.
func watchedOf(rec *registry.Record) *watchedSchool { return newWatched(*rec) }

func record(issuer, cfg string, hosts ...string) registry.Record {
	return registry.Record{Issuer: issuer, Hosts: hosts, Config: json.RawMessage(cfg)}
}

func issuersOf(ss []*watchedSchool) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.rec.Issuer)
	}
	slices.Sort(out)
	return out
}

// A change replaces a copy of the table: an unchanged record keeps its
// school; a changed one gets a new school, warmed first if the old one
// is in use, and the old one is retired; a removed one is removed.
func TestReplace(t *testing.T) {
	a := newWatched(record("https://a.example", `{}`, "www.a.example"))
	a.active = true
	b := newWatched(record("https://b.example", `{}`))
	tb := NewTable[*watchedSchool](2)
	tb.Add(a)
	tb.Add(b)

	same := record("https://a.example", `{}`, "www.a.example")
	if _, ok := Replace(tb, same.Issuer, &same, watchedOf); ok {
		t.Fatal("an unchanged record made a change")
	}

	changed := record("https://a.example", `{"code_ttl":"1m"}`)
	c, ok := Replace(tb, changed.Issuer, &changed, watchedOf)
	if !ok || len(c.Retired) != 1 || c.Retired[0] != a || len(c.Removed) != 0 {
		t.Fatalf("a changed record: %+v", c)
	}
	newA := c.Next.School("https://a.example")
	if newA == a || newA.warmed != 1 || c.Next.Lookup("www.a.example", true) != nil {
		t.Fatalf("the changed record's school: warmed %d", newA.warmed)
	}
	if tb.School("https://a.example") != a {
		t.Fatal("the serving table changed")
	}

	c, ok = Replace(tb, "https://b.example", nil, watchedOf)
	if !ok || !slices.Equal(issuersOf(c.Removed), []string{"https://b.example"}) || c.Next.School("https://b.example") != nil {
		t.Fatalf("a removed record: %+v", c)
	}

	added := record("https://c.example", `{}`)
	if c, ok = Replace(tb, added.Issuer, &added, watchedOf); !ok || c.Next.School(added.Issuer) == nil ||
		c.Next.School(added.Issuer).warmed != 0 || len(c.Retired)+len(c.Removed) != 0 {
		t.Fatalf("an added record: %+v", c)
	}
}

// A resync keeps the schools of unchanged records and reports every
// issuer added, changed or removed.
func TestResync(t *testing.T) {
	keep := newWatched(record("https://keep.example", `{}`))
	change := newWatched(record("https://change.example", `{}`))
	gone := newWatched(record("https://gone.example", `{}`))
	tb := NewTable[*watchedSchool](3)
	for _, s := range []*watchedSchool{keep, change, gone} {
		tb.Add(s)
	}
	c := Resync(tb, []registry.Record{
		record("https://keep.example", `{}`),
		record("https://change.example", `{"code_ttl":"1m"}`),
		record("https://new.example", `{}`),
	}, watchedOf)
	if c.Next.School("https://keep.example") != keep || c.Next.Len() != 3 {
		t.Fatal("an unchanged record lost its school")
	}
	if !slices.Equal(issuersOf(c.Retired), []string{"https://change.example"}) ||
		!slices.Equal(issuersOf(c.Removed), []string{"https://gone.example"}) {
		t.Fatalf("retired %v, removed %v", issuersOf(c.Retired), issuersOf(c.Removed))
	}
	got := slices.Sorted(slices.Values(c.Issuers))
	if !slices.Equal(got, []string{"https://change.example", "https://gone.example", "https://new.example"}) {
		t.Fatalf("changed issuers: %v", got)
	}
}
