package adminapi

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// plainRegistry hides a registry's Conditional methods: a registry that
// cannot make a write conditional in the write itself.
type plainRegistry struct{ registry.Registry }

// if_version is refused, not checked apart from the write, for a
// registry that cannot make the write conditional: a check on this
// instance would not hold between a platform's instances.
func TestConditionalWriteNeedsTheRegistry(t *testing.T) {
	reg := plainRegistry{registry.NewMemory(nil)}
	rec := registry.Record{Issuer: "https://a.example", Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}
	zero := int64(0)
	if _, err := PutRecord(t.Context(), reg, rec, &zero); !errors.Is(err, ErrNotConditional) {
		t.Errorf("a conditional put: %v, want ErrNotConditional", err)
	}
	if err := removeRecord(t.Context(), reg, rec.Issuer, &zero); !errors.Is(err, ErrNotConditional) {
		t.Errorf("a conditional remove: %v, want ErrNotConditional", err)
	}
	if _, err := PutRecord(t.Context(), reg, rec, nil); err != nil {
		t.Errorf("an unconditional put: %v", err)
	}
}
