package platform

import (
	"slices"
	"testing"
)

// Of the platforms ranked before one, the first whose table has an
// enabled record of an issuer claims it; a disabled record or a table
// not read yet claims nothing, nor does one ranked after.
func TestClaimant(t *testing.T) {
	tables := map[string]*Table[*watchedSchool]{"first": NewTable[*watchedSchool](1),
		"second": NewTable[*watchedSchool](1), "self": NewTable[*watchedSchool](1), "after": NewTable[*watchedSchool](1)}
	off := record("https://a.example", `{}`)
	off.Disabled = true
	tables["first"].Add(newWatched(off))
	tables["after"].Add(newWatched(record("https://b.example", `{}`)))
	table := func(p string) *Table[*watchedSchool] { return tables[p] }
	ranked := []string{"unread", "first", "second", "self", "after"}
	if got := Claimant(ranked, "self", table, "https://a.example"); got != "" {
		t.Fatalf("a disabled record claims: %q", got)
	}
	tables["second"].Add(newWatched(record("https://a.example", `{}`)))
	if got := Claimant(ranked, "self", table, "https://a.example"); got != "second" {
		t.Fatalf("claimant %q, want second", got)
	}
	if got := Claimant(ranked, "self", table, "https://b.example"); got != "" {
		t.Fatalf("a platform ranked after claims: %q", got)
	}
}

// Renew makes the stale enabled schools again, in a copy of the table.
func TestRenew(t *testing.T) {
	a := newWatched(record("https://a.example", `{}`))
	b := newWatched(record("https://b.example", `{}`))
	off := record("https://off.example", `{}`)
	off.Disabled = true
	tb := NewTable[*watchedSchool](3)
	for _, s := range []*watchedSchool{a, b, newWatched(off)} {
		tb.Add(s)
	}
	all := func(*watchedSchool) bool { return true }
	if c := Renew(tb, []string{"https://off.example", "https://none.example"}, all, watchedOf); c.Next != nil {
		t.Fatal("a disabled or unknown record was renewed")
	}
	c := Renew(tb, []string{"https://a.example", "https://b.example"}, func(s *watchedSchool) bool { return s == a }, watchedOf)
	if c.Next == nil || !slices.Equal(issuersOf(c.Retired), []string{"https://a.example"}) ||
		c.Next.School("https://a.example") == a || c.Next.School("https://b.example") != b || tb.School("https://a.example") != a {
		t.Fatalf("renew: %+v", c)
	}
}
