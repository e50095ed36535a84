package caddymodule

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/schoolgate/schoolgate/school"
)

// optionWords are the Caddyfile words of the school's options, read from
// their one declaration (school.Options, with the options it embeds): a
// field's caddyfile tag, else its JSON name; the first word of it is the
// line that sets the option.
func optionWords(t reflect.Type) []string {
	var words []string
	for f := range t.Fields() {
		if f.Anonymous {
			words = append(words, optionWords(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if cf := f.Tag.Get("caddyfile"); cf != "" {
			name = cf
		}
		word, _, _ := strings.Cut(name, " ")
		words = append(words, word)
	}
	return words
}

// Adding an option is three places: its field in school.Options (with
// its default and check), its Caddyfile line, its row in
// docs/operator.md. This fails for an option that lacks its Caddyfile
// case, a Caddyfile test, or its row in the operator's options table.
func TestEveryOptionHasItsCaddyfileLineAndDocsRow(t *testing.T) {
	words := optionWords(reflect.TypeFor[school.Options]())
	if len(words) < 25 {
		t.Fatalf("only %d options read from school.Options: %v", len(words), words)
	}
	var tests strings.Builder
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests.Write(b)
	}
	docs, err := os.ReadFile("../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows strings.Builder
	for _, line := range strings.Split(string(docs), "\n") {
		if strings.HasPrefix(line, "| `") {
			rows.WriteString(line + "\n")
		}
	}
	for _, w := range words {
		if w == "school_gateway" { // the upstream: the directive's argument
			continue
		}
		d := caddyfile.NewTestDispenser("school_gateway http://127.0.0.1:9 {\n" + w + "\n}")
		d.Next()
		var g Gateway
		if err := g.UnmarshalCaddyfile(d); err != nil && strings.Contains(err.Error(), "school_gateway: unknown option") {
			t.Errorf("option %s: no Caddyfile case (%v)", w, err)
		}
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(w) + `(\s|$)`).MatchString(tests.String()) {
			t.Errorf("option %s: no Caddyfile line of it in the parser's tests", w)
		}
		if !regexp.MustCompile("`" + regexp.QuoteMeta(w) + "[ `]").MatchString(rows.String()) {
			t.Errorf("option %s: no row in docs/operator.md's options table", w)
		}
	}
}
