package jsonappend

import (
	"encoding/json"
	"testing"
)

// String writes what encoding/json writes, for plain and odd strings.
func TestStringIsEncodingJSONs(t *testing.T) {
	for _, s := range []string{"", "plain", "https://school.example/a?b=c", `quote " and \ back`,
		"<script>&amp;", "tab\tnew\nline", "\x00\x1f", "é ü 日本", "\u2028\u2029", "bad \xff utf-8", "\x7f"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := String([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("%q: %s, want %s", s, got[1:], want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("plain")
	f.Add("<\"\\\xff>")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	})
}
