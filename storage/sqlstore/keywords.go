package sqlstore

import (
	"strings"

	"github.com/panorama-io/panorama/storage"
)

// keywordsTable holds a row's keyword document, a row each, under each
// database's own text index (dialect.textIndex): MySQL's FULLTEXT,
// PostgreSQL's GIN of tsvectors, SQLite's FTS5. It is written and deleted
// with the row it belongs to, in the same transaction (pending.flush).
const keywordsTable = "object_keywords"

// keywordsIndex is the text index of keywordsTable: on SQLite, a table.
const keywordsIndex = "object_keywords_words"

// keywordRow is the keyword document of the object of ObjectID.
type keywordRow struct {
	ObjectID int64  `gorm:"column:object_id;primaryKey;autoIncrement:false"`
	Words    string `gorm:"column:words"`
}

func (keywordRow) TableName() string { return keywordsTable }

// keywordPrefix begins each word of a document and of a query. The
// databases tokenize a document of Panorama's words (storage.KeywordsOf,
// letters and digits apart) as those words, but MySQL's full-text index
// leaves out words shorter than three characters and a list of common
// English ones ("com", "www", "the"); no word with the prefix is either.
const keywordPrefix = "kw"

// keywordDocument is the document of words, as stored; "" stores none.
func keywordDocument(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(keywordPrefix + w)
	}
	return b.String()
}

// keywordRowOf is the keyword row of the object of id, and whether it
// has one: an object without words has none.
func keywordRowOf(id int64, words []string) (keywordRow, bool) {
	return keywordRow{ObjectID: id, Words: keywordDocument(words)}, len(words) > 0
}

// keywordNeedle is what a document holds, with a space before and after
// it, where it has k: its word between spaces, or, a prefix, after one.
func keywordNeedle(k storage.Keyword) string {
	if k.Prefix {
		return " " + keywordPrefix + k.Word
	}
	return " " + keywordPrefix + k.Word + " "
}

// keywordFinds is the condition that a document (words) has every one of
// keywords (dialect.keywordFind), and its parameters.
func (d *dialect) keywordFinds(keywords []storage.Keyword) (string, []any) {
	finds, args := make([]string, len(keywords)), make([]any, len(keywords))
	for i, k := range keywords {
		finds[i], args[i] = d.keywordFind, keywordNeedle(k)
	}
	return strings.Join(finds, " AND "), args
}

// keywordProbe is the condition that a resources row's document has
// every one of keywords, read by the row's object id, and its parameters:
// a scalar subquery, as attrPlan probes attributes.
func (d *dialect) keywordProbe(keywords []storage.Keyword) (string, []any) {
	finds, args := d.keywordFinds(keywords)
	return "(SELECT 1 FROM " + keywordsTable + " WHERE object_id = " + resourcesTable + ".object_id AND " + finds + ") IS NOT NULL", args
}

// keywordTerms writes keywords as a text query: each word with the
// prefix, then, with prefix, before star, and the terms joined by and.
// Words are letters and digits only (ListQuery.Validate), which no
// database's query syntax reads as anything but a word.
func keywordTerms(keywords []storage.Keyword, star, and string) string {
	terms := make([]string, len(keywords))
	for i, k := range keywords {
		terms[i] = keywordPrefix + k.Word
		if k.Prefix {
			terms[i] += star
		}
	}
	return strings.Join(terms, and)
}
