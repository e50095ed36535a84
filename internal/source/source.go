// Package source reads a document that a school's configuration names by
// a file path or an http(s) URL (the catalog feed, the admin OpenAPI
// document), never more of it than its cap: one oversize file or answer
// must not fill the memory of a process that serves a thousand schools.
package source

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Doc is what is read and how much of it there may be.
type Doc struct {
	// What names the document in errors ("the catalog").
	What string
	// Max is the most bytes it may have.
	Max int64
	// UserAgent is sent with a fetch; "" sends Go's.
	UserAgent string
}

// fetchTimeout bounds a download. Reads run in the background, but an
// operator's refresh through the admin API waits for one, and a server
// that hangs must not hold a scheduler's worker forever.
const fetchTimeout = 15 * time.Second

// IsURL reports whether src is an http(s) URL rather than a file path.
func IsURL(src string) bool {
	u, err := url.Parse(src) // the scheme comes back in lower case
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Read returns the bytes at src, a file path or an http(s) URL fetched
// with client. More than d.Max bytes is an error, found without reading
// more than one byte past the cap.
func Read(ctx context.Context, client *http.Client, src string, d Doc) ([]byte, error) {
	if IsURL(src) {
		return d.fetch(ctx, client, src)
	}
	return d.readFile(src)
}

func (d Doc) fetch(ctx context.Context, client *http.Client, src string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("%s URL %s: %v", d.What, src, err)
	}
	req.Header.Set("Accept", "application/json")
	if d.UserAgent != "" {
		req.Header.Set("User-Agent", d.UserAgent)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %v", d.What, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s answered %s", d.What, src, resp.Status)
	}
	if resp.ContentLength > d.Max {
		return nil, d.tooLarge(src)
	}
	return d.readCapped(resp.Body, src)
}

func (d Doc) readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", d.What, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > d.Max {
		return nil, d.tooLarge(path)
	}
	return d.readCapped(f, path)
}

// readCapped reads one byte more than the cap, so that an oversize
// document is told from one of exactly the cap.
func (d Doc) readCapped(r io.Reader, src string) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, d.Max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %v", d.What, src, err)
	}
	if int64(len(raw)) > d.Max {
		return nil, d.tooLarge(src)
	}
	return raw, nil
}

func (d Doc) tooLarge(src string) error {
	return fmt.Errorf("%s at %s is larger than %d bytes", d.What, src, d.Max)
}
