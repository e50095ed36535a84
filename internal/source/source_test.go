package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const max = 16

var doc = Doc{What: "the test document", Max: max, UserAgent: "source-test"}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", n)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, src, wantErr string
		want               int
	}{
		{"small", write("small", 3), "", 3},
		{"exactly the cap", write("cap", max), "", max},
		{"one byte over", write("over", max+1), "the test document at " + filepath.Join(dir, "over") + " is larger than 16 bytes", 0},
		{"missing", filepath.Join(dir, "nope"), "reading the test document: open", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := Read(context.Background(), nil, tt.src, doc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(raw) != tt.want {
				t.Fatalf("%d bytes, %v; want %d", len(raw), err, tt.want)
			}
		})
	}
}

func TestReadURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "source-test" || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "headers", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "{}")
		case "/cap":
			fmt.Fprint(w, strings.Repeat("x", max))
		case "/declared":
			w.Header().Set("Content-Length", fmt.Sprint(max+1))
			fmt.Fprint(w, strings.Repeat("x", max+1))
		case "/streamed":
			w.WriteHeader(http.StatusOK)
			for range 4 {
				fmt.Fprint(w, strings.Repeat("x", max))
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tests := []struct {
		path, wantErr string
		want          int
	}{
		{"/ok", "", 2},
		{"/cap", "", max},
		{"/declared", "is larger than 16 bytes", 0},
		{"/streamed", "is larger than 16 bytes", 0},
		{"/missing", "fetching the test document: " + srv.URL + "/missing answered 404 Not Found", 0},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			raw, err := Read(context.Background(), srv.Client(), srv.URL+tt.path, doc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(raw) != tt.want {
				t.Fatalf("%d bytes, %v; want %d", len(raw), err, tt.want)
			}
		})
	}
	if _, err := Read(context.Background(), srv.Client(), "http://127.0.0.1:1/x", doc); err == nil ||
		!strings.HasPrefix(err.Error(), "fetching the test document: ") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestIsURL(t *testing.T) {
	for src, want := range map[string]bool{
		"https://school.example/feed.json": true,
		"HTTP://school.example/feed.json":  true,
		"/srv/feed.json":                   false,
		"feed.json":                        false,
		"ftp://school.example/feed.json":   false,
		"https:///feed.json":               false,
		"C:\\feeds\\feed.json":             false,
	} {
		if got := IsURL(src); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", src, got, want)
		}
	}
}
