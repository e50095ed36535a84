package admission

import (
	"context"
	"testing"
)

// BenchmarkAdmitLone is what a request pays while its school is alone on
// the instance: the fast path, taken and given back at once.
func BenchmarkAdmitLone(b *testing.B) {
	g := NewGate(Options{})
	s := g.School(1)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sl, err := s.Admit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sl.Release()
		}
	})
}

// BenchmarkAdmitShared is the same while two schools share the instance
// with no overhead measured yet: slots free, nobody waiting.
func BenchmarkAdmitShared(b *testing.B) {
	g := sharedGate(Options{Concurrency: 1 << 20})
	schools := []*School{g.School(1), g.School(1)}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			sl, err := schools[i&1].Admit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sl.Release()
		}
	})
}

// BenchmarkAdmitSharedCooling is a shared instance with the overhead
// measured: every release goes through the lock to cool its slot.
func BenchmarkAdmitSharedCooling(b *testing.B) {
	g := sharedGate(Options{Concurrency: 1 << 20})
	g.cost.ns.Store(1)
	schools := []*School{g.School(1), g.School(1)}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			sl, err := schools[i&1].Admit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sl.Release()
		}
	})
}
