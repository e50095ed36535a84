package layout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rule is a package's row of the layout.
type rule struct {
	// pkg is the package's path below the module; "." is the module's
	// own package.
	pkg string
	// imports are the packages of the module it may import, by their
	// paths below the module; everything allows them all.
	imports []string
	// uses are the guarded outside packages it may use.
	uses []string
	// why is the rule, said in a failure.
	why string
}

// guard is an outside package, or every package below a path, that only
// the packages whose row names it may use.
type guard struct {
	path string
	// linked guards whatever a package links, through any module;
	// otherwise only what it imports itself.
	linked bool
	why    string
}

// listed is a package as go list tells of it.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// check returns, in words naming the package, the import and the rule,
// each way pkgs (the packages of module) break rules and guards, and
// each package without a row or row without a package.
func check(module string, pkgs []listed, rules []rule, guards []guard) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	own := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		rel, ok := strings.CutPrefix(path, module+"/")
		return rel, ok
	}
	row := map[string]*rule{}
	for i := range rules {
		r := &rules[i]
		if row[r.pkg] != nil {
			fail("the layout has two rows of %s: keep one", r.pkg)
		}
		row[r.pkg] = r
	}
	byPath := map[string]*listed{}
	for i := range pkgs {
		byPath[pkgs[i].ImportPath] = &pkgs[i]
	}

	for _, p := range pkgs {
		name, _ := own(p.ImportPath)
		r := row[name]
		if r == nil {
			fail("%s has no row in the layout (internal/layout/layout_test.go): add one naming what it may import and why", name)
			continue
		}
		for _, imp := range p.Imports {
			if target, ok := own(imp); ok {
				if !slices.Contains(r.imports, "*") && !slices.Contains(r.imports, target) {
					fail("%s imports %s, which its row does not allow (it allows %s): %s",
						name, target, list(r.imports), r.why)
				}
				continue
			}
			for _, g := range guards {
				if !g.linked && within(imp, g.path) && !slices.Contains(r.uses, g.path) {
					fail("%s imports %s, which its row does not name: %s (%s: %s)", name, imp, g.why, name, r.why)
				}
			}
		}
		for _, g := range guards {
			if !g.linked || slices.Contains(r.uses, g.path) {
				continue
			}
			guarded := func(dep string) bool { return within(dep, g.path) }
			i := slices.IndexFunc(p.Deps, guarded)
			if i < 0 {
				continue
			}
			if j := slices.IndexFunc(p.Imports, guarded); j >= 0 {
				fail("%s imports %s, which its row does not name: %s (%s: %s)", name, p.Imports[j], g.why, name, r.why)
				continue
			}
			// Name the way in: an import of the module that links it,
			// else one of the outside modules it imports.
			through := "through a module outside this one (go mod why " + p.Deps[i] + ")"
			for _, imp := range p.Imports {
				if d := byPath[imp]; d != nil && slices.ContainsFunc(d.Deps, guarded) {
					through = "through " + imp
					break
				}
			}
			fail("%s links %s %s, which its row does not name: %s (%s: %s)", name, p.Deps[i], through, g.why, name, r.why)
		}
	}

	for _, r := range rules {
		if _, ok := byPath[path(module, r.pkg)]; !ok {
			fail("the layout's row of %s names no package of the module: remove it, or correct its name", r.pkg)
		}
		for _, imp := range r.imports {
			if _, ok := byPath[path(module, imp)]; !ok && imp != "*" {
				fail("the row of %s allows %s, which is no package of the module", r.pkg, imp)
			}
		}
	}
	return problems
}

// path is the import path of the package rel of module.
func path(module, rel string) string {
	if rel == "." {
		return module
	}
	return module + "/" + rel
}

// within reports whether the package path is base or below it.
func within(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+"/")
}

// list says a row's imports.
func list(imports []string) string {
	if len(imports) == 0 {
		return "none of the module"
	}
	return strings.Join(imports, ", ")
}

// TestCheck: each way a package can break the layout is found and said,
// and a package that keeps it says nothing.
func TestCheck(t *testing.T) {
	const m = "example.com/m"
	rules := []rule{
		{".", []string{"adapter"}, []string{"example.com/web"}, "the root registers the adapter"},
		{"adapter", []string{"*"}, []string{"example.com/web"}, "the adapter"},
		{"core", []string{"leaf"}, nil, "the core is plain"},
		{"leaf", nil, []string{"html/template"}, "the leaf draws"},
	}
	guards := []guard{
		{"example.com/web", true, "the web framework only in the adapter"},
		{"html/template", false, "HTML only in the leaf"},
	}
	good := []listed{
		{ImportPath: m, Imports: []string{m + "/adapter"}, Deps: []string{m + "/adapter", "example.com/web/v2"}},
		{ImportPath: m + "/adapter", Imports: []string{m + "/core", "example.com/web/v2"}, Deps: []string{m + "/core", m + "/leaf", "example.com/web/v2"}},
		{ImportPath: m + "/core", Imports: []string{m + "/leaf", "strings"}, Deps: []string{m + "/leaf", "html/template", "strings"}},
		{ImportPath: m + "/leaf", Imports: []string{"html/template"}, Deps: []string{"html/template"}},
	}
	// edit is good with change made to the packages of paths.
	edit := func(paths string, change func(*listed)) []listed {
		pkgs := slices.Clone(good)
		for i := range pkgs {
			if slices.Contains(strings.Fields(paths), pkgs[i].ImportPath) {
				change(&pkgs[i])
			}
		}
		return pkgs
	}
	tests := []struct {
		name  string
		pkgs  []listed
		rules []rule
		want  []string // each a problem's words, in order
	}{
		{name: "kept", pkgs: good},
		{name: "an import of the module the row does not allow",
			pkgs: edit(m+"/core", func(p *listed) { p.Imports = append(p.Imports, m+"/adapter") }),
			want: []string{"core imports adapter, which its row does not allow (it allows leaf): the core is plain"}},
		{name: "a guarded import the row does not name",
			pkgs: edit(m+"/core", func(p *listed) { p.Imports = append(p.Imports, "html/template") }),
			want: []string{"core imports html/template, which its row does not name: HTML only in the leaf (core: the core is plain)"}},
		{name: "a guarded module linked through the module",
			pkgs: edit(m+"/core "+m+"/leaf", func(p *listed) { p.Deps = append(p.Deps, "example.com/web/v2/sub") }),
			want: []string{
				"core links example.com/web/v2/sub through " + m + "/leaf",
				"leaf links example.com/web/v2/sub through a module outside this one (go mod why example.com/web/v2/sub), which its row does not name: the web framework only in the adapter (leaf: the leaf draws)",
			}},
		{name: "a guarded module imported",
			pkgs: edit(m+"/core", func(p *listed) {
				p.Imports, p.Deps = append(p.Imports, "example.com/web/v2"), append(p.Deps, "example.com/web/v2")
			}),
			want: []string{"core imports example.com/web/v2, which its row does not name: the web framework only in the adapter (core: the core is plain)"}},
		{name: "a package without a row",
			pkgs: append(slices.Clone(good), listed{ImportPath: m + "/new"}),
			want: []string{"new has no row in the layout"}},
		{name: "a row without a package", pkgs: good,
			rules: append(slices.Clone(rules), rule{pkg: "gone", why: "moved"}),
			want:  []string{"the layout's row of gone names no package of the module"}},
		{name: "a row allowing no package", pkgs: good,
			rules: append(slices.Clone(rules[1:]), rule{".", []string{"adapter", "adaptor"}, []string{"example.com/web"}, "typo"}),
			want:  []string{"the row of . allows adaptor, which is no package of the module"}},
		{name: "two rows of one package", pkgs: good,
			rules: append(slices.Clone(rules), rules[2]),
			want:  []string{"the layout has two rows of core"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rules == nil {
				tt.rules = rules
			}
			got := check(m, tt.pkgs, tt.rules, guards)
			if len(got) != len(tt.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d:\n%s\nwant it to say\n%s", i, got[i], want)
				}
			}
		})
	}
}
