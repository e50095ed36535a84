package storetest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/authserver/storetest"
)

func TestBoltConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) authserver.Store {
		s, err := authserver.OpenBolt(filepath.Join(t.TempDir(), "school.db"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
