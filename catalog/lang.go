package catalog

import (
	"strings"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/spanish"
	"golang.org/x/text/language"
)

// DefaultLanguage is the language of a feed that names none: most feeds
// so far are English, and English stemming is harmless to the brand and
// tool names other schools use.
const DefaultLanguage = "en"

// analyzer turns words into index terms for one language: stemmed, so
// that "portraits" finds "Portrait", and without the language's stop
// words, so that "courses about the sea" ranks on "sea".
type analyzer struct {
	lang string                       // base language, "" when neither stemming nor stop words apply
	stem func(*snowballstem.Env) bool // nil: folding only
	stop map[string]bool              // folded stop words
}

var analyzers = map[string]*analyzer{
	"en": newAnalyzer("en", english.Stem, stopEnglish),
	"de": newAnalyzer("de", german.Stem, stopGerman),
	"fr": newAnalyzer("fr", french.Stem, stopFrench),
	"it": newAnalyzer("it", italian.Stem, stopItalian),
	"es": newAnalyzer("es", spanish.Stem, stopSpanish),
	"pt": newAnalyzer("pt", portuguese.Stem, stopPortuguese),
}

// foldingOnly is the analyzer of languages without a stemmer here:
// matching stays case- and accent-insensitive, and every word counts.
var foldingOnly = &analyzer{}

func newAnalyzer(lang string, stem func(*snowballstem.Env) bool, stop string) *analyzer {
	a := &analyzer{lang: lang, stem: stem, stop: make(map[string]bool)}
	for _, w := range strings.Fields(stop) {
		a.stop[foldWord(lowerWord(w))] = true
	}
	return a
}

// analyzerFor picks the analyzer of a BCP 47 tag by its base language
// ("de-CH" and "de" alike); "" means DefaultLanguage.
func analyzerFor(tag string) *analyzer {
	if tag == "" {
		tag = DefaultLanguage
	}
	t, err := language.Parse(tag)
	if err != nil {
		return foldingOnly
	}
	base, _ := t.Base()
	if a, ok := analyzers[base.String()]; ok {
		return a
	}
	return foldingOnly
}

// stemmer stems words of one analyzer. It is not safe for concurrent use:
// each index build has its own, and each search one from the pool.
type stemmer struct {
	a   *analyzer
	env *snowballstem.Env
}

func (a *analyzer) stemmer() stemmer { return stemmer{a: a, env: snowballstem.NewEnv("")} }

// term is the index term of a case-folded word: its stem, accent-folded.
// Words with digits ("10k", "2027") and overlong ones are kept whole.
func (s stemmer) term(lower string) string {
	if s.a.stem == nil || len(lower) > maxWordBytes || hasDigit(lower) {
		return foldWord(lower)
	}
	s.env.SetCurrent(lower)
	s.a.stem(s.env)
	return foldWord(s.env.Current())
}

// The stop words: articles, pronouns, prepositions, conjunctions and
// question words, the words that say nothing about what a course teaches.
// Words that could be a topic ("art", "can" in "can making") are left out.
const (
	stopEnglish = `a an and are as at be been but by do does for from had has have he her his how i if in into is it its
		me my no not of on or our she so some than that the their them then there these they this those to too us was
		we were what when where which who why will with you your about any could would should want wants like
		i'm im get find show give looking need am also`
	stopGerman = `der die das den dem des ein eine einer eines einem einen und oder aber als am an auf aus bei bis durch
		für gegen im in ins mit nach ohne seit über um unter vom von vor zu zum zur ist sind war wie was wer wo
		warum ich du er sie es wir ihr mein meine dein sich nicht kein keine auch so noch nur sehr etwas welche
		welcher welches möchte will kann suche gibt es`
	stopFrench = `le la les l un une des du de d et ou mais donc car à au aux en dans par pour sur sous avec sans chez
		ce cet cette ces qui que quoi dont où comment je tu il elle nous vous ils elles me te se mon ma mes son sa
		ses est sont être ne pas plus y a veux voudrais cherche`
	stopItalian = `il lo la i gli le l un uno una di del dello della dei degli delle da dal dalla dai a al allo alla ai
		agli alle in nel nella nei con su sul sulla per tra fra e o ma che chi cui come dove quando io tu lui lei
		noi voi loro mi ti si ci è sono non anche vorrei cerco`
	stopSpanish = `el la los las lo un una unos unas de del a al en con por para sin sobre entre y e o u pero que quien
		como donde cuando yo tu él ella nosotros vosotros ellos ellas me te se mi mis su sus es son no muy más
		quiero busco hay`
	stopPortuguese = `o a os as um uma uns umas de do da dos das em no na nos nas por pelo pela para com sem sobre entre
		e ou mas que quem como onde quando eu tu ele ela nós vós eles elas me te se meu minha seu sua é são não
		muito mais quero procuro há`
)
