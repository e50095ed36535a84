package adminapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/school"
)

// CatalogRefresh answers POST /schoolgate/catalog/refresh {"issuer"}: the
// school's catalog feed imported now, and what is built from it rebuilt.
func (a API) CatalogRefresh(w http.ResponseWriter, r *http.Request) error {
	s, release, err := a.fromBody(w, r)
	if err != nil {
		return err
	}
	defer release()
	if s.CatalogFrom() == "" {
		return Error{Status: http.StatusConflict, Err: fmt.Errorf("%s has no catalog option", s.Issuer())}
	}
	err = s.ImportCatalog(r.Context())
	switch {
	case errors.Is(err, catalog.ErrNotStored):
		// The feed is fine: a 422 would send the operator to fix it.
		return s.WriteUnavailable(w, "storing the catalog", err)
	case err != nil:
		return Error{Status: http.StatusUnprocessableEntity, Err: fmt.Errorf("catalog import failed, the previous catalog keeps serving: %v", err)}
	}
	err = s.CatalogImported()
	switch {
	case school.IsStoreFailure(err):
		return s.WriteUnavailable(w, "rebuilding the documents", err)
	case err != nil:
		return Error{Status: http.StatusInternalServerError, Err: err}
	}
	return school.WriteJSON(w, http.StatusOK, map[string]any{"imported": true})
}
