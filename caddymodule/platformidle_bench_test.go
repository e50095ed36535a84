package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// heapNow is the live heap after a collection.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkIdleSchoolHeap states in bytes what a school registered and
// never built costs the process at 100,000 schools: the platform's part
// (its entry in the host table and its idle school: the record, the
// hold, no store, no server), and, apart, the in-memory registry's copy
// of the record (a registry dir holds one too, a postgres registry
// none). Run with -benchtime 1x: one platform of 100,000 schools.
func BenchmarkIdleSchoolHeap(b *testing.B) {
	const n = 100_000
	rec := func(i int) registry.Record {
		return registry.Record{Issuer: fmt.Sprintf("https://s%d.example", i),
			Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}
	}
	for b.Loop() {
		before := heapNow()
		mem := registry.NewMemory(validateDirRecord)
		for i := range n {
			if _, err := mem.Put(context.Background(), rec(i)); err != nil {
				b.Fatal(err)
			}
		}
		registryHeap := heapNow() - before
		var tp *testPlatform
		beforePlatform := heapNow()
		tp = newTestPlatform(b, n+1, func(tp *testPlatform) {
			tp.reg = mem
			tp.flaky.Memory = mem
		})
		if got := tp.tables.Load().Len(); got != n {
			b.Fatalf("%d schools in the table, want %d", got, n)
		}
		platformHeap := heapNow() - beforePlatform
		b.ReportMetric(float64(platformHeap)/n, "B/idle-school")
		b.ReportMetric(float64(registryHeap)/n, "B/record-in-memory-registry")
		tp.end(b)
		runtime.KeepAlive(mem)
	}
}

// An idle school is one allocation: its record is the registry's, its
// platform.School part of it, its build state made at its first build.
func TestIdleSchoolIsOneAllocation(t *testing.T) {
	tp := newTestPlatform(t, 1)
	rec := &registry.Record{Issuer: "https://idle.example", Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}
	if n := testing.AllocsPerRun(100, func() { tp.newSchool(rec) }); n != 1 {
		t.Errorf("an idle school takes %v allocations, want 1", n)
	}
}
