package mcpserver

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestToolTable holds every tool's declaration to its handler: one
// handler per declared name, the arguments the handler reads are the
// ones the declaration offers, and a tool is listed and answered as
// member-only exactly when its handler needs a member.
func TestToolTable(t *testing.T) {
	h := newHarness(t)
	seen := map[string]bool{}
	var all, public []string
	for _, tl := range toolTable {
		name := tl.def.name
		if name == "" || seen[name] {
			t.Fatalf("tool %q is declared twice or unnamed", name)
		}
		seen[name] = true
		if (tl.public == nil) == (tl.member == nil) {
			t.Errorf("%s needs exactly one handler, public or member", name)
		}
		if tl.brief == "" {
			t.Errorf("%s has no brief for the instructions", name)
		}
		// A member tool names the scopes every call needs, and what one
		// call needs is never less; a public tool needs none.
		if (tl.member != nil) != (len(tl.scopes) > 0) || (tl.callScopes != nil && tl.member == nil) {
			t.Errorf("%s: member %v with scopes %v", name, tl.member != nil, tl.scopes)
		}
		for _, args := range []string{``, `{}`, `{"query":"mutation { x }"}`} {
			if got := tl.scopesFor(json.RawMessage(args)); !isSubset(tl.scopes, got) {
				t.Errorf("%s: a call with %s needs %v, less than the tool's %v", name, args, got, tl.scopes)
			}
		}
		all = append(all, name)
		if tl.member == nil {
			public = append(public, name)
		}

		// A member with account:read gets past memberOnly to the
		// handler, which names the arguments it reads when refusing an
		// unknown one.
		tr := h.callTool("member", name, map[string]any{"zz_not_an_argument": 1})
		_, takes, ok := strings.Cut(tr.text(), "; this tool takes ")
		if !tr.IsError || !ok {
			t.Errorf("%s: an unknown argument got %q", name, tr.text())
		} else if got, want := handlerArgs(takes), declaredArgs(t, tl.def); !slices.Equal(got, want) {
			t.Errorf("%s: the handler reads %v, the declaration offers %v", name, got, want)
		}

		tr = h.callTool("", name, map[string]any{})
		signIn := tr.IsError && tr.text() == (&mcpServer{opts: Options{SiteName: testSchool, Origin: testOrigin,
			ResourceMetadataURL: testMetadata}}).signInNeeded(name)
		if signIn != (tl.member != nil) {
			t.Errorf("%s: member-only %v, but an anonymous call got %q", name, tl.member != nil, tr.text())
		}
	}
	for _, c := range []struct {
		token string
		want  []string
	}{{"member", all}, {"", public}} {
		var res struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal(h.rpc(c.token, "tools/list", map[string]any{}).Result, &res); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tl := range res.Tools {
			got = append(got, tl.Name)
		}
		slices.Sort(got)
		if c.want = slices.Sorted(slices.Values(c.want)); !slices.Equal(got, c.want) {
			t.Errorf("tools/list as %q: %v, want %v", c.token, got, c.want)
		}
	}
	var exported []string
	for _, ti := range Tools() {
		exported = append(exported, ti.Name)
		if ti.Member != !slices.Contains(public, ti.Name) {
			t.Errorf("Tools(): %s member=%v", ti.Name, ti.Member)
		}
		if !slices.Equal(ti.Scopes, toolNamed(ti.Name).scopes) {
			t.Errorf("Tools(): %s scopes %v", ti.Name, ti.Scopes)
		}
	}
	if !slices.Equal(exported, all) {
		t.Errorf("Tools() = %v, want %v", exported, all)
	}
}

func isSubset(sub, of []string) bool {
	for _, s := range sub {
		if !slices.Contains(of, s) {
			return false
		}
	}
	return true
}

// handlerArgs are the argument names of an unknown-argument refusal,
// sorted.
func handlerArgs(takes string) []string {
	if takes == "no arguments" {
		return nil
	}
	args := strings.Split(takes, ", ")
	slices.Sort(args)
	return args
}

// declaredArgs are the properties of a declaration's input schema, sorted.
func declaredArgs(t *testing.T, d toolDef) []string {
	props, ok := d.input["properties"].(schema)
	if !ok {
		t.Fatalf("%s: the input schema has no properties", d.name)
	}
	var names []string
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// TestInstructionsListEveryTool: the instructions name each tool once, in
// the paragraph of its kind.
func TestInstructionsListEveryTool(t *testing.T) {
	s, err := newMCPServer(Options{Origin: testOrigin})
	if err != nil {
		t.Fatal(err)
	}
	text := s.instructions()
	publicPart, memberPart, ok := strings.Cut(text, "Member tools: ")
	if !ok {
		t.Fatalf("no member paragraph:\n%s", text)
	}
	for _, tl := range toolTable {
		part, other := publicPart, memberPart
		if tl.member != nil {
			part, other = memberPart, publicPart
		}
		if !strings.Contains(part, tl.def.name+" ") || strings.Contains(other, tl.def.name+" ") {
			t.Errorf("%s is not in its paragraph:\n%s", tl.def.name, text)
		}
	}
	if got := joinAnd([]string{"a", "b", "c"}); got != "a, b and c" {
		t.Errorf("joinAnd = %q", got)
	}
}

// TestDocsNameEveryTool: the hand-written guide lists every tool, and the
// README every public one.
func TestDocsNameEveryTool(t *testing.T) {
	guide, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range toolTable {
		name := "`" + tl.def.name + "`"
		if !strings.Contains(string(guide), name) {
			t.Errorf("docs/mcp.md does not name %s", name)
		}
		if tl.member == nil && !strings.Contains(string(readme), name) {
			t.Errorf("README.md does not name the public tool %s", name)
		}
	}
}
