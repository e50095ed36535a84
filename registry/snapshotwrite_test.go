package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSnapshotWrite100k measures the writing of the snapshot of
// 100,000 schools (the bench's one-vendor configuration) to a file, as
// the background writes it after a change.
func BenchmarkSnapshotWrite100k(b *testing.B) {
	const n = 100_000
	cfg := json.RawMessage(`{"rate_limits":{"off":true},"upstream":"http://127.0.0.1:40000","vendors":[{"audience":"member","client_id":"bench-agent","name":"Bench Agent","redirect_uris":["http://127.0.0.1:1/callback"],"scopes":["openid","profile","courses.read"]}]}`)
	now := time.Now().UTC()
	files := make([]snapshotEntry, n)
	for i := range files {
		files[i] = snapshotEntry{name: fmt.Sprintf("s%d.localhost_8080.json", i), f: &dirFile{
			stat: fileStat{size: 400, mtime: now.UnixNano(), id: uint64(i)},
			rec:  Record{Issuer: fmt.Sprintf("http://s%d.localhost:8080", i), Config: cfg, Version: 1, UpdatedAt: now}}}
	}
	path := filepath.Join(b.TempDir(), snapshotName)
	b.ReportAllocs()
	for b.Loop() {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := writeSnapshot(f, "exe", files); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.StopTimer()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, got, err := decodeSnapshot(data); err != nil || len(got) != n {
		b.Fatalf("the snapshot written: %d files, %v", len(got), err)
	}
}
