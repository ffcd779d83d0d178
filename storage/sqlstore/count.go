package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// Count implements storage.Reader.
//
// One GROUP BY statement, in the same read transaction as the revision it
// reports (the snapshot lists read a page in): writers update the counter
// in the transaction that writes the rows and the count summary, so the
// snapshot holds exactly the rows and the summary at that revision, and
// the statement needs no revision bound (which would keep PostgreSQL from
// counting rows from the key index alone). It groups the summary's cells
// when they answer the query (Summarizable), else the rows List would
// select.
func (s *Store) Count(ctx context.Context, q *storage.CountQuery) (*storage.CountResult, error) {
	if _, err := s.validate(ctx, q); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = storage.DefaultCountLimit
	}
	res := &storage.CountResult{}
	err := s.read(ctx, func(tx *gorm.DB) error {
		current, _, err := revisions(tx)
		if err != nil {
			return err
		}
		res.Revision = current
		var g grouping
		if q.Summarizable() {
			g = summaryGrouping(tx, q)
		} else {
			var owners storage.OwnerSet
			if q.Query.HasOwnerFilter() {
				if owners, err = s.resolveOwners(tx, &q.Query); err != nil || len(owners) == 0 {
					return err
				}
			}
			if g, err = s.rowGrouping(tx, q, owners); err != nil {
				return err
			}
		}
		selects := make([]string, len(g.cols))
		order := []string{g.count + " DESC"}
		for i, c := range g.cols {
			selects[i] = fmt.Sprintf("%s AS g%d", c, i)
			// Missing values first on every database (PostgreSQL sorts
			// NULL last, the others first).
			order = append(order, c+" IS NULL DESC", c)
		}
		selects = append(selects, g.count+" AS n")
		if q.HeldSince {
			selects = append(selects, periodStart(heldSinceColumn)+" AS since", periodStart(heldSinceAtColumn)+" AS since_at")
		}
		rows, err := g.grouped().Select(strings.Join(selects, ", ")).
			Order(strings.Join(order, ", ")).Limit(limit + 1).Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			values := make([]sql.NullString, len(g.cols))
			dest := make([]any, len(g.cols), len(g.cols)+3)
			for i := range values {
				dest[i] = &values[i]
			}
			var group storage.CountGroup
			var since, at sql.NullInt64
			dest = append(dest, &group.Count)
			if q.HeldSince {
				dest = append(dest, &since, &at)
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			group.Values = make([]*string, len(g.cols))
			for i, v := range values {
				if v.Valid {
					group.Values[i] = &v.String
				}
			}
			if q.HeldSince && !g.lacksKey(group.Values) {
				group.HeldSince = &storage.HeldSince{Revision: since.Int64, Time: microTime(at.Int64)}
			}
			res.Groups = append(res.Groups, group)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(res.Groups) > limit {
			res.Groups = res.Groups[:limit]
			var all int64
			if err := tx.Table("(?) AS g", g.grouped().Select("1")).Count(&all).Error; err != nil {
				return err
			}
			res.RemainingGroups = all - int64(limit)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// grouping is where a count's groups come from: grouped selects and
// groups the rows, each group's values are cols, its size count; attr is
// the one of cols that is the summary's label or field, -1 for none.
type grouping struct {
	grouped func() *gorm.DB
	cols    []string
	count   string
	attr    int
}

// lacksKey reports whether the group of values is that of the objects
// lacking the label or field grouped by, which has no period of its own.
func (g *grouping) lacksKey(values []*string) bool {
	return g.attr >= 0 && values[g.attr] == nil
}

// periodStart is when a group's current period began, of column (the
// revision or the time): the earliest of its cells that hold objects; 0,
// before any is known, when one of them has none (its period began before
// periods were kept).
func periodStart(column string) string {
	return "MIN(CASE WHEN n > 0 THEN COALESCE(" + column + ", 0) END)"
}

// rowGrouping counts the rows List would select. Cluster and namespace
// are columns of the row; a label or field is a LEFT JOIN to its attribute
// rows and their values, so objects without it form a group of their own
// (NULL), and a field with several values (one row each) counts the
// object in each value's group.
func (s *Store) rowGrouping(tx *gorm.DB, q *storage.CountQuery, owners storage.OwnerSet) (grouping, error) {
	conds, err := s.attrConds(tx, &q.Query, nil) // images tested row by row
	if err != nil {
		return grouping{}, err
	}
	var keys []attrCond // the labels and fields grouped by, in order
	cols := make([]string, len(q.GroupBy))
	for i, g := range q.GroupBy {
		switch g.Kind {
		case storage.GroupCluster:
			cols[i] = resourcesTable + ".cluster"
		case storage.GroupNamespace:
			cols[i] = resourcesTable + ".namespace"
		default:
			cols[i] = fmt.Sprintf("v%d.value", len(keys))
			kind, _ := attrKind(g)
			keys = append(keys, attrCond{kind: kind, key: g.Key})
		}
	}
	// None excludes: none is left out. A key the dictionary lacks has id
	// 0, which no row has: every object is in the NULL group.
	if keys, err = resolveConds(tx, keys); err != nil {
		return grouping{}, err
	}
	return grouping{cols: cols, count: "COUNT(*)", attr: -1, grouped: func() *gorm.DB {
		db := s.filter(tx.Table(resourcesTable), &q.Query, owners, conds, semiJoin)
		for i, k := range keys {
			db = db.Joins(fmt.Sprintf("LEFT JOIN %s a%d ON a%d.object_id = %s.object_id AND a%d.key_id = ? LEFT JOIN %s v%d ON v%d.id = a%d.value_id",
				attributesTable, i, i, resourcesTable, i, attributeValuesTable, i, i, i), k.keyID)
		}
		return db.Group(strings.Join(cols, ", "))
	}}, nil
}

// summaryGrouping counts from the summary's cells (summary.go): those of
// the objects, and of the grouped label or field if any (its rollup cells
// when the count neither selects nor groups by namespace). An object lacking
// that key is in the objects' cell and not in the key's, whose value is
// NULL too: the NULL group sums the one minus the other, and is left out
// when that is 0.
func summaryGrouping(tx *gorm.DB, q *storage.CountQuery) grouping {
	gvr := q.Query.GVR
	scopes := []string{summaryScope(gvr.Group, gvr.Version, gvr.Resource, "", "")}
	kind, key, attr := "", "", -1
	// The attribute's rollup cells do, unless namespaces matter.
	rollup := len(q.Query.Namespaces) == 0
	cols := make([]string, len(q.GroupBy))
	for i, g := range q.GroupBy {
		switch g.Kind {
		case storage.GroupCluster, storage.GroupNamespace:
			cols[i] = string(g.Kind)
			rollup = rollup && g.Kind != storage.GroupNamespace
		default:
			kind, _ = attrKind(g)
			key, attr = g.Key, i
			cols[i] = "attr_value"
		}
	}
	if kind != "" && rollup {
		scopes = append(scopes, summaryNamespace(summaryRollup(gvr.Group, gvr.Version, gvr.Resource, kind, key), ""))
	} else if kind != "" {
		scopes = append(scopes, summaryScope(gvr.Group, gvr.Version, gvr.Resource, kind, key))
	}
	count := "SUM(CASE WHEN kind <> '' AND attr_value IS NULL THEN -n ELSE n END)"
	return grouping{cols: cols, count: count, attr: attr, grouped: func() *gorm.DB {
		// A range of ids per scope, or per scope and namespace selected.
		prefixes := scopes
		if len(q.Query.Namespaces) > 0 {
			prefixes = nil
			for _, scope := range scopes {
				for _, ns := range q.Query.Namespaces {
					prefixes = append(prefixes, summaryNamespace(scope, ns))
				}
			}
		}
		db := summaryCells(tx, gvr, prefixes, q.Query.Clusters).
			Where("(kind = '' AND attr_key = '') OR (kind = ? AND attr_key = ?)", kind, key)
		if len(q.Query.Namespaces) > 0 {
			db = db.Where("namespace IN ?", q.Query.Namespaces)
		}
		return db.Group(strings.Join(cols, ", ")).Having(count + " > 0")
	}}
}

// attrKind is the attribute kind a term groups by, if it is a label or field.
func attrKind(g storage.GroupBy) (string, bool) {
	switch g.Kind {
	case storage.GroupLabel:
		return attrKindLabel, true
	case storage.GroupField:
		return attrKindField, true
	}
	return "", false
}
