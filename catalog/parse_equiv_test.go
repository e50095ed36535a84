package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestParseMatchesOldParse checks that Parse returns exactly what the
// decoder before it returned (oldParse): the same feed, down to nil and
// empty lists and the bytes of every extra value, or the same error.
func TestParseMatchesOldParse(t *testing.T) {
	for name, raw := range equivalenceInputs(t) {
		t.Run(name, func(t *testing.T) { checkSameParse(t, raw) })
	}
}

func checkSameParse(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := Parse(raw)
	want, wantErr := oldParse(raw)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("error %v, want %v\ninput %q", gotErr, wantErr, raw)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("feed\n%#v\nwant\n%#v\ninput %q", got, want, raw)
	}
	// Feed's UnmarshalJSON decodes as Parse does, without Validate.
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) && json.Valid(raw) {
		var f Feed
		gotErr := json.Unmarshal(raw, &f)
		want, wantErr := oldFeed(bytes.TrimSpace(raw))
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("UnmarshalJSON: error %v, want %v\ninput %q", gotErr, wantErr, raw)
		}
		if gotErr == nil && !reflect.DeepEqual(&f, want) {
			t.Fatalf("UnmarshalJSON: feed\n%#v\nwant\n%#v\ninput %q", &f, want, raw)
		}
	}
}

// equivalenceInputs gathers the feeds of testdata, the demo school's, the
// bench's, the FuzzParse corpus, the refusal cases of parse_test.go and
// the odd shapes below, which take the decoder off its fast paths.
func equivalenceInputs(t *testing.T) map[string][]byte {
	in := map[string][]byte{
		"demo":  demoFeed(t),
		"bench": benchFeed(t, 40),
	}
	files, _ := filepath.Glob("testdata/*/*.json")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in[f] = raw
	}
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzParse/*")
	for _, f := range corpus {
		in[f] = readFuzzBytes(t, f)
	}
	for _, c := range parseRejectCases {
		in["reject/"+c.name] = []byte(c.raw)
	}
	const school = `"school":{"name":"S"}`
	course := func(fields string) string { return `{` + school + `,"courses":[{` + fields + `}]}` }
	odd := map[string]string{
		"duplicate field, last wins":      course(`"slug":"a","title":5,"title":"T"`),
		"duplicate field, last is wrong":  course(`"slug":"a","title":"T","title":5`),
		"duplicate field, last is null":   course(`"slug":"a","title":"T","title":null,"title":"U","summary":"s","summary":null`),
		"duplicate list":                  `{` + school + `,"courses":[{"slug":"a","title":"A"}],"courses":[]}`,
		"duplicate extra":                 course(`"slug":"a","title":"T","x":1,"x":[2]`),
		"escaped keys":                    `{"sch\u006fol":{"n\u0061me":"S"},"courses":[{"sl\u0075g":"a","title":"A","\u0074ags":["x"],"l\u00e9vel":"\u00e9"}]}`,
		"escaped values":                  course(`"slug":"a","title":"Food \u0026 Drink \"quoted\" \ud83d\ude00 \ud800","summary":"line\nbreak"`),
		"invalid utf-8":                   course("\"slug\":\"a\",\"title\":\"caf\xe9\",\"x\xff\":\"\xed\xa0\x80\""),
		"case-different keys":             course(`"slug":"a","title":"A","Title":"B","SLUG":"c","price":{"AMOUNT":3,"Currency":"EUR"}`),
		"price shapes":                    `{` + school + `,"courses":[{"slug":"a","title":"A","price":null},{"slug":"b","title":"B","price":{}},{"slug":"c","title":"C","price":{"amount":1,"currency":"EUR","amount":2,"x":true}},{"slug":"d","title":"D","price":{"amount":null,"currency":null}},{"slug":"e","title":"E","price":{"amount":1e-400,"currency":"\u0045UR"}},{"slug":"f","title":"F","price":{"amount":-0,"currency":"EUR"}}]}`,
		"price not an object":             course(`"slug":"a","title":"A","price":[1]`),
		"price currency wrong":            course(`"slug":"a","title":"A","price":{"amount":1,"currency":1}`),
		"price two errors":                course(`"slug":"a","title":"A","price":{"amount":"1","currency":1}`),
		"price overflow and later error":  course(`"slug":"a","title":"A","price":{"amount":1e999,"currency":[]}`),
		"two wrong fields, sorted first":  course(`"title":5,"slug":"a","lecturers":{}`),
		"string lists":                    `{` + school + `,"courses":[{"slug":"a","title":"A","tags":[],"lecturers":null},{"slug":"b","title":"B","tags":["x",null,"\u0079"],"lecturers":[ "p" , "q" ]}]}`,
		"string list wrong":               course(`"slug":"a","title":"A","tags":["x",1]`),
		"string list not a list":          course(`"slug":"a","title":"A","tags":"x"`),
		"empty and null lists":            `{` + school + `,"courses":[],"events":null,"membership_plans":[ ],"digital_products":null}`,
		"list not an array":               `{` + school + `,"events":"e"}`,
		"null item":                       `{` + school + `,"membership_plans":[null]}`,
		"item error names slug":           `{` + school + `,"events":[{"SLUG":"e","title":1}]}`,
		"item error with long slug":       course(`"slug":"` + strings.Repeat("s", 300) + `","title":1`),
		"school errors":                   `{"school":{"name":1}}`,
		"school and courses errors":       `{"school":[],"courses":{}}`,
		"language null":                   `{` + school + `,"language":null}`,
		"language escaped":                `{` + school + `,"language":"d\u0065"}`,
		"language wrong":                  `{` + school + `,"language":1}`,
		"feed extras":                     `{` + school + `,"School":1,"v":{"a" : [1, 2]},"n":null}`,
		"whitespace everywhere":           " \t\r\n{ \"school\" : { \"name\" : \"S\" , \"x\" : { } } , \"courses\" : [ { \"slug\" : \"a\" , \"title\" : \"A\" , \"tags\" : [ \"t\" ] } ] } \n",
		"nested extra with strings":       course(`"slug":"a","title":"A","x":{"k":"} ] \" \\","l":[{"m":"["}]}`),
		"events and plans full":           `{` + school + `,"events":[{"slug":"e","title":"E","starts_at":"2027-01-01T10:00:00Z","ends_at":"2027-01-01T12:00:00Z","price":{"amount":5,"currency":"EUR"},"v":1}],"membership_plans":[{"slug":"m","name":"M","interval":"month","price":{"amount":5,"currency":"EUR"},"w":2}],"digital_products":[{"slug":"p","title":"P","price":{"amount":5.25,"currency":"EUR"},"z":3}]}`,
		"wrong types in events and plans": `{` + school + `,"events":[{"slug":"e","title":"E","starts_at":1}],"membership_plans":[{"slug":"m","name":"M","interval":true}]}`,
		"wrong types in products":         `{` + school + `,"digital_products":[{"slug":"p","title":"P","price":"free"}]}`,
		"syntax error inside":             course(`"slug":"a","title":"A",}`),
		"vertical tab around":             "\v" + `{` + school + `}`,
		"number with exponent":            course(`"slug":"a","title":"A","price":{"amount":1.5E+2,"currency":"EUR"}`),
		"deep extra":                      course(`"slug":"a","title":"A","x":[[[[{"a":[[]]}]]]]`),
		"empty object":                    `{}`,
		"school null, item null fields":   `{"school":{"name":"S","description":null},"courses":[{"slug":"a","title":"A","summary":null,"price":null,"tags":null}]}`,
	}
	for name, raw := range odd {
		in["odd/"+name] = []byte(raw)
	}
	return in
}

// readFuzzBytes reads a corpus file of one []byte value, as go test
// writes them.
func readFuzzBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[]byte(") || !strings.HasSuffix(rest, ")") {
		t.Fatalf("%s: not a []byte corpus entry", path)
	}
	s, err := strconv.Unquote(rest[len("[]byte(") : len(rest)-1])
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}
