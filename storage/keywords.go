package storage

import (
	"iter"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Keyword search finds objects by the words of their names, namespaces,
// labels, annotations and indexed fields' values (KeywordsOf). A word is
// a run of ASCII letters and digits, lower-cased: every other character
// separates words, so "db.example.com" is the words db, example and com,
// and "sha256:9f86d0" is sha256 and 9f86d0. Words are kept to
// MaxKeywordLength characters, the first ones.
//
// The rule is Panorama's own, not a database's: each database's text
// index is given words made by it (see sqlstore's keyword document), so
// that every database, the watch cache and Matches find the same objects.

// Bounds of keyword search.
const (
	// MaxKeywordLength fits a sha256 digest in hex; MySQL's full-text
	// index drops tokens longer than 84 characters.
	MaxKeywordLength = 64
	// MaxObjectKeywords bounds the distinct words an object is found by:
	// the first ones of its sources in KeywordsOf's order.
	MaxObjectKeywords = 256
	// MaxQueryKeywords bounds the words of one query.
	MaxQueryKeywords = 16
	// MinKeywordPrefix is the shortest prefix a query takes: each index
	// reads every distinct word a prefix begins, and a letter or two
	// begins a good share of them.
	MinKeywordPrefix = 3
)

// Keyword is one word of a keyword query: an object matches it when it
// has the word, or, with Prefix, a word that begins with it.
type Keyword struct {
	Word   string
	Prefix bool
}

func (k Keyword) String() string {
	if k.Prefix {
		return k.Word + "*"
	}
	return k.Word
}

// valid reports whether k is a word as KeywordsOf makes them: databases
// take the words into their text query syntax, where nothing else may go.
func (k Keyword) valid() bool {
	return k.Word != "" && len(k.Word) <= MaxKeywordLength && (!k.Prefix || len(k.Word) >= MinKeywordPrefix) &&
		!strings.ContainsFunc(k.Word, func(r rune) bool { return !isWordByte(r) || 'A' <= r && r <= 'Z' })
}

// Matches reports whether words, sorted as KeywordsOf returns them, have k.
func (k Keyword) Matches(words []string) bool {
	i, found := slices.BinarySearch(words, k.Word)
	return found || k.Prefix && i < len(words) && strings.HasPrefix(words[i], k.Word)
}

// ParseKeywords reads the terms of a keyword query: each is split into
// words, all of which an object must have; a term ending in "*" matches
// its last word as a prefix ("web*" finds web-0 and webhook).
func ParseKeywords(terms []string) ([]Keyword, error) {
	var out []Keyword
	for _, term := range terms {
		prefix := strings.HasSuffix(term, "*")
		words := slices.Collect(wordsOf(strings.TrimSuffix(term, "*")))
		if len(words) == 0 {
			return nil, Invalid("q", "%q has no word: words are letters and digits", term)
		}
		for i, w := range words {
			k := Keyword{Word: w, Prefix: prefix && i == len(words)-1}
			if k.Prefix && len(w) < MinKeywordPrefix {
				return nil, Invalid("q", "%q: a prefix takes at least %d letters or digits", term, MinKeywordPrefix)
			}
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	if len(out) > MaxQueryKeywords {
		return nil, Invalid("q", "%d words, more than the %d allowed", len(out), MaxQueryKeywords)
	}
	return out, nil
}

// KeywordsOf returns the words keyword search finds u by, given the
// values of its indexed fields: those of its name and namespace, its
// labels' values and keys, its fields' values, and its annotations'
// values and keys, but the last-applied configuration (a copy of the
// object as applied, and of a Secret's data) and Panorama's own stamps
// (the cluster, the member's resourceVersion). They come lower-cased,
// sorted and once each; past MaxObjectKeywords, the sources in that
// order keep theirs.
func KeywordsOf(u *unstructured.Unstructured, fields map[string][]string) []string {
	seen := map[string]bool{}
	var words []string
	add := func(s string) bool {
		for w := range wordsOf(s) {
			if seen[w] {
				continue
			}
			if len(words) == MaxObjectKeywords {
				return false
			}
			// A copy, not a part of s: a word kept (by the watch cache)
			// must not keep a large annotation alive.
			w = strings.Clone(w)
			seen[w] = true
			words = append(words, w)
		}
		return true
	}
	sources := []string{u.GetName(), u.GetNamespace()}
	labels := u.GetLabels()
	labelKeys := slices.Sorted(maps.Keys(labels))
	for _, k := range labelKeys {
		sources = append(sources, labels[k])
	}
	sources = append(sources, labelKeys...)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		sources = append(sources, fields[name]...)
	}
	annotations := u.GetAnnotations()
	// Panorama's stamps are on stored objects and not on those members
	// send: words of either must be the same.
	for _, a := range []string{LastAppliedAnnotation, ClusterAnnotation, MemberResourceVersionAnnotation} {
		delete(annotations, a)
	}
	annotationKeys := slices.Sorted(maps.Keys(annotations))
	for _, k := range annotationKeys {
		sources = append(sources, annotations[k])
	}
	sources = append(sources, annotationKeys...)
	for _, s := range sources {
		if !add(s) {
			break
		}
	}
	slices.Sort(words)
	return words
}

// wordsOf yields the words of s in turn, so that a caller that has enough
// stops reading s.
func wordsOf(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for s != "" {
			start := strings.IndexFunc(s, isWordByte)
			if start < 0 {
				return
			}
			s = s[start:]
			end := strings.IndexFunc(s, func(r rune) bool { return !isWordByte(r) })
			if end < 0 {
				end = len(s)
			}
			if !yield(strings.ToLower(s[:min(end, MaxKeywordLength)])) {
				return
			}
			s = s[end:]
		}
	}
}

// isWordByte reports whether r is part of a word: an ASCII letter or digit.
func isWordByte(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}
