package catalog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDemoCatalog(t *testing.T) {
	f, err := Parse(demoFeed(t))
	if err != nil {
		t.Fatalf("the demo school's catalog must parse: %v", err)
	}
	if f.School.Name == "" || len(f.Courses) == 0 || len(f.Events) == 0 || len(f.MembershipPlans) == 0 || len(f.DigitalProducts) == 0 {
		t.Fatalf("demo catalog incomplete: %+v", f.School)
	}
}

// parseRejectCases are feeds Parse refuses, each with a part of its
// error; TestParseMatchesOldParse checks the whole message is unchanged.
const schoolMember = `"school":{"name":"S"}`

var parseRejectCases = []struct {
	name string
	raw  string
	want string // substring of the error
}{
	{"empty", "  ", "empty"},
	{"array", `[]`, "must be a JSON object"},
	{"null", `null`, "must be a JSON object"},
	{"syntax", "{\n\"school\": {\"name\": \"S\"},\n  \"courses\": [,]}", "line 3"},
	{"trailing garbage", `{` + schoolMember + `} x`, "not valid JSON"},
	{"second object", `{` + schoolMember + `}{}`, "not valid JSON"},
	{"no school name", `{"school":{"description":"d"}}`, "school.name is required"},
	{"school not object", `{"school":"S"}`, "school: must be a JSON object"},
	{"courses not array", `{` + schoolMember + `,"courses":{}}`, "courses: must be an array"},
	{"course not object", `{` + schoolMember + `,"courses":[1]}`, "courses[0]: must be a JSON object"},
	{"title wrong type", `{` + schoolMember + `,"courses":[{"slug":"a","title":5}]}`, `courses[0] "a": title: expected a string, got number`},
	{"amount wrong type", `{` + schoolMember + `,"courses":[{"slug":"a","title":"A","price":{"amount":"9","currency":"EUR"}}]}`, "price.amount: expected a number, got string"},
	{"amount overflow", `{` + schoolMember + `,"courses":[{"slug":"a","title":"A","price":{"amount":1e400,"currency":"EUR"}}]}`, "out of range"},
	{"missing slug", `{` + schoolMember + `,"courses":[{"title":"A"}]}`, "courses[0]: slug is required"},
	{"unsafe slug", `{` + schoolMember + `,"courses":[{"slug":"a b","title":"A"}]}`, "not URL-safe"},
	{"slug starting with dash", `{` + schoolMember + `,"events":[{"slug":"-a","title":"A","starts_at":"2027-01-01T10:00:00Z"}]}`, "not URL-safe"},
	{"duplicate slug", `{` + schoolMember + `,"courses":[{"slug":"a","title":"A"},{"slug":"b","title":"B"},{"slug":"c","title":"C"},{"slug":"a","title":"A2"}]}`, `courses[3] "a": duplicate slug (also courses[0])`},
	{"missing title", `{` + schoolMember + `,"digital_products":[{"slug":"p","title":"  "}]}`, `digital_products[0] "p": title is required`},
	{"missing plan name", `{` + schoolMember + `,"membership_plans":[{"slug":"m"}]}`, `membership_plans[0] "m": name is required`},
	{"negative price", `{` + schoolMember + `,"courses":[{"slug":"a","title":"A","price":{"amount":-1,"currency":"EUR"}}]}`, "price.amount must be a finite number >= 0"},
	{"lowercase currency", `{` + schoolMember + `,"courses":[{"slug":"a","title":"A","price":{"amount":1,"currency":"eur"}}]}`, `price.currency "eur"`},
	{"missing currency", `{` + schoolMember + `,"membership_plans":[{"slug":"m","name":"M","price":{"amount":1}}]}`, "price.currency"},
	{"missing starts_at", `{` + schoolMember + `,"events":[{"slug":"e","title":"E"}]}`, "starts_at is required"},
	{"bad starts_at", `{` + schoolMember + `,"events":[{"slug":"e","title":"E","starts_at":"2027-01-01 10:00"}]}`, "not an RFC 3339"},
	{"date-only starts_at", `{` + schoolMember + `,"events":[{"slug":"e","title":"E","starts_at":"2027-01-01"}]}`, "not an RFC 3339"},
	{"bad ends_at", `{` + schoolMember + `,"events":[{"slug":"e","title":"E","starts_at":"2027-01-01T10:00:00Z","ends_at":"soon"}]}`, "ends_at"},
	{"ends before start", `{` + schoolMember + `,"events":[{"slug":"e","title":"E","starts_at":"2027-01-01T10:00:00Z","ends_at":"2027-01-01T11:00:00+02:00"}]}`, "ends_at is before starts_at"},
	{"language not a tag", `{` + schoolMember + `,"language":"English (UK)"}`, `language "English (UK)" is not a BCP 47 language tag`},
	{"language not a string", `{` + schoolMember + `,"language":["de"]}`, "language: expected a string"},
}

func TestParseRejects(t *testing.T) {
	tests := parseRejectCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.raw))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"minimal", `{"school":{"name":"S"}}`},
		{"null lists", `{"school":{"name":"S"},"courses":null,"events":null}`},
		{"free course, no price", `{"school":{"name":"S"},"courses":[{"slug":"a.b_c-1","title":"A"},{"slug":"B","title":"B","price":{"amount":0,"currency":"USD"}}]}`},
		{"same slug in two kinds", `{"school":{"name":"S"},"courses":[{"slug":"x","title":"X"}],"digital_products":[{"slug":"x","title":"X"}]}`},
		{"event without end, fractional seconds", `{"school":{"name":"S"},"events":[{"slug":"e","title":"E","starts_at":"2027-01-01T10:00:00.5Z"}]}`},
		{"surrounding whitespace", "\n {\"school\":{\"name\":\"S\"}} \n"},
		{"language", `{"school":{"name":"S"},"language":"de-CH"}`},
		{"language without a stemmer", `{"school":{"name":"S"},"language":"nl"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.raw)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseSizeCap(t *testing.T) {
	raw := append([]byte(`{"school":{"name":"S"},"x":"`), bytes.Repeat([]byte("a"), MaxFeedBytes)...)
	raw = append(raw, `"}`...)
	if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("oversize feed: %v", err)
	}
}

func TestValidationErrorIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"school":{"name":"S"},"courses":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"slug":"a"}`)
	}
	b.WriteString(`]}`)
	_, err := Parse([]byte(b.String()))
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("want *ValidationError, got %T %v", err, err)
	}
	if len(ve.Problems) != maxProblems || ve.More == 0 || !strings.Contains(err.Error(), "more") {
		t.Fatalf("problems %d, more %d", len(ve.Problems), ve.More)
	}
}

func TestExtraRoundTrip(t *testing.T) {
	raw := `{
		"school": {"name": "S", "logo": "https://cdn.example/logo.png"},
		"version": 3,
		"courses": [{"slug": "a", "title": "A", "level": "beginner", "Title": "case-different key",
			"modules": [{"n": 1}], "price": {"amount": 9.5, "currency": "EUR"}}],
		"events": [{"slug": "e", "title": "E", "starts_at": "2027-01-01T10:00:00Z", "venue": {"city": "Berlin"}}],
		"membership_plans": [{"slug": "m", "name": "M", "trial_days": 14}],
		"digital_products": [{"slug": "p", "title": "P", "format": "pdf", "pages": null}]
	}`
	f := mustParse(t, raw)
	checks := []struct {
		extra map[string]json.RawMessage
		key   string
		want  string
	}{
		{f.School.Extra, "logo", `"https://cdn.example/logo.png"`},
		{f.Extra, "version", `3`},
		{f.Courses[0].Extra, "level", `"beginner"`},
		{f.Courses[0].Extra, "Title", `"case-different key"`},
		{f.Courses[0].Extra, "modules", `[{"n": 1}]`},
		{f.Events[0].Extra, "venue", `{"city": "Berlin"}`},
		{f.MembershipPlans[0].Extra, "trial_days", `14`},
		{f.DigitalProducts[0].Extra, "pages", `null`},
	}
	for _, c := range checks {
		if got := string(c.extra[c.key]); got != c.want {
			t.Errorf("extra %q = %s, want %s", c.key, got, c.want)
		}
	}
	if f.Courses[0].Title != "A" {
		t.Errorf("a differently cased key must not override the field: %q", f.Courses[0].Title)
	}
	if _, ok := f.Courses[0].Extra["title"]; ok {
		t.Error("known fields must not be repeated in Extra")
	}

	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	again := mustParse(t, string(out))
	if !reflect.DeepEqual(normalizeExtras(f), normalizeExtras(again)) {
		t.Fatalf("round trip changed the feed:\n%s", out)
	}
	var course map[string]any
	b, _ := json.Marshal(f.Courses[0])
	if err := json.Unmarshal(b, &course); err != nil {
		t.Fatal(err)
	}
	if course["level"] != "beginner" || course["title"] != "A" {
		t.Fatalf("marshal must write fields and extras: %s", b)
	}
}

// normalizeExtras compacts raw extra values so that formatting differences
// from re-encoding do not count as changes.
func normalizeExtras(f *Feed) *Feed {
	c := *f
	compact := func(m map[string]json.RawMessage) map[string]json.RawMessage {
		out := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			var b bytes.Buffer
			_ = json.Compact(&b, v)
			out[k] = b.Bytes()
		}
		return out
	}
	c.Extra = compact(f.Extra)
	c.School.Extra = compact(f.School.Extra)
	c.Courses = append([]Course(nil), f.Courses...)
	for i := range c.Courses {
		c.Courses[i].Extra = compact(c.Courses[i].Extra)
	}
	c.Events = append([]Event(nil), f.Events...)
	for i := range c.Events {
		c.Events[i].Extra = compact(c.Events[i].Extra)
	}
	c.MembershipPlans = append([]MembershipPlan(nil), f.MembershipPlans...)
	for i := range c.MembershipPlans {
		c.MembershipPlans[i].Extra = compact(c.MembershipPlans[i].Extra)
	}
	c.DigitalProducts = append([]DigitalProduct(nil), f.DigitalProducts...)
	for i := range c.DigitalProducts {
		c.DigitalProducts[i].Extra = compact(c.DigitalProducts[i].Extra)
	}
	return &c
}

func TestMarshalExtraShadowingFieldIsSkipped(t *testing.T) {
	c := Course{Slug: "a", Title: "A", Extra: map[string]json.RawMessage{"title": json.RawMessage(`"evil"`), "x": nil}}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "evil") || !strings.Contains(string(b), `"x":null`) {
		t.Fatalf("got %s", b)
	}
	c.Extra = map[string]json.RawMessage{"bad": json.RawMessage(`{`)}
	if _, err := json.Marshal(c); err == nil {
		t.Fatal("invalid extra JSON must fail to marshal")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(demoFeed(f))
	f.Add([]byte(`{"school":{"name":"S"},"courses":[{"slug":"a","title":"A","x":[1,{"y":null}]}]}`))
	f.Add([]byte(`{"school":{"name":"S"},"events":[{"slug":"e","title":"E","starts_at":"2027-01-01T10:00:00Z","ends_at":"2026-01-01T10:00:00Z"}]}`))
	f.Add([]byte(`{"school":null}`))
	f.Add([]byte(`{} []`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkSameParse(t, raw)
		feed, err := Parse(raw)
		if err != nil {
			return
		}
		// Whatever Parse accepts must survive a round trip and be
		// indexable: the manager persists re-encoded feeds and the MCP
		// tools search them.
		out, err := json.Marshal(feed)
		if err != nil {
			t.Fatalf("marshal accepted feed: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of marshalled feed: %v\n%s", err, out)
		}
		if len(again.Courses) != len(feed.Courses) || len(again.Events) != len(feed.Events) {
			t.Fatal("round trip lost items")
		}
		ix := NewIndex(testOrigin, feed)
		_ = ix.Search(feed.School.Name, "", MaxLimit)
		_ = ix.Events(time.Time{}, time.Time{})
	})
}
