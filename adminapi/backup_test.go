package adminapi

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// copyless is a store that cannot copy itself, as a PostgreSQL school's.
type copyless struct{ store.Store }

// A school whose store cannot copy itself is refused, naming the
// database's own backups.
func TestBackupOfADatabase(t *testing.T) {
	_, err := backupStore(t.Context(), "https://school.example", copyless{}, filepath.Join(t.TempDir(), "pg.db"))
	var refused Error
	if !errors.As(err, &refused) || refused.Status != http.StatusConflict || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("a store that cannot copy itself: %v", err)
	}
}
