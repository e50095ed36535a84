package catalog

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/mcp.md shows searches on the demo school with their results; they
// must be what the demo school answers.
func TestReadmeSearchExamples(t *testing.T) {
	readme, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	// A call "search <query>   # comment" followed by its result lines,
	// each "# <score>  <title>  <matched>" as the example's jq prints them.
	example := regexp.MustCompile(`(?m)^search (\S+) .*\n((?:# .*\n)+)`)
	found := example.FindAllStringSubmatch(string(readme), -1)
	if len(found) < 2 {
		t.Fatalf("docs/mcp.md shows %d search examples, want the stemmed and the corrected one", len(found))
	}
	f, err := Parse(demoFeed(t))
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(testOrigin, f)
	for _, m := range found {
		want := strings.Split(strings.TrimSuffix(m[2], "\n"), "\n")
		var got []string
		for _, h := range ix.Search(m[1], "", len(want)) {
			line := fmt.Sprintf("# %v  %s  ", h.Score, h.Title)
			if h.Matched != "" {
				line += h.Matched
			}
			got = append(got, strings.TrimRight(line, " "))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("docs/mcp.md: search %s shows\n%s\nthe demo school answers\n%s", m[1], strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}
