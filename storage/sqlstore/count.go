package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// Count implements storage.Interface.
//
// One GROUP BY statement over the rows List would select, in the same
// read transaction as the revision it reports (the snapshot lists read
// a page in): writers update the counter in the transaction that writes
// the rows, so the snapshot holds exactly the rows at or before that
// revision, and the statement needs no revision bound (which would keep
// PostgreSQL from counting from the key index alone). Cluster and
// namespace are columns of the row; a label or field is a LEFT JOIN to
// its attribute rows, so objects without it form a group of their own
// (NULL), and a field with several values (one row each) counts the
// object in each value's group.
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
		var owners storage.OwnerSet
		if q.Query.HasOwnerFilter() {
			if owners, err = s.resolveOwners(tx, &q.Query); err != nil || len(owners) == 0 {
				return err
			}
		}
		cols := groupColumns(q.GroupBy)
		grouped := func() *gorm.DB {
			db := s.filter(tx.Table(resourcesTable), &q.Query, owners, nil) // images tested row by row
			for i, g := range q.GroupBy {
				if g.Kind == storage.GroupLabel || g.Kind == storage.GroupField {
					kind := attrKindLabel
					if g.Kind == storage.GroupField {
						kind = attrKindField
					}
					db = db.Joins(fmt.Sprintf("LEFT JOIN %s a%d ON a%d.resource_revision = %s.revision AND a%d.kind = ? AND a%d.attr_key = ?",
						attributesTable, i, i, resourcesTable, i, i), kind, g.Key)
				}
			}
			return db.Group(strings.Join(cols, ", "))
		}
		selects := make([]string, len(cols))
		order := []string{"COUNT(*) DESC"}
		for i, c := range cols {
			selects[i] = fmt.Sprintf("%s AS g%d", c, i)
			// Missing values first on every database (PostgreSQL sorts
			// NULL last, the others first).
			order = append(order, c+" IS NULL DESC", c)
		}
		rows, err := grouped().Select(strings.Join(selects, ", ") + ", COUNT(*) AS n").
			Order(strings.Join(order, ", ")).Limit(limit + 1).Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			values := make([]sql.NullString, len(cols))
			dest := make([]any, len(cols)+1)
			for i := range values {
				dest[i] = &values[i]
			}
			var g storage.CountGroup
			dest[len(cols)] = &g.Count
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			g.Values = make([]*string, len(cols))
			for i, v := range values {
				if v.Valid {
					g.Values[i] = &v.String
				}
			}
			res.Groups = append(res.Groups, g)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(res.Groups) > limit {
			res.Groups = res.Groups[:limit]
			var all int64
			if err := tx.Table("(?) AS g", grouped().Select("1")).Count(&all).Error; err != nil {
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

// groupColumns are the columns of each group term: key columns of the
// row, or the value of the term's attribute join.
func groupColumns(groups []storage.GroupBy) []string {
	cols := make([]string, len(groups))
	for i, g := range groups {
		switch g.Kind {
		case storage.GroupCluster:
			cols[i] = resourcesTable + ".cluster"
		case storage.GroupNamespace:
			cols[i] = resourcesTable + ".namespace"
		default:
			cols[i] = fmt.Sprintf("a%d.attr_value", i)
		}
	}
	return cols
}
