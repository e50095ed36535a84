package adminapi

import (
	"cmp"
	"container/heap"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/schoolgate/schoolgate/school"
)

// A listing of a platform's schools comes a page at a time: a platform
// of 100,000 schools would otherwise answer tens of megabytes in one
// response, built and held whole. The order is stable (issuer, then the
// platform: one issuer may have a record in two registries), so a
// cursor stays good while schools are added and removed: a page starts
// right after the school its cursor names, present or not.

// schoolsListParams are the parameters a listing takes.
var schoolsListParams = []string{"platform", "limit", "after"}

// schoolsQuery is a listing's query read and checked.
type schoolsQuery struct {
	platform string
	limit    int
	after    *schoolKey
}

// schoolKey places a school in the listing's order.
type schoolKey struct{ issuer, platform string }

func (k schoolKey) compare(o schoolKey) int {
	return cmp.Or(strings.Compare(k.issuer, o.issuer), strings.Compare(k.platform, o.platform))
}

// cursor is k as an opaque string: what a client passes back, never
// reads.
func (k schoolKey) cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.issuer + "\n" + k.platform))
}

var errBadAfter = errors.New(`after is not a cursor this listing gave; start without it, then pass the answer's "next"`)

// parseAfter reads a cursor that cursor made.
func parseAfter(s string) (*schoolKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errBadAfter
	}
	issuer, platform, ok := strings.Cut(string(raw), "\n")
	if !ok || issuer == "" || platform == "" {
		return nil, errBadAfter
	}
	return &schoolKey{issuer, platform}, nil
}

// parseSchoolsQuery reads a listing's query, refusing what it would not
// use and naming the parameter at fault.
func parseSchoolsQuery(q url.Values) (schoolsQuery, error) {
	sq := schoolsQuery{platform: q.Get("platform"), limit: DefaultSchoolsPage}
	if err := OnlyParams(q, "the listing of schools", schoolsListParams...); err != nil {
		return sq, err
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxSchoolsPage {
			return sq, fmt.Errorf("limit must be a whole number from 1 to %d, not %q", MaxSchoolsPage, v[0])
		}
		sq.limit = n
	}
	if v, ok := q["after"]; ok {
		after, err := parseAfter(v[0])
		if err != nil {
			return sq, err
		}
		sq.after = after
	}
	return sq, nil
}

// listSchools answers a page of the schools of the running platforms (of
// one, with ?platform=) from the tables they serve: nothing is read from
// the registry and nothing is built. A page costs a pass over the
// tables, keeping the limit's first in a heap, and a view of those only.
func (s Schools) list(w http.ResponseWriter, r *http.Request) error {
	sq, err := parseSchoolsQuery(r.URL.Query())
	if err != nil {
		return BadRequest(err.Error())
	}
	platforms, err := s.platformsNamed(sq.platform)
	if err != nil {
		return err
	}
	// first is a max-heap of the limit+1 first schools after the cursor:
	// one more than the page tells whether another page follows.
	first := &pageHeap{}
	for _, p := range platforms {
		served, ok := p.Served()
		if !ok {
			return registryDown(w, p)
		}
		name := p.Name()
		for issuer, e := range served {
			k := schoolKey{issuer, name}
			if sq.after != nil && k.compare(*sq.after) <= 0 {
				continue
			}
			if first.Len() <= sq.limit {
				heap.Push(first, pageEntry{k, e})
			} else if k.compare(first.entries[0].key) < 0 {
				first.entries[0] = pageEntry{k, e}
				heap.Fix(first, 0)
			}
		}
	}
	entries := first.entries
	slices.SortFunc(entries, func(a, b pageEntry) int { return a.key.compare(b.key) })
	page := SchoolsPage{Schools: []SchoolView{}}
	if len(entries) > sq.limit {
		entries = entries[:sq.limit]
		page.Next = entries[len(entries)-1].key.cursor()
	}
	for _, pe := range entries {
		page.Schools = append(page.Schools, pe.school.View())
	}
	return school.WriteJSON(w, http.StatusOK, page)
}

type pageEntry struct {
	key    schoolKey
	school ServedSchool
}

// pageHeap keeps the greatest key on top, so that a smaller one replaces
// it.
type pageHeap struct{ entries []pageEntry }

func (h *pageHeap) Len() int           { return len(h.entries) }
func (h *pageHeap) Less(i, j int) bool { return h.entries[i].key.compare(h.entries[j].key) > 0 }
func (h *pageHeap) Swap(i, j int)      { h.entries[i], h.entries[j] = h.entries[j], h.entries[i] }
func (h *pageHeap) Push(x any)         { h.entries = append(h.entries, x.(pageEntry)) }
func (h *pageHeap) Pop() any {
	e := h.entries[len(h.entries)-1]
	h.entries = h.entries[:len(h.entries)-1]
	return e
}
