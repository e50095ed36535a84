package catalog

import (
	"fmt"
	"slices"
	"testing"
)

// The analyzer of a feed's language tag: by its base language, English
// when absent, folding only without a stemmer here.
func TestAnalyzerFor(t *testing.T) {
	tests := []struct {
		tag  string
		want string
	}{
		{"", "en"},
		{"en", "en"},
		{"en-GB", "en"},
		{"de-CH", "de"},
		{"fr", "fr"},
		{"it-IT", "it"},
		{"es-419", "es"},
		{"pt-BR", "pt"},
		{"nl", ""},        // valid, no stemmer here: folding only
		{"ja", ""},        // likewise
		{"nonsense!", ""}, // refused by Validate; an index built anyway folds only
	}
	for _, tt := range tests {
		if got := analyzerFor(tt.tag).lang; got != tt.want {
			t.Errorf("analyzerFor(%q) is %q, want %q", tt.tag, got, tt.want)
		}
	}
}

// Each language finds a title word from another form of it, and ignores
// its own stop words but not another language's.
func TestSearchStemsInTheFeedLanguage(t *testing.T) {
	tests := []struct {
		lang, title, query string
		found              bool
	}{
		{"en", "Portrait Photography", "portraits", true},
		{"en", "Knitting from Scratch", "knit", true},
		{"en", "Negotiation Skills", "negotiate", true},
		{"", "Portrait Photography", "portraits", true}, // English by default
		{"de", "Häuser aus Holz", "Haus", true},
		{"de", "Brot backen", "Brote", true},
		{"de", "Straße und Stadt", "strasse", true},
		{"de", "Porträtfotografie", "Porträts", true}, // the stem starts the compound
		{"de", "Porträtfotografie", "Portrats", true},
		{"fr", "Les chevaux de Camargue", "cheval", true},
		{"fr", "Pâtisserie française", "patisseries", true},
		{"it", "Corsi di cucina", "corso", true},
		{"es", "Canciones populares", "canción", true},
		{"pt", "Fotografias de viagem", "fotografia", true},
		{"nl", "Fotograferen voor beginners", "fotograferen", true},
		{"nl", "Fotograferen voor beginners", "Fotograferen!", true},
		{"nl", "De fotografen", "fotograaf", false}, // no Dutch stemmer: exact, prefix or typo only
		{"de", "Kurs über die Nacht", "die Nacht", true},
	}
	for _, tt := range tests {
		t.Run(tt.lang+" "+tt.query, func(t *testing.T) {
			feed := fmt.Sprintf(`{"school":{"name":"S"},"language":%q,"courses":[{"slug":"c","title":%q}]}`, tt.lang, tt.title)
			ix := NewIndex(testOrigin, mustParse(t, feed))
			got := len(ix.Search(tt.query, "", 0)) == 1
			if got != tt.found {
				t.Fatalf("%s feed, title %q, query %q: found %v, want %v", tt.lang, tt.title, tt.query, got, tt.found)
			}
		})
	}
}

func TestStopWordsPerLanguage(t *testing.T) {
	tests := []struct {
		lang, query string
		err         bool
	}{
		{"en", "the", true},
		{"en", "what about the", true},
		{"en", "die", false}, // an English word
		{"de", "die", true},
		{"de", "the", false}, // not a German stop word: maybe an English title word
		{"fr", "le la les", true},
		{"it", "il di", true},
		{"es", "el de", true},
		{"pt", "os de", true},
		{"nl", "de het", false}, // no stop words without a stemmer
	}
	for _, tt := range tests {
		feed := fmt.Sprintf(`{"school":{"name":"S"},"language":%q,"courses":[{"slug":"c","title":"The Die"}]}`, tt.lang)
		ix := NewIndex(testOrigin, mustParse(t, feed))
		if err := ix.CheckQuery(tt.query); (err != nil) != tt.err {
			t.Errorf("%s %q: CheckQuery = %v, want an error: %v", tt.lang, tt.query, err, tt.err)
		}
	}
}

// "courses about the sea" ranks on "sea": the stop words neither match
// nor count against an item for not containing them.
func TestStopWordsDoNotRank(t *testing.T) {
	ix := NewIndex(testOrigin, mustParse(t, `{"school":{"name":"S"},"courses":[
		{"slug":"about","title":"All About the Camera"},
		{"slug":"sea","title":"Sea Kayaking"},
		{"slug":"the","title":"The Courses of the Rivers"}]}`))
	got := slugsOf(ix.Search("courses about the sea", "", 0))
	if !slices.Equal(got, []string{"course:sea", "course:the"}) {
		t.Fatalf("got %v", got)
	}
}
