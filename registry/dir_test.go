package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/registry/registrytest"
	"github.com/schoolgate/schoolgate/schooltest"
)

func TestDirConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T, validate registry.Validator) registry.Registry {
		d, _ := openDir(t, t.TempDir(), validate)
		return d
	})
}

// TestDirSnapshotConformance: a Dir that keeps a snapshot is a Registry
// as well, alone and shared.
func TestDirSnapshotConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T, validate registry.Validator) registry.Registry {
		d, _ := openSnapshotDir(t, t.TempDir(), validate)
		return d
	})
	registrytest.RunShared(t, func(t *testing.T) (registry.Registry, registry.Registry) {
		dir := t.TempDir()
		a, _ := openSnapshotDir(t, dir, nil)
		b, _ := openSnapshotDir(t, dir, nil)
		return a, b
	})
}

// TestDirShared: two Dirs on one directory, as two processes would hold
// them.
func TestDirShared(t *testing.T) {
	registrytest.RunShared(t, func(t *testing.T) (registry.Registry, registry.Registry) {
		dir := t.TempDir()
		a, _ := openDir(t, dir, nil)
		b, _ := openDir(t, dir, nil)
		return a, b
	})
}

// logs collects what a Dir logs, as JSON lines.
type logs struct{ schooltest.Buffer }

// warnings returns the warnings logged about file, by their error.
func (l *logs) warnings(file string) []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		var rec struct{ Level, File, Error string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "WARN" && rec.File == file {
			out = append(out, rec.Error)
		}
	}
	return out
}

// openDir opens a Dir on dir, closed when the test ends, and what it logs.
func openDir(t *testing.T, dir string, validate registry.Validator) (*registry.Dir, *logs) {
	t.Helper()
	l := &logs{}
	d, err := registry.OpenDir(dir, validate, slog.New(slog.NewJSONHandler(l, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, l
}

const cfg = `{"upstream": "http://127.0.0.1:9080"}`

// writeFile writes a school's file by hand, as an operator would.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// record is a school's file as an operator writes it.
func record(issuer string, hosts []string, updated string) string {
	h, _ := json.Marshal(hosts)
	s := fmt.Sprintf(`{"issuer": %q, "hosts": %s, "config": %s`, issuer, h, cfg)
	if updated != "" {
		s += fmt.Sprintf(`, "updated_at": %q`, updated)
	}
	return s + "}\n"
}

func issuers(t *testing.T, r registry.Registry) []string {
	t.Helper()
	list, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rec := range list {
		out = append(out, rec.Issuer)
	}
	slices.Sort(out)
	return out
}

// changes collects a watcher's changes.
type changes chan registry.Change

func watch(t *testing.T, r registry.Registry) changes {
	c := make(changes, 1024)
	t.Cleanup(r.Watch(func(ch registry.Change) { c <- ch }))
	return c
}

// await fails the test unless a change of issuer arrives. A Dir promises
// a second for a file written by hand (measured in BENCHMARKS.md); the
// test checks that the change comes, and allows a loaded machine ten.
func (c changes) await(t *testing.T, issuer string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-c:
			if got.Issuer == issuer {
				return
			}
		case <-deadline:
			t.Fatalf("no change of %s within 10 s", issuer)
		}
	}
}

// TestDirBadFiles: each file that is not a good record is skipped with a
// warning naming it and why, and the others are served; what is no
// school's file is ignored without a word.
func TestDirBadFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.example.json", record("https://a.example", []string{"www.a.example"}, ""))
	writeFile(t, dir, "127.0.0.1_8080.json", record("http://127.0.0.1:8080", nil, ""))
	bad := []struct{ name, content, why string }{
		{"broken.example.json", `{"issuer": "https://broken.example", `, "not a school record"},
		{"empty.example.json", ``, "not a school record"},
		{"typo.example.json", `{"issuer": "https://typo.example", "host": ["www.typo.example"], "config": {}}`, `unknown field "host"`},
		{"two.example.json", record("https://two.example", nil, "") + record("https://two.example", nil, ""), "more follows"},
		{"misnamed.example.json", record("https://other.example", nil, ""), "must be named other.example.json"},
		{"School.Example.json", record("https://school.example", nil, ""), "must be named school.example.json"},
		{"path.example.json", record("https://path.example/x", nil, ""), "issuer:"},
		{"array.example.json", `{"issuer": "https://array.example", "config": [1]}`, "config:"},
		{"refused.example.json", record("https://refused.example", nil, ""), "refused by the validator"},
		{"c.example.json", record("https://c.example", []string{"www.a.example"}, ""), "www.a.example is a host of https://a.example"},
	}
	for _, b := range bad {
		writeFile(t, dir, b.name, b.content)
	}
	ignored := []string{"notes.txt", ".hidden.json", "a.example.json.bak", ".a.example.json.123.tmp"}
	for _, name := range ignored {
		writeFile(t, dir, name, "not json")
	}
	if err := os.Mkdir(filepath.Join(dir, "d.example.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	// c.example.json's claim on www.a.example is younger than a's.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.example.json"), old, old); err != nil {
		t.Fatal(err)
	}
	d, l := openDir(t, dir, func(r *registry.Record) error {
		if r.Issuer == "https://refused.example" {
			return errors.New("school_gateway: refused by the validator")
		}
		return nil
	})
	if got := issuers(t, d); !slices.Equal(got, []string{"http://127.0.0.1:8080", "https://a.example"}) {
		t.Errorf("List = %v; want the two good files' schools", got)
	}
	for _, b := range bad {
		warned := l.warnings(filepath.Join(dir, b.name))
		if len(warned) != 1 || !strings.Contains(warned[0], b.why) {
			t.Errorf("%s: warnings %q; want one saying %q", b.name, warned, b.why)
		}
	}
	for _, name := range append(ignored, "d.example.json", "a.example.json") {
		if warned := l.warnings(filepath.Join(dir, name)); len(warned) > 0 {
			t.Errorf("%s: warned %q", name, warned)
		}
	}
	// A poll that finds nothing changed repeats no warning.
	d.Poll()
	if warned := l.warnings(filepath.Join(dir, "broken.example.json")); len(warned) != 1 {
		t.Errorf("after a poll, broken.example.json was warned of %d times", len(warned))
	}
}

// TestDirHandWritten: a file written by hand is a school within a second,
// one rewritten in place a changed school, one removed no school; a file
// without updated_at takes its modification time.
func TestDirHandWritten(t *testing.T) {
	for _, mode := range []struct {
		name  string
		every time.Duration
		only  bool
	}{
		{"notified", time.Hour, false},
		{"polled", 100 * time.Millisecond, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			defer func(every time.Duration, only bool) { *registry.PollEvery, *registry.PollOnly = every, only }(*registry.PollEvery, *registry.PollOnly)
			*registry.PollEvery, *registry.PollOnly = mode.every, mode.only
			dir := t.TempDir()
			d, _ := openDir(t, dir, nil)
			seen := watch(t, d)
			writeFile(t, dir, "school.example.json", record("https://School.Example", []string{"WWW.school.example"}, ""))
			seen.await(t, "https://school.example")
			got, err := d.Get(context.Background(), "https://school.example")
			info, _ := os.Stat(filepath.Join(dir, "school.example.json"))
			if err != nil || !slices.Equal(got.Hosts, []string{"www.school.example"}) || got.Version != 0 || !got.UpdatedAt.Equal(info.ModTime()) {
				t.Errorf("Get = %+v, %v; want the hand-written record, version 0, updated at the file's time", got, err)
			}
			// In place, the same size: only the content tells.
			writeFile(t, dir, "school.example.json", record("https://School.Example", []string{"WWW.school.exampl2"}, ""))
			seen.await(t, "https://school.example")
			if got, err := d.Get(context.Background(), "https://school.example"); err != nil || got.Hosts[0] != "www.school.exampl2" {
				t.Errorf("after an edit in place, Get = %+v, %v", got, err)
			}
			if err := os.Remove(filepath.Join(dir, "school.example.json")); err != nil {
				t.Fatal(err)
			}
			seen.await(t, "https://school.example")
			if _, err := d.Get(context.Background(), "https://school.example"); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("after the file's removal, Get = %v", err)
			}
		})
	}
}

// TestDirRenamedFile: a school's file renamed to another school's name is
// refused: the school whose file it was is gone, and so is the school
// whose file it replaced.
func TestDirRenamedFile(t *testing.T) {
	dir := t.TempDir()
	d, l := openDir(t, dir, nil)
	ctx := context.Background()
	for _, issuer := range []string{"https://a.example", "https://b.example", "https://c.example"} {
		if _, err := d.Put(ctx, registry.Record{Issuer: issuer, Config: json.RawMessage(cfg)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := watch(t, d)
	if err := os.Rename(filepath.Join(dir, "a.example.json"), filepath.Join(dir, "b.example.json")); err != nil {
		t.Fatal(err)
	}
	seen.await(t, "https://a.example")
	seen.await(t, "https://b.example")
	if got := issuers(t, d); !slices.Equal(got, []string{"https://c.example"}) {
		t.Errorf("List = %v; want c alone", got)
	}
	if w := l.warnings(filepath.Join(dir, "b.example.json")); len(w) != 1 || !strings.Contains(w[0], "must be named a.example.json") {
		t.Errorf("warnings of b.example.json: %q", w)
	}
	if err := os.Rename(filepath.Join(dir, "c.example.json"), filepath.Join(dir, "new.example.json")); err != nil {
		t.Fatal(err)
	}
	seen.await(t, "https://c.example")
	if got := issuers(t, d); len(got) != 0 {
		t.Errorf("List = %v; want none", got)
	}
}

// TestDirHostClaims: of two files claiming a host, the older claim is
// served and the other skipped with a warning; once the older is gone,
// the other is served. Equal times go by file name.
func TestDirHostClaims(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.example.json", record("https://b.example", []string{"www.shared.example"}, "2026-01-01T00:00:00Z"))
	writeFile(t, dir, "a.example.json", record("https://a.example", []string{"www.shared.example"}, "2026-02-01T00:00:00Z"))
	writeFile(t, dir, "d.example.json", record("https://d.example", []string{"x.example"}, "2026-03-01T00:00:00Z"))
	writeFile(t, dir, "c.example.json", record("https://c.example", []string{"x.example"}, "2026-03-01T00:00:00Z"))
	d, l := openDir(t, dir, nil)
	if got := issuers(t, d); !slices.Equal(got, []string{"https://b.example", "https://c.example"}) {
		t.Errorf("List = %v; want b (older) and c (first by name)", got)
	}
	for file, owner := range map[string]string{"a.example.json": "https://b.example", "d.example.json": "https://c.example"} {
		if w := l.warnings(filepath.Join(dir, file)); len(w) != 1 || !strings.Contains(w[0], "a host of "+owner) {
			t.Errorf("warnings of %s: %q; want one naming %s", file, w, owner)
		}
	}
	_, err := d.Put(context.Background(), registry.Record{Issuer: "https://e.example", Hosts: []string{"www.shared.example"}, Config: json.RawMessage(cfg)})
	var taken *registry.HostTakenError
	if !errors.As(err, &taken) || taken.Owner != "https://b.example" {
		t.Errorf("Put of the shared host = %v; want it b's", err)
	}
	seen := watch(t, d)
	if err := os.Remove(filepath.Join(dir, "b.example.json")); err != nil {
		t.Fatal(err)
	}
	seen.await(t, "https://a.example")
	if got := issuers(t, d); !slices.Equal(got, []string{"https://a.example", "https://c.example"}) {
		t.Errorf("after b's removal, List = %v; want a and c", got)
	}
}

// TestDirPutRevivesOlderClaim: a replacement that frees a host another
// file claimed first makes that file served, and so is refused if it
// takes a host of that file: the older claim wins. Nothing is written.
func TestDirPutRevivesOlderClaim(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.example.json", record("https://a.example", []string{"g.example"}, "2026-01-01T00:00:00Z"))
	writeFile(t, dir, "s.example.json", record("https://s.example", []string{"g.example", "h.example"}, "2026-02-01T00:00:00Z"))
	d, _ := openDir(t, dir, nil)
	before, _ := os.ReadFile(filepath.Join(dir, "a.example.json"))
	_, err := d.Put(context.Background(), registry.Record{Issuer: "https://a.example", Hosts: []string{"h.example"}, Config: json.RawMessage(cfg)})
	var taken *registry.HostTakenError
	if !errors.As(err, &taken) || taken.Host != "h.example" || taken.Owner != "https://s.example" {
		t.Errorf("Put = %v; want h.example refused as s's", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "a.example.json")); !bytes.Equal(before, after) {
		t.Errorf("the refused Put wrote a.example.json: %s", after)
	}
	if got := issuers(t, d); !slices.Equal(got, []string{"https://a.example"}) {
		t.Errorf("List = %v; want a alone", got)
	}
	// The same holds for a replacement that keeps its hosts: written, its
	// claim on g.example would be younger than s's.
	_, err = d.Put(context.Background(), registry.Record{Issuer: "https://a.example", Hosts: []string{"g.example"}, Config: json.RawMessage(cfg)})
	if !errors.As(err, &taken) || taken.Host != "g.example" || taken.Owner != "https://s.example" {
		t.Errorf("Put keeping g.example = %v; want it refused as s's", err)
	}
}

// TestDirFile: Put writes the file operators read, named after the
// issuer's host as the data directory is, and a Dir opened on it later
// reads the record as Put returned it.
func TestDirFile(t *testing.T) {
	dir := t.TempDir()
	d, _ := openDir(t, dir, nil)
	ctx := context.Background()
	for _, tt := range []struct{ issuer, name string }{
		{"HTTPS://School.Example:443/", "school.example"},
		{"http://127.0.0.1:8080", "127.0.0.1_8080"},
		{"https://[::1]:8443", "__1_8443"},
	} {
		if got := d.DataDir(tt.issuer); got != filepath.Join(dir, tt.name) {
			t.Errorf("DataDir(%s) = %s, want %s", tt.issuer, got, filepath.Join(dir, tt.name))
		}
		stored, err := d.Put(ctx, registry.Record{Issuer: tt.issuer, Hosts: []string{"alias-" + tt.name + ".example"},
			Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9080","rules":[]}`)})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, tt.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var file map[string]any
		if err := json.Unmarshal(data, &file); err != nil || file["issuer"] != stored.Issuer || file["version"] != 1.0 {
			t.Errorf("%s.json = %s (%v)", tt.name, data, err)
		}
		if !bytes.Contains(data, stored.Config) {
			t.Errorf("Put returned the configuration %s, which %s.json does not spell so: %s", stored.Config, tt.name, data)
		}
	}
	if got := d.DataDir("not an origin"); got != "" {
		t.Errorf("DataDir of no origin = %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("the directory holds %d entries, want the 3 files and no temporary one", len(entries))
	}
	want, _ := d.List(ctx)
	again, _ := openDir(t, dir, nil)
	for _, w := range want {
		got, err := again.Get(ctx, w.Issuer)
		if err != nil || !registry.SameRecord(&got, &w) || got.Version != w.Version || !got.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("read again, %s = %+v, %v; want %+v", w.Issuer, got, err, w)
		}
	}
}

// TestDirUnreadableKeepsSchools: a directory that cannot be read (gone,
// here) keeps its schools served as last read, with one warning however
// many polls fail.
func TestDirUnreadableKeepsSchools(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "schools")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "school.example.json", record("https://school.example", nil, ""))
	d, l := openDir(t, dir, nil)
	if err := os.Rename(dir, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	d.Poll()
	d.Poll()
	if got := issuers(t, d); !slices.Equal(got, []string{"https://school.example"}) {
		t.Errorf("List = %v; want the school as last read", got)
	}
	if logged := l.String(); strings.Count(logged, "cannot be read") != 1 {
		t.Errorf("%d warnings that the directory cannot be read, want 1:\n%s", strings.Count(logged, "cannot be read"), logged)
	}
}

// TestDirPutOverBadFile: Put replaces a school's file that was skipped,
// and counts from 1.
func TestDirPutOverBadFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "school.example.json", `{"issuer": `)
	d, _ := openDir(t, dir, nil)
	got, err := d.Put(context.Background(), registry.Record{Issuer: "https://school.example", Config: json.RawMessage(cfg)})
	if err != nil || got.Version != 1 {
		t.Fatalf("Put = %+v, %v", got, err)
	}
}

// TestOpenDirRefused: a directory that is missing or not a directory
// fails the open.
func TestOpenDirRefused(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "file", "")
	for _, path := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "file")} {
		if d, err := registry.OpenDir(path, nil, nil); err == nil {
			d.Close()
			t.Errorf("OpenDir(%s) succeeded", path)
		}
	}
}

// schools10k writes 10,000 schools' files into a fresh directory.
func schools10k(b *testing.B) string {
	dir := b.TempDir()
	for i := range 10000 {
		name := fmt.Sprintf("school%05d.example", i)
		rec := registry.Record{Issuer: "https://" + name, Hosts: []string{"www." + name},
			Config:    json.RawMessage(`{"upstream":"http://10.0.0.5:9080","catalog":"https://` + name + `/feed.json","rules":[{"path":"/account/*","audience":"member"}]}`),
			Version:   1,
			UpdatedAt: time.Now().UTC()}
		data, _ := json.MarshalIndent(rec, "", "\t")
		if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkOpenDir10k measures opening a directory of 10,000 schools:
// listing, reading, parsing and checking every file (no Validator).
func BenchmarkOpenDir10k(b *testing.B) {
	dir := schools10k(b)
	for b.Loop() {
		d, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}

// BenchmarkPollDir10k measures one poll of 10,000 unchanged schools'
// files: listing the directory and comparing each file's stat.
func BenchmarkPollDir10k(b *testing.B) {
	dir := schools10k(b)
	d, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for b.Loop() {
		d.Poll()
	}
}

// A school's file may be a symbolic link, which is followed, its
// target's changes seen by the poll; a dangling link and a directory
// named as a school's file are no school.
func TestDirLinksAndDirectories(t *testing.T) {
	defer func(every time.Duration, only bool) { *registry.PollEvery, *registry.PollOnly = every, only }(*registry.PollEvery, *registry.PollOnly)
	*registry.PollEvery, *registry.PollOnly = time.Hour, true
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeFile(t, elsewhere, "a.json", record("https://a.example", nil, "2026-01-01T00:00:00Z"))
	if err := os.Symlink(filepath.Join(elsewhere, "a.json"), filepath.Join(dir, "a.example.json")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "none.json"), filepath.Join(dir, "b.example.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "c.example.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "d.example.json", record("https://d.example", nil, ""))
	d, _ := openDir(t, dir, nil)
	if got := issuers(t, d); !slices.Equal(got, []string{"https://a.example", "https://d.example"}) {
		t.Fatalf("List = %v; want a (through its link) and d", got)
	}
	// The link's target changes (a larger file, a new modification
	// time): the poll reads it through the link.
	time.Sleep(10 * time.Millisecond)
	writeFile(t, elsewhere, "a.json", record("https://a.example", []string{"www.a.example"}, "2026-01-01T00:00:00Z"))
	d.Poll()
	if r, err := d.Get(context.Background(), "https://a.example"); err != nil || !slices.Equal(r.Hosts, []string{"www.a.example"}) {
		t.Errorf("after the target changed: %v, %v; want its new hosts", r.Hosts, err)
	}
	// The dangling link's target appears: the school is served.
	writeFile(t, elsewhere, "none.json", record("https://b.example", nil, ""))
	d.Poll()
	if got := issuers(t, d); !slices.Equal(got, []string{"https://a.example", "https://b.example", "https://d.example"}) {
		t.Errorf("List = %v; want b served once its link points at a file", got)
	}
}
