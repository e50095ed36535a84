package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

const testOrigin = "https://school.example"

func demoFeed(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("../demoschool/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustParse(t testing.TB, raw string) *Feed {
	t.Helper()
	f, err := Parse([]byte(raw))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

// memStore is a Persister that counts writes and can be told to fail.
type memStore struct {
	mu      sync.Mutex
	raw     []byte
	saves   int
	failErr error
}

func (s *memStore) SaveCatalog(_ context.Context, raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	s.saves++
	s.raw = append([]byte(nil), raw...)
	return nil
}

func (s *memStore) LoadCatalog(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return nil, s.failErr
	}
	return s.raw, nil
}

var errDiskFull = errors.New("disk full")

// generatedFeed builds a catalog of n courses whose words overlap the way
// a real school's do: shared subject words, a few distinctive ones.
func generatedFeed(n int) []byte {
	subjects := []string{"photography", "lighting", "portrait", "landscape", "editing", "studio", "street", "night", "wildlife", "food"}
	levels := []string{"beginner", "intermediate", "advanced"}
	people := []string{"Lena Hoffmann", "Tomás Rivera", "Priya Nair", "Jonas Berg", "Aiko Tanaka"}
	var b strings.Builder
	b.WriteString(`{"school":{"name":"Generated School"},"courses":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		s1, s2 := subjects[i%len(subjects)], subjects[(i/7)%len(subjects)]
		fmt.Fprintf(&b, `{"slug":"course-%d","title":"%s %s %d","summary":"Learn %s and %s with hands-on assignments, feedback and a final project number %d.","price":{"amount":%d,"currency":"EUR"},"lecturers":[%q],"tags":[%q,%q]}`,
			i, strings.ToUpper(s1[:1])+s1[1:], s2, i, s1, s2, i, 10+i%200, people[i%len(people)], levels[i%len(levels)], s2)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
