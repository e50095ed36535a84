package registry_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// rewriteInPlace gives the file name another content of the same length
// and puts its modification time back: its stat (size, time, inode) is
// what it was, so only a reading of the file finds the change.
func rewriteInPlace(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(content)) != info.Size() {
		t.Fatalf("the new content has %d bytes, the file %d", len(content), info.Size())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// closeAndSnapshot opens dir, lets the Dir write its snapshot, and closes
// it.
func closeAndSnapshot(t *testing.T, dir string, validate registry.Validator) {
	t.Helper()
	d, err := registry.OpenDirSnapshot(dir, validate, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := os.Stat(filepath.Join(dir, registry.SnapshotName)); err != nil {
		t.Fatalf("no snapshot after Close: %v", err)
	}
}

// hosts is the hosts a Dir serves for issuer, "" when it serves none.
func hostsOf(t *testing.T, d *registry.Dir, issuer string) string {
	t.Helper()
	r, err := d.Get(context.Background(), issuer)
	if err != nil {
		return ""
	}
	if len(r.Hosts) == 0 {
		return "-"
	}
	return r.Hosts[0]
}

// eventually waits for cond, up to 20 s: the background work it waits
// for takes well under a second, but not always on a loaded machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20 s: %s", what)
		}
	}
}

// TestDirSnapshot: a Dir opened on a directory with a snapshot serves the
// snapshot's records (a file changed without a change of stat is not
// read), then compares the directory with it in the background, so that
// files changed, added or removed while no Dir ran win.
func TestDirSnapshot(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.example.json", record("https://a.example", []string{"www1.a.example"}, ""))
	writeFile(t, dir, "b.example.json", record("https://b.example", nil, ""))
	writeFile(t, dir, "c.example.json", record("https://c.example", nil, ""))
	closeAndSnapshot(t, dir, nil)

	rewriteInPlace(t, dir, "a.example.json", record("https://a.example", []string{"www2.a.example"}, ""))
	writeFile(t, dir, "b.example.json", record("https://b.example", []string{"www.b.example"}, ""))
	os.Remove(filepath.Join(dir, "c.example.json"))
	writeFile(t, dir, "d.example.json", record("https://d.example", nil, ""))

	d, _ := openSnapshotDir(t, dir, nil)
	if got := hostsOf(t, d, "https://a.example"); got != "www1.a.example" {
		t.Errorf("a.example served with %q at the opening, want the snapshot's www1.a.example", got)
	}
	eventually(t, "the files changed meanwhile served", func() bool {
		return hostsOf(t, d, "https://b.example") == "www.b.example" && hostsOf(t, d, "https://c.example") == "" &&
			hostsOf(t, d, "https://d.example") == "-"
	})
	// A file whose stat is the snapshot's is not read again.
	if got := hostsOf(t, d, "https://a.example"); got != "www1.a.example" {
		t.Errorf("a.example served with %q, want the snapshot's www1.a.example", got)
	}
}

// TestDirSnapshotIgnored: a damaged snapshot is ignored, and so is none:
// the files are read.
func TestDirSnapshotDamaged(t *testing.T) {
	for _, damage := range []func(data []byte) []byte{
		func(data []byte) []byte { data[len(data)/2] ^= 1; return data },
		func(data []byte) []byte { return data[:len(data)-1] },
		func(data []byte) []byte { return nil },
	} {
		dir := t.TempDir()
		writeFile(t, dir, "a.example.json", record("https://a.example", []string{"www1.a.example"}, ""))
		closeAndSnapshot(t, dir, nil)
		rewriteInPlace(t, dir, "a.example.json", record("https://a.example", []string{"www2.a.example"}, ""))
		path := filepath.Join(dir, registry.SnapshotName)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, damage(data), 0o600); err != nil {
			t.Fatal(err)
		}
		d, l := openSnapshotDir(t, dir, nil)
		if got := hostsOf(t, d, "https://a.example"); got != "www2.a.example" {
			t.Errorf("a.example served with %q, want the file's www2.a.example (logged: %s)", got, l.String())
		}
	}
}

// TestDirSnapshotOtherExecutable: the records of a snapshot written by
// another executable are served, then every file is read again and
// checked with this one's Validator.
func TestDirSnapshotOtherExecutable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.example.json", record("https://a.example", []string{"www1.a.example"}, ""))
	closeAndSnapshot(t, dir, func(*registry.Record) error { return nil })
	rewriteInPlace(t, dir, "a.example.json", record("https://a.example", []string{"www2.a.example"}, ""))

	was := *registry.Executable
	*registry.Executable = func() string { return "an upgrade" }
	t.Cleanup(func() { *registry.Executable = was })
	d, _ := openSnapshotDir(t, dir, func(*registry.Record) error { return nil })
	eventually(t, "the file read again", func() bool { return hostsOf(t, d, "https://a.example") == "www2.a.example" })
}

// openSnapshotDir is openDir with the snapshot.
func openSnapshotDir(t *testing.T, dir string, validate registry.Validator) (*registry.Dir, *logs) {
	t.Helper()
	// A quarter of a second's poll (and so snapshot writes): the tests
	// wait for them, and read what they check right after opening.
	every := *registry.PollEvery
	*registry.PollEvery = 250 * time.Millisecond
	t.Cleanup(func() { *registry.PollEvery = every })
	l := &logs{}
	d, err := registry.OpenDirSnapshot(dir, validate, slog.New(slog.NewJSONHandler(l, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, l
}

// TestDirSnapshotClaims: host claims are decided at the opening from a
// snapshot as from the files: of two files claiming one host, the older
// claim is served.
func TestDirSnapshotClaims(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.example.json", record("https://a.example", []string{"www.example"}, "2026-01-02T00:00:00Z"))
	writeFile(t, dir, "b.example.json", record("https://b.example", []string{"www.example"}, "2026-01-01T00:00:00Z"))
	writeFile(t, dir, "c.example.json", record("https://c.example", nil, ""))
	closeAndSnapshot(t, dir, nil)
	d, _ := openSnapshotDir(t, dir, nil)
	if got := issuers(t, d); !slices.Equal(got, []string{"https://b.example", "https://c.example"}) {
		t.Errorf("served %v, want b.example (the older claim of www.example) and c.example", got)
	}
	if err := d.Remove(context.Background(), "https://b.example"); err != nil {
		t.Fatal(err)
	}
	if got := issuers(t, d); !slices.Equal(got, []string{"https://a.example", "https://c.example"}) {
		t.Errorf("served %v after b.example's removal, want a.example and c.example", got)
	}
}

// TestDirSnapshotWrittenAfterChange: a change is in the snapshot within
// seconds, without waiting for Close.
func TestDirSnapshotWrittenAfterChange(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.example.json", record("https://b.example", nil, ""))
	d, _ := openSnapshotDir(t, dir, nil)
	path := filepath.Join(dir, registry.SnapshotName)
	eventually(t, "the first snapshot written", func() bool { _, err := os.Stat(path); return err == nil })
	first, _ := os.Stat(path)
	rec, err := d.Put(context.Background(), registry.Record{Issuer: "https://a.example", Hosts: []string{"www1.a.example"},
		Config: []byte(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the snapshot written again", func() bool {
		info, err := os.Stat(path)
		return err == nil && !os.SameFile(info, first)
	})
	// The file changed without a change of stat: a Dir opened now (the
	// first still open, so Close writes nothing) serves the snapshot's.
	data, err := os.ReadFile(filepath.Join(dir, "a.example.json"))
	if err != nil {
		t.Fatal(err)
	}
	changed := []byte(string(data))
	copy(changed[bytes.Index(changed, []byte("www1")):], "www2")
	rewriteInPlace(t, dir, "a.example.json", string(changed))
	again, _ := openSnapshotDir(t, dir, nil)
	if got := hostsOf(t, again, rec.Issuer); got != "www1.a.example" {
		t.Errorf("a.example served with %q from the snapshot, want www1.a.example", got)
	}
}
