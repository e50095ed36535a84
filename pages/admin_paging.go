package pages

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

// The overview's lists are paged, each on its own: a list's page is the
// query parameter <list>_page (1 when absent), and a page's links keep
// the other lists where they are. Numbered pages suit these lists, which
// are read whole and sorted in memory (clients are few: registrations
// are capped), unlike the grants, which are paged by a store cursor.

// defaultAdminPageSize is how many rows a list shows a page.
const defaultAdminPageSize = 50

// listPager is the overview request's pages, and how many rows a page has.
type listPager struct {
	query url.Values
	size  int
}

func newListPager(q url.Values, size int) listPager {
	return listPager{query: q, size: max(size, 1)}
}

// pager is where a page is in its list, with links to its neighbours.
type pager struct {
	// List names the list, for the links' ids.
	List        string
	Page, Pages int
	Prev, Next  string
}

// badPage is a page parameter that names no page of its list.
type badPage struct{ value string }

// paginate is the page of list that p asks for under name.
func paginate[T any](p listPager, name string, list []T) ([]T, pager, *badPage) {
	pages := max((len(list)+p.size-1)/p.size, 1)
	page := 1
	if raw := p.query.Get(name + "_page"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			if len(raw) > 20 {
				raw = raw[:20] + "…"
			}
			return nil, pager{}, &badPage{strconv.Quote(raw)}
		}
		// A page past the end is a link from before rows went away (a
		// deletion, a disconnection): it shows the last page, rather
		// than refusing the whole overview for one list grown shorter.
		page = min(n, pages)
	}
	pg := pager{List: name, Page: page, Pages: pages}
	if page > 1 {
		pg.Prev = p.link(name, page-1)
	}
	if page < pages {
		pg.Next = p.link(name, page+1)
	}
	start := (page - 1) * p.size
	return list[start:min(start+p.size, len(list))], pg, nil
}

// link is the overview with the list name at page, the other lists
// where they are, scrolled to the list.
func (p listPager) link(name string, page int) string {
	q := url.Values{}
	for _, l := range []string{"connected", "apps", "metadata", "loopback"} {
		if v := p.query.Get(l + "_page"); v != "" && l != name {
			q.Set(l+"_page", v)
		}
	}
	if page > 1 {
		q.Set(name+"_page", strconv.Itoa(page))
	}
	link := sitepath.AdminApplications
	if len(q) > 0 {
		link += "?" + q.Encode()
	}
	return link + "#" + name + "-heading"
}

// metadataRow is a metadata-document client with how many people are
// connected to it.
type metadataRow struct {
	authserver.ClientInfo
	People int
}

// metadataByUse is the metadata-document clients, most connected people
// first, then by name.
func metadataByUse(clients []authserver.ClientInfo, connected []authserver.ConnectedApp) []metadataRow {
	people := make(map[string]int, len(connected))
	for _, c := range connected {
		people[c.ClientID] = c.People
	}
	rows := make([]metadataRow, len(clients))
	for i, c := range clients {
		rows[i] = metadataRow{ClientInfo: c, People: people[c.ClientID]}
	}
	slices.SortStableFunc(rows, func(a, b metadataRow) int {
		return cmp.Or(cmp.Compare(b.People, a.People), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.ClientID, b.ClientID))
	})
	return rows
}
