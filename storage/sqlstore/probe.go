package sqlstore

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// attrPlan is how a statement tests its rows' attributes, those it
// requires and those it excludes. By default (semiJoin), a required one is
// a subquery of the matching attribute rows (IN), an excluded one a
// correlated NOT EXISTS, which PostgreSQL plans as an anti-join that a
// page's LIMIT can stop early (as NOT IN, it read every match:
// BenchmarkFleet). Probing, a row's attribute is looked up by the
// row's revision as a scalar subquery, which no database turns into a
// join: rows are tested one by one, in the order the page's index reads
// them, until the page is full.
type attrPlan struct{ probeRequired, probeExcluded, probeKeywords bool }

var semiJoin attrPlan

// sql is c as a condition on resources rows, and its parameters.
func (p attrPlan) sql(c attrCond) (string, []any) {
	if c.never {
		return "1 = 0", nil
	}
	const from = " FROM " + attributesTable + " WHERE "
	match, args := c.match()
	// A row's attribute of a key is one row, or several for a multi-valued
	// field (images): the primary key's prefix (object_id, key_id) finds
	// them, LIMIT 1 keeps a scalar subquery scalar.
	own := "(SELECT 1" + from + "object_id = " + resourcesTable + ".object_id AND " + match + " LIMIT 1)"
	switch {
	case c.lacks && p.probeExcluded:
		return own + " IS NULL", args
	case c.lacks:
		return "NOT EXISTS " + own, args
	case p.probeRequired:
		return own + " IS NOT NULL", args
	default:
		return resourcesTable + ".object_id IN (SELECT object_id" + from + match + ")", args
	}
}

// pagePlan chooses how a page of q, in order, tests its rows' attributes,
// where the database's own choice ignores the page's LIMIT
// (dialect.probeEstimate).
//
// MariaDB plans every attribute subquery as a semi-join, EXISTS and NOT
// EXISTS too: it reads all the matches, then sorts them or tests the
// page's rows against them. For a common label that makes a small page
// cost as much as reading every match (BenchmarkFleet); excluding a
// value, it read the whole attribute table. Probing rows in the order of
// the index instead reads about limit × objects / matches rows: far fewer
// for a common label, but a whole resource for a rare one. So the page
// always probes the attributes it excludes, and probes those it requires
// when each is common: more matches than √(limit × objects), where the
// two plans' rows read meet, a tested row costing a probe about what a
// match costs the semi-join (make bench-count-1m, an image on 1 pod in
// 200, in and out of MariaDB's buffer pool). Half that bound, which the
// ConfigMaps' costs had suggested, probed that image. It counts each
// one's matches up to the bound, in the attribute index (all resources':
// an upper bound of the resource's), and the objects as the statistics
// estimate them (all resources').
//
// Keywords are the same choice: MariaDB's text index finds every match
// of a word before the page's LIMIT applies, so a word most objects have
// made a page cost seconds (BenchmarkRelations, q=argocd), where probing
// each row's document in the index's order reads about limit × objects /
// matches of them. The text index cannot count a word's matches up to a
// bound (it finds them all first), so commonKeywords estimates them from
// a sample of the documents.
func (s *Store) pagePlan(tx *gorm.DB, q *storage.ListQuery, order []storage.OrderBy, conds []attrCond) (attrPlan, error) {
	if s.dialect.probeEstimate == "" || q.Limit <= 0 || !indexedOrder(order) {
		return semiJoin, nil
	}
	plan := attrPlan{probeRequired: true, probeExcluded: true}
	var required []attrCond
	for _, c := range conds {
		if !c.lacks && !c.common && !c.never {
			required = append(required, c)
		}
	}
	if len(required) == 0 && len(q.Keywords) == 0 {
		return plan, nil
	}
	var objects int64
	if err := tx.Raw(s.dialect.probeEstimate).Scan(&objects).Error; err != nil {
		return semiJoin, err
	}
	common := max(int64(math.Sqrt(float64((q.Limit+1)*objects))), q.Limit+1)
	if len(q.Keywords) > 0 {
		var err error
		if plan.probeKeywords, err = s.commonKeywords(tx, q.Keywords, objects, common); err != nil {
			return semiJoin, err
		}
	}
	for _, c := range required {
		var n int64
		match, args := c.match()
		count := "SELECT COUNT(*) FROM (SELECT 1 FROM " + attributesTable + " WHERE " + match + " LIMIT ?) matches"
		if err := tx.Raw(count, append(args, common)...).Scan(&n).Error; err != nil {
			return semiJoin, err
		}
		if n < common {
			plan.probeRequired = false
			break
		}
	}
	return plan, nil
}

// The sample of the keyword documents commonKeywords reads: keywordRuns
// runs of keywordRunLength documents each, in order of the table's key,
// from points spread evenly over it.
const (
	keywordRuns      = 8
	keywordRunLength = 32
)

// commonKeywords reports whether the documents with every one of keywords
// are likely to number common or more, of objects: whether a sample of
// the documents holds that share of them. The sample is a few runs of
// the primary key, each a few pages' read; an estimate this coarse errs
// only about words near the bound, where either plan costs about what
// the other does.
func (s *Store) commonKeywords(tx *gorm.DB, keywords []storage.Keyword, objects, common int64) (bool, error) {
	if s.dialect.keywordFind == "" || objects == 0 {
		return false, nil
	}
	var bounds struct{ Lo, Hi *int64 }
	if err := tx.Raw("SELECT MIN(object_id) AS lo, MAX(object_id) AS hi FROM " + keywordsTable).Scan(&bounds).Error; err != nil {
		return false, err
	}
	if bounds.Lo == nil {
		return false, nil
	}
	// The finds' parameters, then the runs', as the statement has them.
	finds, args := s.dialect.keywordFinds(keywords)
	runs := make([]string, keywordRuns)
	for i := range runs {
		runs[i] = fmt.Sprintf("(SELECT words FROM %s WHERE object_id >= ? ORDER BY object_id LIMIT %d)", keywordsTable, keywordRunLength)
		args = append(args, *bounds.Lo+(*bounds.Hi-*bounds.Lo)*int64(2*i+1)/(2*keywordRuns))
	}
	var sample struct{ Documents, Hits int64 }
	if err := tx.Raw("SELECT COUNT(*) AS documents, COALESCE(SUM(CASE WHEN "+finds+" THEN 1 ELSE 0 END), 0) AS hits"+
		" FROM ("+strings.Join(runs, " UNION ALL ")+") sample", args...).Scan(&sample).Error; err != nil {
		return false, err
	}
	return sample.Documents > 0 && sample.Hits*objects >= common*sample.Documents, nil
}

// walkIndex is the index of resources that a page which seeks, in an
// order an index serves, is told to walk on MariaDB (dialect.forceWalk):
// the index of its order, when the page reads in that order whatever it
// selects by, its attributes and keywords all probed (a text index that
// drives the join, forced to walk, MariaDB joined each row against every
// match of) and no names (or objects named), owners, namespaces of unnamed
// clusters or, in key order, creation times, which other indexes find
// first; in creation order, no clusters or namespaces
// either, which resources_created holds after the time (a cluster's page
// would test every other cluster's rows in turn). "" leaves the plan to
// the database.
//
// Left to itself, MariaDB planned such a page as a ref of the index's
// prefix (the resource) with the seek as an index condition, which reads
// every entry before the page: it costs the range of revisions on the
// primary key below the seek's range, then takes the index of the order,
// for the LIMIT, by its prefix alone: a page cost more the later its
// cluster came, and a paged list several times its unpaged list, until
// told the index (BenchmarkFleet).
func (s *Store) walkIndex(q *storage.ListQuery, order []storage.OrderBy, plan attrPlan) string {
	if !s.dialect.forceWalk || q.Limit <= 0 || !indexedOrder(order) || !plan.probeRequired ||
		len(q.Keywords) > 0 && !plan.probeKeywords ||
		len(q.Names) > 0 || q.Objects != nil || q.HasOwnerFilter() || len(q.Namespaces) > 0 && len(q.Clusters) == 0 {
		return ""
	}
	for _, r := range q.Fields {
		if _, ok := keyColumn(r.Field); ok {
			return ""
		}
	}
	switch {
	case order[0].Field == storage.OrderCreated && len(q.Clusters) == 0 && len(q.Namespaces) == 0:
		return "resources_created"
	case order[0].Field == storage.OrderCreated, q.CreatedSince != nil || q.CreatedBefore != nil:
		return ""
	}
	return "resources_key"
}

// indexedOrder reports whether an index of resources serves order, which a
// probe needs to stop at the page's end: the key or the creation time,
// then the key, all in one direction (see the indexes of resources).
func indexedOrder(order []storage.OrderBy) bool {
	fields := make([]storage.OrderField, len(order))
	for i, o := range order {
		if o.Desc != order[0].Desc {
			return false
		}
		fields[i] = o.Field
	}
	key := []storage.OrderField{storage.OrderCluster, storage.OrderNamespace, storage.OrderName}
	return slices.Equal(fields, key) || slices.Equal(fields, append([]storage.OrderField{storage.OrderCreated}, key...))
}
