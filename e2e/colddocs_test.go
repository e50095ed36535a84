package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// demoFeed is what the demo school's catalog feed names: the school and
// its courses' slugs.
type demoFeed struct {
	name  string
	slugs []string
}

// readDemoFeed reads the feed a school imports, as the gateway would.
func readDemoFeed(t *testing.T, feedURL string) demoFeed {
	t.Helper()
	status, _, body := get(t, feedURL)
	var f struct {
		School  struct{ Name string }
		Courses []struct{ Slug string }
	}
	if status != http.StatusOK || json.Unmarshal(body, &f) != nil || f.School.Name == "" || len(f.Courses) == 0 {
		t.Fatalf("the feed %s: %d %.200s", feedURL, status, body)
	}
	d := demoFeed{name: f.School.Name}
	for _, c := range f.Courses {
		d.slugs = append(d.slugs, c.Slug)
	}
	return d
}

// coldDocuments are the documents in the order checkWholeDocuments asks
// for them: the content index agents read first, first.
var coldDocuments = []string{"/llms.txt", "/pricing.md", "/auth.md", "/openapi.json"}

// checkWholeDocuments asks the school at origin, through c, for its
// documents, the first of them being the first request the school gets
// since it was built (the caller sees to that), and checks that each is
// whole and cacheable: public for five minutes, titled with the feed's
// school name, and llms.txt and pricing.md listing every course of the
// feed. A school built before its catalog is in waits for it (or answers
// 503 past the wait): it never answers the documents of a school that
// sells nothing, public for five minutes.
func checkWholeDocuments(t *testing.T, c *http.Client, origin string, feed demoFeed) {
	t.Helper()
	for _, path := range coldDocuments {
		r := fetch(t, c, origin+path)
		body := string(r.body)
		if r.status != http.StatusOK || r.header.Get("Cache-Control") != "public, max-age=300" {
			t.Errorf("%s%s: %d, Cache-Control %q, want 200 and public, max-age=300\n%.300s",
				origin, path, r.status, r.header.Get("Cache-Control"), body)
			continue
		}
		if !strings.Contains(body, feed.name) {
			t.Errorf("%s%s is not titled %q:\n%.300s", origin, path, feed.name, body)
		}
		if path != "/llms.txt" && path != "/pricing.md" {
			continue
		}
		var missing []string
		for _, slug := range feed.slugs {
			if !strings.Contains(body, origin+"/courses/"+slug+")") {
				missing = append(missing, slug)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s%s lists %d of the feed's %d courses (missing %v):\n%s",
				origin, path, len(feed.slugs)-len(missing), len(feed.slugs), missing, body)
		}
	}
}
