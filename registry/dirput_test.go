package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// schoolsIn writes n schools' files into a fresh directory.
func schoolsIn(b testing.TB, n int) string {
	dir := b.TempDir()
	for i := range n {
		name := fmt.Sprintf("school%06d.example", i)
		rec := registry.Record{Issuer: "https://" + name, Hosts: []string{"www." + name},
			Config:  json.RawMessage(`{"upstream":"http://10.0.0.5:9080"}`),
			Version: 1, UpdatedAt: time.Now().UTC()}
		data, _ := json.MarshalIndent(rec, "", "\t")
		if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkDirPut measures one Put (a school changed, so the file
// exists) into a directory of 10 and of 100,000 schools: what a write
// costs beyond its own file's write, two fsyncs included.
func BenchmarkDirPut(b *testing.B) {
	for _, n := range []int{10, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := schoolsIn(b, n)
			d, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			rec := registry.Record{Issuer: "https://school000003.example", Hosts: []string{"www.school000003.example"}}
			i := 0
			for b.Loop() {
				i++
				rec.Config = json.RawMessage(fmt.Sprintf(`{"upstream":"http://10.0.0.5:%d"}`, 9000+i%1000))
				if _, err := d.Put(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// putAllocates is what one Put of a changed school allocates in a
// directory of n schools, neither notifications nor the poll running.
func putAllocates(t *testing.T, n int) uint64 {
	defer func(every time.Duration, only bool) { *registry.PollEvery, *registry.PollOnly = every, only }(*registry.PollEvery, *registry.PollOnly)
	*registry.PollEvery, *registry.PollOnly = time.Hour, true
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("school%06d.example", i)
		data := fmt.Sprintf(`{"issuer":"https://%s","hosts":["www.%s"],"config":{"upstream":"http://10.0.0.5:9080"}}`, name, name)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec := registry.Record{Issuer: "https://school000003.example", Hosts: []string{"www.school000003.example"},
		Config: json.RawMessage(`{"upstream":"http://10.0.0.5:9081"}`)}
	if _, err := d.Put(context.Background(), rec); err != nil { // the first write lists: the open's own events
		t.Fatal(err)
	}
	rec.Config = json.RawMessage(`{"upstream":"http://10.0.0.5:9082"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := d.Put(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A write into a directory of 5,000 schools neither lists the directory
// nor decides every file's host claims again: it allocates about what a
// write into ten does (a listing of 5,000 files alone allocates about
// 0.7 MB, five times the slack allowed).
func TestDirPutCostsTheSameAtAnySize(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere every write lists the directory")
	}
	small, large := putAllocates(t, 10), putAllocates(t, 5000)
	if large > small+128<<10 {
		t.Errorf("a Put allocates %d bytes among 5,000 files, %d among 10", large, small)
	}
}

// A write judges its hosts against what another process wrote a moment
// before, which no notification of this Dir's watcher has brought yet:
// the other's write is seen through the queue of the directory's events.
func TestDirPutSeesAnotherWriter(t *testing.T) {
	defer func(every time.Duration, only bool) { *registry.PollEvery, *registry.PollOnly = every, only }(*registry.PollEvery, *registry.PollOnly)
	*registry.PollEvery, *registry.PollOnly = time.Hour, true
	dir := t.TempDir()
	a, _ := openDir(t, dir, nil)
	b, _ := openDir(t, dir, nil)
	ctx := context.Background()
	put := func(d *registry.Dir, issuer string, hosts ...string) error {
		_, err := d.Put(ctx, registry.Record{Issuer: issuer, Hosts: hosts, Config: json.RawMessage(cfg)})
		return err
	}
	if err := put(a, "https://a.example"); err != nil {
		t.Fatal(err)
	}
	if err := put(b, "https://b.example", "shared.example"); err != nil {
		t.Fatal(err)
	}
	var taken *registry.HostTakenError
	if err := put(a, "https://c.example", "shared.example"); !errors.As(err, &taken) || taken.Owner != "https://b.example" {
		t.Errorf("a host the other writer took: %v", err)
	}
	// The other's removal is seen too: the host is free again.
	if err := b.Remove(ctx, "https://b.example"); err != nil {
		t.Fatal(err)
	}
	if err := put(a, "https://c.example", "shared.example"); err != nil {
		t.Errorf("a host freed by the other writer: %v", err)
	}
	// And a file written by hand, with no lock at all.
	writeFile(t, dir, "d.example.json", `{"issuer":"https://d.example","hosts":["hand.example"],"config":`+cfg+`}`)
	if err := put(a, "https://e.example", "hand.example"); !errors.As(err, &taken) || taken.Owner != "https://d.example" {
		t.Errorf("a host a file written by hand took: %v", err)
	}
}

// Deciding the claims of the files a change touches, and of those they
// share hosts with, serves what deciding the whole directory does: after
// each of many random changes by hand (hosts claimed, taken back,
// files removed), a Dir that followed them lists what a Dir opened
// afresh on the directory lists.
func TestDirClaimsDecidedByGroup(t *testing.T) {
	defer func(every time.Duration, only bool) { *registry.PollEvery, *registry.PollOnly = every, only }(*registry.PollEvery, *registry.PollOnly)
	*registry.PollEvery, *registry.PollOnly = time.Hour, true
	dir := t.TempDir()
	d, _ := openDir(t, dir, nil)
	// Two of the hosts are other files' own (a file named after its
	// issuer's host claims it without a note of the claim).
	hosts := []string{"h0.example", "h1.example", "h2.example", "h3.example", "h4.example", "h5.example", "s5.example", "s7.example"}
	seed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 300 {
		i := (step*7 + step/3) % 12
		name := fmt.Sprintf("s%d.example", i)
		if step%5 == 4 {
			os.Remove(filepath.Join(dir, name+".json"))
		} else {
			var hs []string
			for k, h := range hosts {
				if (step+k*i)%4 == 0 {
					hs = append(hs, h)
				}
			}
			raw, _ := json.Marshal(hs)
			// UpdatedAt in a few values, so that ties fall to the names.
			at := seed.Add(time.Duration((step*13)%5) * time.Minute).Format(time.RFC3339)
			writeFile(t, dir, name+".json", fmt.Sprintf(`{"issuer":"https://%s","hosts":%s,"updated_at":%q,"config":%s}`, name, raw, at, cfg))
		}
		d.Poll()
		fresh, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := fresh.List(context.Background())
		fresh.Close()
		got, _ := d.List(context.Background())
		if !sameRecords(got, want) {
			t.Fatalf("step %d: the Dir that followed serves\n%v\nafresh:\n%v", step, servedAs(got), servedAs(want))
		}
		// Each host is owned by the record served on it, as a Put
		// judges it, and no other host is.
		owned := map[string]string{}
		for _, r := range want {
			for _, h := range r.HostKeys() {
				owned[h] = r.Issuer
			}
		}
		for k := range 12 {
			owned[fmt.Sprintf("s%d.example", k)] += ""
		}
		for _, h := range hosts {
			owned[h] += ""
		}
		for h, issuer := range owned {
			if got := d.Owner(h); got != issuer {
				t.Fatalf("step %d: %s is owned by %q, want %q", step, h, got, issuer)
			}
		}
	}
}

func servedAs(rs []registry.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Issuer+fmt.Sprint(r.Hosts))
	}
	slices.Sort(out)
	return out
}

func sameRecords(a, b []registry.Record) bool { return slices.Equal(servedAs(a), servedAs(b)) }

// BenchmarkDirHeap states in bytes what a Dir holds for each school's
// file at 100,000: the file as read (its record, served), its hosts'
// owner and claimants; opened from the files, then from its snapshot.
// Run with -benchtime 1x.
func BenchmarkDirHeap(b *testing.B) {
	const n = 100_000
	dir := schoolsIn(b, n)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		before := heap()
		d, err := registry.OpenDirSnapshot(dir, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heap()-before)/n, "B/school-file")
		d.Close() // writes the snapshot
		before = heap()
		d, err = registry.OpenDirSnapshot(dir, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heap()-before)/n, "B/school-snapshot")
		d.Close()
	}
}

// BenchmarkOpenDir100k measures a server's opening of a directory of
// 100,000 schools with its snapshot (OpenDirSnapshot: the snapshot read,
// its records served); the comparison with the files that follows in
// the background is not timed. BenchmarkOpenDir100kFiles is the opening
// without one: every file listed, read and decoded.
func BenchmarkOpenDir100k(b *testing.B) {
	dir := schoolsIn(b, 100_000)
	d, err := registry.OpenDirSnapshot(dir, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	d.Close() // writes the snapshot
	for b.Loop() {
		d, err := registry.OpenDirSnapshot(dir, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got, _ := d.List(context.Background()); len(got) != 100_000 {
			b.Fatalf("%d schools served, want 100000", len(got))
		}
		d.Close()
		b.StartTimer()
	}
}

func BenchmarkOpenDir100kFiles(b *testing.B) {
	dir := schoolsIn(b, 100_000)
	for b.Loop() {
		d, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
}

// The poll's comparison of a directory where nothing changed allocates
// next to nothing for each file (Linux): it ran every few seconds at
// 100,000 files, and what it allocated the collector let the heap keep.
// A file removed is still found.
func TestDirPollAllocatesLittle(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the listing is os.ReadDir's")
	}
	defer func(every time.Duration, only bool) { *registry.PollEvery, *registry.PollOnly = every, only }(*registry.PollEvery, *registry.PollOnly)
	*registry.PollEvery, *registry.PollOnly = time.Hour, true
	const n = 2000
	dir := schoolsIn(t, n)
	d, err := registry.OpenDir(dir, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d.Poll()
	runtime.ReadMemStats(&after)
	if perFile := (after.TotalAlloc - before.TotalAlloc) / n; perFile > 64 {
		t.Errorf("a poll allocates %d bytes a file", perFile)
	}
	if err := os.Remove(filepath.Join(dir, "school000007.example.json")); err != nil {
		t.Fatal(err)
	}
	d.Poll()
	if _, err := d.Get(context.Background(), "https://school000007.example"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a removed file's school is still served: %v", err)
	}
	if got, _ := d.List(context.Background()); len(got) != n-1 {
		t.Errorf("%d schools served, want %d", len(got), n-1)
	}
}
