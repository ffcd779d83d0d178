package sqlstore

import (
	"context"
	"slices"
	"strings"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// orderColumns maps order fields to columns; nothing else reaches ORDER BY.
var orderColumns = map[storage.OrderField]string{
	storage.OrderCluster:   "cluster",
	storage.OrderNamespace: "namespace",
	storage.OrderName:      "name",
	storage.OrderCreated:   "created_at",
}

// query is a list or count query, checked in two steps: alone, then
// against the fields the store indexes.
type query interface {
	Validate() error
	ValidateFields(fs *storage.FieldSet) error
}

// validate checks q before any of it reaches the database, and returns
// the fields it was checked against.
func (s *Store) validate(ctx context.Context, q query) (*storage.FieldSet, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	fs, err := s.Fields(ctx)
	if err != nil {
		return nil, err
	}
	return fs, q.ValidateFields(fs)
}

// List implements storage.Reader.
//
// A page shows the state at one revision R. Rows written at or before R are
// still in resources as they were; an object changed after R is in the log,
// whose first entry after R holds its state at R in prev_object. Both are
// read in one snapshot, so continuing a list at R neither skips nor repeats
// objects however they change meanwhile. A page reads its rows and the log
// of its own range of keys: for the orders an index serves, its cost is its
// size, wherever it starts and however much was written since R.
func (s *Store) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	fs, err := s.validate(ctx, q)
	if err != nil {
		return nil, err
	}
	if q.Limit > storage.MaxLimit {
		capped := *q
		capped.Limit = storage.MaxLimit
		q = &capped
	}
	order := q.Order()
	rev := q.Revision
	var after *storage.Object
	if q.Continue != "" {
		var err error
		if rev, after, err = storage.DecodeContinue(q.Continue, order); err != nil {
			return nil, err
		}
	}
	res := &storage.ListResult{}
	err = s.read(ctx, func(tx *gorm.DB) error {
		current, compacted, err := revisions(tx)
		if err != nil {
			return err
		}
		if rev == 0 {
			rev = current
		}
		if rev < compacted {
			if err := checkHistory(tx, q, rev, compacted); err != nil {
				return err
			}
		}
		if rev > current {
			return &storage.TooLargeError{Requested: rev, Current: current}
		}
		res.Revision = rev
		var owners storage.OwnerSet
		if q.HasOwnerFilter() {
			if owners, err = s.resolveOwners(tx, q); err != nil || len(owners) == 0 {
				return err
			}
		}
		var images []string
		if len(q.Images) > 0 {
			if images, err = s.imageValues(tx, q); err != nil {
				return err
			}
		}
		conds, err := s.attrConds(tx, q, images)
		if err != nil {
			return err
		}
		atRevision := func(q *storage.ListQuery, plan attrPlan) *gorm.DB {
			return s.filter(tx.Model(&resourceRow{}), q, owners, conds, plan).Where("revision <= ?", rev)
		}
		plan, err := s.pagePlan(tx, q, order, conds)
		if err != nil {
			return err
		}
		ranged, err := s.clusterRanges(tx, q, order)
		if err != nil {
			return err
		}
		page := atRevision(ranged, plan)
		if after != nil {
			page = s.dialect.seek(page, order, after, true)
			if index := s.walkIndex(ranged, order, plan); index != "" {
				page = page.Table(resourcesTable + " FORCE INDEX (" + index + ")")
			}
		}
		page = page.Order(orderSQL(order))
		if q.Limit > 0 {
			page = page.Limit(int(q.Limit) + 1)
		}
		var rows []resourceRow
		if err := page.Find(&rows).Error; err != nil {
			return err
		}
		objs := make([]storage.Object, len(rows))
		for i := range rows {
			if objs[i], err = rows[i].object(); err != nil {
				return err
			}
		}
		var changed []storage.Object
		if rev < current {
			// Objects changed after rev that sort after the last row read
			// cannot be on this page: the log beyond it is not read.
			var upTo *storage.Object
			if q.Limit > 0 && int64(len(objs)) > q.Limit {
				lastRead := objs[len(objs)-1]
				upTo = &lastRead
			}
			if changed, err = s.changedSince(tx, fs, q, owners, rev, rev < compacted, order, after, upTo); err != nil {
				return err
			}
			objs = merge(order, objs, changed)
		}
		if q.Limit > 0 && int64(len(objs)) > q.Limit {
			objs = objs[:q.Limit]
			last := &objs[len(objs)-1]
			res.Continue = storage.EncodeContinue(rev, order, last)
			if q.WithRemainingCount {
				var n int64
				if err := s.dialect.seek(atRevision(q, semiJoin), order, last, true).Count(&n).Error; err != nil {
					return err
				}
				if rev < current {
					rest, err := s.changedSince(tx, fs, q, owners, rev, rev < compacted, order, last, nil)
					if err != nil {
						return err
					}
					n += int64(len(rest))
				}
				res.RemainingCount = &n
			}
		}
		res.Objects = objs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// filter adds q's filters as bound parameters; column and table names come
// only from constants. conds are q's conditions on attributes (attrConds),
// plan how they are tested (probe.go).
func (s *Store) filter(db *gorm.DB, q *storage.ListQuery, owners storage.OwnerSet, conds []attrCond, plan attrPlan) *gorm.DB {
	db = keyFilter(db, q)
	switch {
	case len(q.Keywords) > 0 && plan.probeKeywords:
		probe, args := s.dialect.keywordProbe(q.Keywords)
		db = db.Where(probe, args...)
	case len(q.Keywords) > 0:
		db = db.Where(s.dialect.keywordMatch, s.dialect.keywordQuery(q.Keywords))
	}
	if q.FuzzyName != "" {
		db = db.Where(s.dialect.contains("name"), q.FuzzyName)
	}
	if q.CreatedSince != nil {
		db = db.Where("created_at >= ?", q.CreatedSince.Unix())
	}
	if q.CreatedBefore != nil {
		db = db.Where("created_at < ?", q.CreatedBefore.Unix())
	}
	if owners != nil {
		db = db.Where("owner_uid IN (?)", ownerUIDs(db, q, owners))
	}
	for _, r := range q.Fields {
		if column, ok := keyColumn(r.Field); ok {
			op := " = ?"
			if r.Operator == selection.NotEquals {
				op = " <> ?"
			}
			db = db.Where(column+op, r.Value)
		}
	}
	for _, c := range conds {
		sql, args := plan.sql(c)
		db = db.Where(sql, args...)
	}
	return db
}

// keyColumn is the key column a field selector of field selects by, if it
// is one: the others select by attribute rows.
func keyColumn(field string) (string, bool) {
	switch field {
	case "metadata.name", "metadata.namespace":
		return strings.TrimPrefix(field, "metadata."), true
	}
	return "", false
}

// attrCond selects the rows that have, or with lacks those that lack, an
// attribute row of kind and key whose value is one of values, passes
// valueSQL, or, with neither, is any. common is set where the matches are
// known to be many (see imageValues).
//
// Rows name keys and values by the dictionary's ids, which resolveConds
// looks up in the query's snapshot: keyID and valueIDs (beside those a
// condition found itself: referenceCond), or never where the dictionary
// has no key or value the condition requires.
type attrCond struct {
	kind, key     string
	lacks, common bool
	values        []string
	// valueSQL tests the value column of the dictionary, with valueArgs:
	// for the values no list can name (containsAny, referenceValues).
	valueSQL  string
	valueArgs []any

	keyID    int64
	valueIDs []int64
	never    bool
}

// match is SQL on an attribute row that c's key and values pass, and its
// parameters.
func (c attrCond) match() (string, []any) {
	const key = "key_id = ?"
	switch {
	case c.valueSQL != "":
		return key + " AND value_id IN (SELECT id FROM " + attributeValuesTable + " WHERE key_id = ? AND " + c.valueSQL + ")",
			append([]any{c.keyID, c.keyID}, c.valueArgs...)
	case len(c.valueIDs) == 1:
		return key + " AND value_id = ?", []any{c.keyID, c.valueIDs[0]}
	case len(c.valueIDs) > 1:
		return key + " AND value_id IN ?", []any{c.keyID, c.valueIDs}
	}
	return key, []any{c.keyID}
}

// attrConds are the conditions of q's label and field selectors and images
// on attribute rows, resolved in tx (resolveConds).
func (s *Store) attrConds(tx *gorm.DB, q *storage.ListQuery, images []string) ([]attrCond, error) {
	var out []attrCond
	for _, r := range q.Labels {
		values := r.Values().UnsortedList()
		slices.Sort(values)
		c := attrCond{kind: attrKindLabel, key: r.Key()}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			c.values = values
		case selection.NotEquals, selection.NotIn:
			c.lacks, c.values = true, values
		case selection.Exists:
		case selection.DoesNotExist:
			c.lacks = true
		default:
			continue
		}
		out = append(out, c)
	}
	for _, r := range q.Fields {
		if _, ok := keyColumn(r.Field); ok {
			continue // see filter
		}
		c := attrCond{kind: attrKindField, key: r.Field, lacks: r.Operator == selection.NotEquals}
		if r.Value == "" {
			// Empty values are never stored: "= ''" means the field is absent.
			c.lacks = !c.lacks
		} else {
			c.values = []string{r.Value}
		}
		out = append(out, c)
	}
	switch {
	case len(q.Images) == 0:
	case images != nil:
		out = append(out, attrCond{kind: attrKindField, key: storage.ImagesField, values: images, never: len(images) == 0})
	default:
		out = append(out, attrCond{kind: attrKindField, key: storage.ImagesField, common: true,
			valueSQL: s.containsAny("value", q.Images), valueArgs: anys(q.Images)})
	}
	if len(q.RefersTo) > 0 {
		c, err := referenceCond(tx, q.RefersTo)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return resolveConds(tx, out)
}

// referenceCond selects the objects with a reference to any of targets.
// The values of a target in any namespace share a prefix (see
// Reference.Value), which a range of the dictionary's index of values
// finds: the collations compare bytes, so no other value sorts inside it.
// The range is resolved to the ids of the values it holds first, in one
// statement, so that a page selects its rows by value, as a label's in: PostgreSQL estimated a
// range of the dictionary at one value, then read and sorted every
// object of a common one rather than walk the page's order
// (BenchmarkRelations). Past maxImageValues values, the page tests the
// range.
func referenceCond(tx *gorm.DB, targets []storage.Reference) (attrCond, error) {
	c := attrCond{kind: attrKindField, key: storage.ReferencesField}
	var ranges []string
	var args []any
	for _, r := range targets {
		if r.Namespace != "" {
			c.values = append(c.values, r.Value())
			continue
		}
		low, high := r.AnyNamespaceRange()
		ranges = append(ranges, "value = ? OR value >= ? AND value < ?")
		args = append(args, r.Value(), low, high)
	}
	if len(ranges) == 0 {
		return c, nil
	}
	rangeSQL := "(" + strings.Join(ranges, " OR ") + ")"
	var ids []int64
	if err := tx.Table(attributeValuesTable).
		Where("key_id = (SELECT id FROM "+attributeKeysTable+" WHERE kind = ? AND name = ?)", c.kind, c.key).
		Where(rangeSQL, args...).Limit(maxImageValues+1).Pluck("id", &ids).Error; err != nil {
		return c, err
	}
	if len(ids) <= maxImageValues {
		// resolveConds adds the ids of the values named.
		c.valueIDs, c.never = ids, len(ids) == 0 && len(c.values) == 0
		return c, nil
	}
	if len(c.values) > 0 {
		rangeSQL = "(" + rangeSQL + " OR value IN ?)"
		args = append(args, c.values)
		c.values = nil
	}
	c.valueSQL, c.valueArgs = rangeSQL, args
	return c, nil
}

// resolveConds looks up the ids of conds' keys and values (findKeys,
// findValues). A condition that requires a key or values the dictionary
// lacks can pass no row (never); one that excludes them passes every row,
// and is left out.
func resolveConds(tx *gorm.DB, conds []attrCond) ([]attrCond, error) {
	if len(conds) == 0 {
		return conds, nil
	}
	wanted := make([]attrKey, len(conds))
	for i, c := range conds {
		wanted[i] = attrKey{c.kind, c.key}
	}
	ids := map[attrKey]int64{}
	if err := findKeys(tx, wanted, ids); err != nil {
		return nil, err
	}
	var values []attrValue
	for i := range conds {
		c := &conds[i]
		c.keyID = ids[attrKey{c.kind, c.key}]
		if c.keyID != 0 {
			for _, v := range c.values {
				values = append(values, attrValue{c.keyID, v})
			}
		}
	}
	valueIDs := map[attrValue]int64{}
	if err := findValues(tx, values, valueIDs); err != nil {
		return nil, err
	}
	out := conds[:0]
	for _, c := range conds {
		for _, v := range c.values {
			if id, ok := valueIDs[attrValue{c.keyID, v}]; ok {
				c.valueIDs = append(c.valueIDs, id)
			}
		}
		unknown := c.keyID == 0 || len(c.values) > 0 && len(c.valueIDs) == 0
		switch {
		case unknown && c.lacks:
			continue
		case unknown:
			c.never = true
		}
		out = append(out, c)
	}
	return out, nil
}

// maxImageValues bounds the images an images search resolves to
// (imageValues).
const maxImageValues = storage.MaxListValues

// imageValues returns the distinct stored images that contain any of
// q.Images, so that a page selects its rows by value, an index lookup
// like a label's (pagePlan then probes them in order if they are common),
// rather than testing the images of every row of the resource in turn (a
// rare image at 100,000 pods: BenchmarkStore). It reads them from the
// count summary's rollup cells of images (summary.go), one a cluster and
// image, not from the attributes: there, MariaDB read the index of images
// from its start to the matches (BenchmarkCount, make bench-count-1m).
// Past maxImageValues images it
// returns nil, and the page tests each row's images.
func (s *Store) imageValues(tx *gorm.DB, q *storage.ListQuery) ([]string, error) {
	gvr := q.GVR
	rollup := summaryNamespace(summaryRollup(gvr.Group, gvr.Version, gvr.Resource, attrKindField, storage.ImagesField), "")
	db := summaryCells(tx, gvr, []string{rollup}, q.Clusters).
		Where("kind = ? AND attr_key = ? AND attr_value IS NOT NULL AND n > 0 AND "+s.containsAny("attr_value", q.Images),
			append([]any{attrKindField, storage.ImagesField}, anys(q.Images)...)...)
	var values []string
	if err := db.Distinct("attr_value").Limit(maxImageValues+1).Pluck("attr_value", &values).Error; err != nil || len(values) > maxImageValues {
		return nil, err
	}
	slices.Sort(values)
	if values == nil {
		values = []string{} // none: the page is empty
	}
	return values, nil
}

// containsAny tests whether column contains any of subs, one parameter each.
func (s *Store) containsAny(column string, subs []string) string {
	contains := make([]string, len(subs))
	for i := range subs {
		contains[i] = s.dialect.contains(column)
	}
	return "(" + strings.Join(contains, " OR ") + ")"
}

func anys(vs []string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// whereResource selects one resource: the leading key columns of both
// tables and of their indexes.
func whereResource(db *gorm.DB, gvr schema.GroupVersionResource) *gorm.DB {
	return db.Where("api_group = ? AND version = ? AND resource = ?", gvr.Group, gvr.Version, gvr.Resource)
}

// keyFilter selects q's resource and its clusters, namespaces and names:
// the key columns, which both tables have.
func keyFilter(db *gorm.DB, q *storage.ListQuery) *gorm.DB {
	db = whereResource(db, q.GVR)
	if len(q.Clusters) > 0 {
		db = db.Where("cluster IN ?", q.Clusters)
	}
	if len(q.Namespaces) > 0 {
		db = db.Where("namespace IN ?", q.Namespaces)
	}
	if len(q.Names) > 0 {
		db = db.Where("name IN ?", q.Names)
	}
	switch {
	case q.Objects == nil:
	case len(q.Objects) == 0:
		db = db.Where("1 = 0")
	default:
		db = db.Where("(cluster, namespace, name) IN ?", objectTuples(q.Objects))
	}
	return db
}

// clusterRanges returns q with its resource's clusters named, for a page in
// the order of clusters that selects namespaces but no cluster, where the
// dialect makes no ranges of the index for it itself (clusterRanges).
// MariaDB reads such a page in the order of resources_key, whose first
// column after the resource is the cluster, and skips the rows of every
// other namespace: those before the namespace in every cluster read (a
// page of one namespace in BenchmarkFleet under make bench-1m). Given the
// clusters too, it reads one range per cluster and namespace. The
// clusters are those the resource has now, read from the same index one
// entry per cluster ("index for group-by"): a superset of
// those with rows at an older revision, which resources holds only for
// objects unchanged since.
// maxClusterRanges bounds the ranges clusterRanges has a page read, which
// the planner holds in memory.
const maxClusterRanges = 10_000

func (s *Store) clusterRanges(tx *gorm.DB, q *storage.ListQuery, order []storage.OrderBy) (*storage.ListQuery, error) {
	if !s.dialect.clusterRanges || len(q.Namespaces) == 0 || len(q.Clusters) > 0 || q.Limit <= 0 || order[0].Field != storage.OrderCluster || !indexedOrder(order) {
		return q, nil
	}
	var clusters []string
	err := whereResource(tx.Model(&resourceRow{}), q.GVR).Group("api_group, version, resource, cluster").Pluck("cluster", &clusters).Error
	if err != nil || len(clusters) == 0 || len(clusters)*len(q.Namespaces) > maxClusterRanges {
		return q, err
	}
	ranged := *q
	ranged.Clusters = clusters
	return &ranged, nil
}

// resolveOwners finds the UIDs whose children q selects: the named owner,
// then OwnerSeniority generations of its descendants. An object without a
// UID owns nothing.
func (s *Store) resolveOwners(tx *gorm.DB, q *storage.ListQuery) (storage.OwnerSet, error) {
	var uids []string
	if q.OwnerUID != "" {
		uids = []string{q.OwnerUID}
	} else if err := namedOwners(tx, q).Distinct().Pluck("uid", &uids).Error; err != nil {
		return nil, err
	}
	for i := 0; i < q.OwnerSeniority && len(uids) > 0; i++ {
		var next []string
		for start := 0; start < len(uids); start += keyChunk {
			var chunk []string
			if err := ownersScope(tx, q).Where("owner_uid IN ?", uids[start:min(start+keyChunk, len(uids))]).Distinct().Pluck("uid", &chunk).Error; err != nil {
				return nil, err
			}
			next = append(next, chunk...)
		}
		uids = next
	}
	set := make(storage.OwnerSet, len(uids))
	for _, u := range uids {
		set[u] = struct{}{}
	}
	return set, nil
}

// ownersScope selects the rows among which q's owners are: of q's
// clusters, with a UID.
func ownersScope(db *gorm.DB, q *storage.ListQuery) *gorm.DB {
	db = db.Model(&resourceRow{}).Where("uid <> ''")
	if len(q.Clusters) > 0 {
		db = db.Where("cluster IN ?", q.Clusters)
	}
	return db
}

// namedOwners selects the rows of the owner q names.
func namedOwners(db *gorm.DB, q *storage.ListQuery) *gorm.DB {
	db = ownersScope(db, q).Where("name = ?", q.OwnerName)
	if gr := q.OwnerGroupResource; gr != nil {
		db = db.Where("api_group = ? AND resource = ?", gr.Group, gr.Resource)
	}
	return db
}

// maxOwnerParams bounds the owners a statement binds, one parameter each.
const maxOwnerParams = storage.MaxListValues

// ownerUIDs is the operand of an IN that selects owners, the UIDs
// resolveOwners found. Past maxOwnerParams, which the statement could
// not bind with its other parameters (storage.MaxQueryValues), it is the
// subquery that selects them again, in the same snapshot: the owner,
// then a generation of descendants a level.
func ownerUIDs(db *gorm.DB, q *storage.ListQuery, owners storage.OwnerSet) any {
	if len(owners) <= maxOwnerParams {
		return setKeys(owners)
	}
	subquery := func() *gorm.DB { return db.Session(&gorm.Session{NewDB: true}) }
	var uids any = []string{q.OwnerUID}
	if q.OwnerUID == "" {
		uids = namedOwners(subquery(), q).Select("uid")
	}
	for range q.OwnerSeniority {
		uids = ownersScope(subquery(), q).Where("owner_uid IN (?)", uids).Select("uid")
	}
	return uids
}

// changedSince returns, in order, the objects that q selects at rev but that
// were changed or deleted after it, and sort after after and at or before
// upTo (either nil for no bound): each one's state before the first log
// entry after rev. It reads the log of that range only, and the pre-images
// of one entry per key, so that a page costs the same however much was
// written since its revision. withHistory (rev is below the compacted
// revision) takes the state of objects changed since from their history
// rows where they have some (historyStates).
func (s *Store) changedSince(tx *gorm.DB, fs *storage.FieldSet, q *storage.ListQuery, owners storage.OwnerSet, rev int64, withHistory bool, order []storage.OrderBy, after, upTo *storage.Object) ([]storage.Object, error) {
	// "revision + 0" keeps planners off events_resource: after an old
	// revision, that is the whole log since it.
	since := func() *gorm.DB {
		return keyFilter(tx.Model(&eventRow{}), q).Where("revision + 0 > ?", rev)
	}
	byCreation := slices.ContainsFunc(order, func(o storage.OrderBy) bool { return o.Field == storage.OrderCreated })
	ranged := func(db *gorm.DB) *gorm.DB {
		// An object deleted and created again has entries of two creation
		// times: its history and its log are read whole, not by range.
		if withHistory && byCreation {
			return db
		}
		for _, bound := range []struct {
			o     *storage.Object
			after bool
		}{{after, true}, {upTo, false}} {
			if bound.o != nil {
				db = s.dialect.seek(db, order, bound.o, bound.after)
			}
		}
		return db
	}
	inRange := ranged(since())
	// The first entry after rev of each key in range is found in the index
	// (events_key, events_created); only those entries are read in full.
	var firsts []eventRow
	firstEntries := func(db *gorm.DB) error {
		var rows []eventRow
		err := db.Select("cluster, namespace, name, MIN(revision) AS revision").Group("cluster, namespace, name").Find(&rows).Error
		firsts = append(firsts, rows...)
		return err
	}
	if byCreation {
		// Entries logged before schema version 3 have no creation time, so
		// they are in every range; they precede every entry that has one.
		if err := firstEntries(since().Where("created_at IS NULL")); err != nil {
			return nil, err
		}
	}
	if err := firstEntries(inRange); err != nil {
		return nil, err
	}
	firstLog := map[storage.Key]int64{}
	for i := range firsts {
		k := storage.Key{Cluster: firsts[i].Cluster, GVR: q.GVR, Namespace: firsts[i].Namespace, Name: firsts[i].Name}
		if r, ok := firstLog[k]; !ok || firsts[i].Revision < r {
			firstLog[k] = firsts[i].Revision
		}
	}
	var past map[storage.Key][]byte
	if withHistory {
		var err error
		if past, err = historyStates(tx, s.dialect, q, rev, ranged, firstLog); err != nil {
			return nil, err
		}
	}
	var revs []int64
	for k, r := range firstLog {
		if _, ok := past[k]; !ok {
			revs = append(revs, r)
		}
	}
	slices.Sort(revs)
	var out []storage.Object
	keep := func(cluster string, data []byte) error {
		o, err := fs.DecodeStored(q.GVR.GroupResource(), data)
		if err != nil {
			return err
		}
		o.Cluster, o.GVR = cluster, q.GVR
		if q.Matches(&o, owners) && (after == nil || storage.Compare(order, &o, after) > 0) &&
			(upTo == nil || storage.Compare(order, &o, upTo) <= 0) {
			out = append(out, o)
		}
		return nil
	}
	for k, data := range past {
		if data != nil {
			if err := keep(k.Cluster, data); err != nil {
				return nil, err
			}
		}
	}
	states, err := preImagesAt(tx, s.dialect, revs)
	if err != nil {
		return nil, err
	}
	for _, r := range states {
		if watch.EventType(r.Type) == watch.Added || len(r.PrevObject) == 0 {
			continue // did not exist at rev
		}
		if err := keep(r.Cluster, r.PrevObject); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b storage.Object) int { return storage.Compare(order, &a, &b) })
	return out, nil
}

func merge(order []storage.OrderBy, a, b []storage.Object) []storage.Object {
	if len(b) == 0 {
		return a
	}
	out := make([]storage.Object, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if storage.Compare(order, &a[i], &b[j]) <= 0 {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

func orderSQL(order []storage.OrderBy) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = orderColumns[o.Field]
		if o.Desc {
			parts[i] += " DESC"
		}
	}
	return strings.Join(parts, ", ")
}

// seek selects the rows after last under order, or with after false the
// rows at or before it: a range on the index that serves the order, rather
// than an OFFSET. Row values, (a, b) > (?, ?), are what PostgreSQL and
// SQLite turn into an index range; MariaDB makes no range of them and
// reads the resource's rows from one end of the index, so it gets the same
// condition spelled out, a > ? OR (a = ? AND b > ?), of which its range
// optimizer does make a range (given statistics: see dialect.analyze).
// Orders that mix directions need the spelled-out form everywhere.
func (d *dialect) seek(db *gorm.DB, order []storage.OrderBy, last *storage.Object, after bool) *gorm.DB {
	// cmp compares a column (or row) with last's value in the direction of
	// o and of the seek; the last column of an "at or before" may be equal.
	cmp := func(o storage.OrderBy, final bool) string {
		op := "<"
		if o.Desc != after {
			op = ">"
		}
		if final && !after {
			op += "="
		}
		return op
	}
	if d.rowValues && !slices.ContainsFunc(order, func(o storage.OrderBy) bool { return o.Desc != order[0].Desc }) {
		cols := make([]string, len(order))
		args := make([]any, len(order))
		for i, o := range order {
			cols[i], args[i] = orderColumns[o.Field], orderValue(o.Field, last)
		}
		return db.Where("("+strings.Join(cols, ", ")+") "+cmp(order[0], true)+" ("+strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")+")", args...)
	}
	var ors []string
	var args []any
	for i, o := range order {
		var ands []string
		for _, prev := range order[:i] {
			ands = append(ands, orderColumns[prev.Field]+" = ?")
			args = append(args, orderValue(prev.Field, last))
		}
		ands = append(ands, orderColumns[o.Field]+" "+cmp(o, i == len(order)-1)+" ?")
		args = append(args, orderValue(o.Field, last))
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return db.Where("("+strings.Join(ors, " OR ")+")", args...)
}

func orderValue(f storage.OrderField, o *storage.Object) any {
	switch f {
	case storage.OrderCluster:
		return o.Cluster
	case storage.OrderNamespace:
		return o.Namespace
	case storage.OrderName:
		return o.Name
	}
	return o.CreatedAt
}

func setKeys(s storage.OwnerSet) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// objectTuples are objects as rows of (cluster, namespace, name), which
// gorm writes as a list of row values.
func objectTuples(objects []storage.ObjectName) [][]any {
	out := make([][]any, len(objects))
	for i, o := range objects {
		out[i] = []any{o.Cluster, o.Namespace, o.Name}
	}
	return out
}
