package caddymodule

import (
	"testing"
	"unsafe"
)

// An idle school is one allocation of 96 bytes at most, the size class
// below 112: 100,000 of them are held at once.
func TestPlatformSchoolSize(t *testing.T) {
	if size := unsafe.Sizeof(platformSchool{}); size > 96 {
		t.Errorf("an idle platform school is %d bytes, want 96 at most", size)
	}
}
