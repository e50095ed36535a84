package catalog

import (
	"fmt"
	"testing"

	"github.com/schoolgate/schoolgate/catalog/catalogtest"
)

// BenchmarkParse parses the feed the bench's schools scenario imports into
// every new school (40 courses) and one the size of its -courses 10000.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{40, 10000} {
		raw := benchFeed(b, n)
		b.Run(fmt.Sprintf("courses=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchFeed is the bench's generated feed of n courses.
func benchFeed(tb testing.TB, n int) []byte {
	tb.Helper()
	raw, err := catalogtest.Feed(n)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}
