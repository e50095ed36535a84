package authserver

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// formBodies are token request bodies and odd ones: repeats, escapes,
// bad escapes, semicolons, empty pairs, keys without '=', and more
// parameters than parseForm reads itself.
var formBodies = []string{
	"", "&", "&&", "=", "a", "a=", "=b", "a=1&b=2", "a=1&a=2", "a=1&a=2&b=3&a=4",
	"grant_type=authorization_code&code=sgac_x&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&client_id=app&code_verifier=v&resource=https%3A%2F%2Fs",
	"grant_type=refresh_token&refresh_token=sgrt_x&client_id=app",
	"a=b+c&d=%41%42", "a=%zz", "a%=1", "a=1;b=2", "a=1&;&b=2", "a=1&b=%&c=3", "a=1&b=2;&c=%zz",
	"a=1&&b=2&", "a==b", "%3D=%26", strings.Repeat("x=1&", 16) + "y=2", strings.Repeat("k=v&", 40),
	"resource=a&resource=b&resource=c", "é=ü", "a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13&n=14&o=15&p=16",
}

func TestParseFormMatchesParseQuery(t *testing.T) {
	for _, body := range formBodies {
		checkParseForm(t, body)
	}
}

func FuzzParseForm(f *testing.F) {
	for _, body := range formBodies {
		f.Add(body)
	}
	f.Fuzz(checkParseForm)
}

func checkParseForm(t *testing.T, body string) {
	want, wantErr := url.ParseQuery(body)
	got, err := parseForm(body)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, url.ParseQuery's %v", body, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %v\nwant %v", body, got, want)
	}
	// A key's values are its own: appending to one changes no other.
	for k := range got {
		got[k] = append(got[k], "appended")
	}
	for k, v := range got {
		if n := len(want[k]); len(v) != n+1 || !reflect.DeepEqual(v[:n], want[k]) {
			t.Fatalf("%q: %s is %v after appending, want %v then one more", body, k, v, want[k])
		}
	}
}

// formSink keeps a benchmark's form, as readForm's request does: a map
// nothing keeps could live on the stack.
var formSink url.Values

// BenchmarkParseForm compares an exchange's form read by url.ParseQuery
// and by parseForm.
func BenchmarkParseForm(b *testing.B) {
	body := formBodies[10]
	b.Run("url.ParseQuery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if formSink, err = url.ParseQuery(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parseForm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if formSink, err = parseForm(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
