package caddymodule

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/adminapi"
)

// The listing comes a page at a time in the issuers' order: limit asks
// for a page's size, next is the cursor of the page after, which after
// passes back; the pages together are every school once, and a school
// added or removed between two pages moves no other across a page's edge.
func TestSchoolsListPaged(t *testing.T) {
	tp := newTestPlatform(t, 10)
	for i := range 25 {
		tp.put(t, fmt.Sprintf("https://s%02d.example", i), nil, "")
	}
	runningAs(t, tp.app)
	list := func(query string) (adminapi.SchoolsPage, adminAnswer) {
		t.Helper()
		a := schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools"+query, "")
		var page adminapi.SchoolsPage
		if a.code != http.StatusOK || json.Unmarshal([]byte(a.body), &page) != nil {
			t.Fatalf("%s: %d %s", query, a.code, a.body)
		}
		return page, a
	}

	var got []string
	after := ""
	for pages := 0; ; pages++ {
		q := "?limit=10"
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		page, _ := list(q)
		for _, v := range page.Schools {
			got = append(got, v.Issuer)
		}
		if pages == 0 {
			// Between two pages: a school before the cursor goes,
			// one after it comes.
			if err := tp.reg.Remove(t.Context(), "https://s03.example"); err != nil {
				t.Fatal(err)
			}
			tp.put(t, "https://s15a.example", nil, "")
		}
		if page.Next == "" {
			if pages != 2 {
				t.Errorf("%d pages of 10 for 25 schools", pages+1)
			}
			break
		}
		if len(page.Schools) != 10 {
			t.Fatalf("a page of %d, not the 10 asked for", len(page.Schools))
		}
		after = page.Next
	}
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("https://s%02d.example", i))
		if i == 15 {
			want = append(want, "https://s15a.example")
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the pages listed\n%v\nwant\n%v", got, want)
	}
	if page, _ := list(""); len(page.Schools) != 25 || page.Next != "" {
		t.Errorf("the default page: %d schools, next %q", len(page.Schools), page.Next)
	}
}

// Every bad value of the listing's query is refused with a 400 that
// names the parameter.
func TestSchoolsListRefusals(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", nil, "")
	runningAs(t, tp.app)
	for _, tt := range []struct{ query, want string }{
		{"?limit=0", "limit must be a whole number from 1 to 1000"},
		{"?limit=1001", "limit must be"},
		{"?limit=-3", "limit must be"},
		{"?limit=ten", "limit must be"},
		{"?limit=", "limit must be"},
		{"?limit=1&limit=2", "limit is given 2 times"},
		{"?after=%21%21", "after is not a cursor this listing gave"},
		{"?after=" + url.QueryEscape(base64.RawURLEncoding.EncodeToString([]byte("https://a.example\n"))), "after is not a cursor"},
		{"?after=aGVsbG8", "after is not a cursor"},
		{"?page=2", `unknown parameter`},
	} {
		a := schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools"+tt.query, "")
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, tt.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tt.query, a.code, a.body, tt.want)
		}
	}
}

// schools list reads every page into one table; with --limit or --after
// it prints one page and, on stderr, how to read the next.
func TestSchoolsListCommandPages(t *testing.T) {
	tp := newTestPlatform(t, 10)
	for i := range 1005 {
		tp.put(t, fmt.Sprintf("https://s%04d.example", i), nil, "")
	}
	runningAs(t, tp.app)
	addr := runAdminServer(t)

	out, err := runSchools(t, addr, "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 1006 || !strings.HasPrefix(lines[1005], "https://s1004.example") {
		t.Fatalf("list: %v, %d lines, last %q", err, len(lines), lines[len(lines)-1])
	}
	out, err = runSchools(t, addr, "list", "--limit", "2")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 4 || !strings.HasPrefix(lines[2], "https://s0001.example") ||
		!strings.HasPrefix(lines[3], "more follow: caddy schoolgate schools list --after ") {
		t.Fatalf("list --limit 2: %v\n%s", err, out)
	}
	cursor := strings.TrimPrefix(lines[3], "more follow: caddy schoolgate schools list --after ")
	out, err = runSchools(t, addr, "list", "--limit", "1", "--after", cursor)
	if lines = strings.Split(strings.TrimSpace(out), "\n"); err != nil || !strings.HasPrefix(lines[1], "https://s0002.example") {
		t.Errorf("list --after: %v\n%s", err, out)
	}
	if _, err := runSchools(t, addr, "list", "--limit", "5000"); err == nil || !strings.Contains(err.Error(), "limit must be") {
		t.Errorf("list --limit 5000: %v", err)
	}
}
