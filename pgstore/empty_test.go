package pgstore

import (
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestEmptyIsNotMissing: an empty catalog or setting reads back empty,
// never as the nil that means "none stored".
func TestEmptyIsNotMissing(t *testing.T) {
	ctx := testContext(t)
	s := openSite(t, pgcluster.Database(t))
	if err := s.SaveCatalog(ctx, []byte{}); err != nil {
		t.Fatal(err)
	}
	if feed, err := s.LoadCatalog(ctx); err != nil || feed == nil || len(feed) != 0 {
		t.Errorf("LoadCatalog of an empty feed = %#v, %v", feed, err)
	}
	if err := s.PutSetting(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetSetting(ctx, "k"); err != nil || v == nil || len(v) != 0 {
		t.Errorf("GetSetting of an empty value = %#v, %v", v, err)
	}
}
