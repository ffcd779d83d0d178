package sqlstore

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// insertArrays inserts rows as one array parameter a column, unnested by
// the statement (PostgreSQL): INSERT ... SELECT * FROM unnest($1::bigint[],
// ...). A multi-row VALUES of 500 rows has thousands of parameters, and
// PostgreSQL plans it anew at each execution: binding took a third of the
// time of the initial sync's inserts (BenchmarkInitialSync, statement
// log). An array is decoded in one call, and the statement's plan is the
// same whatever the number of rows.
func insertArrays[T any](tx *gorm.DB, rows []T, conflict *clause.OnConflict) error {
	stmt := &gorm.Statement{DB: tx}
	if err := stmt.Parse(&rows[0]); err != nil {
		return err
	}
	var columns []*schema.Field
	var names, casts []string
	var values []reflect.Value
	for _, f := range stmt.Schema.Fields {
		if f.DBName == "" {
			continue
		}
		var elem reflect.Type
		switch t := f.FieldType; {
		case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
			elem, casts = reflect.TypeFor[int64](), append(casts, "bigint[]")
		case t.Kind() == reflect.String:
			elem, casts = reflect.TypeFor[string](), append(casts, "text[]")
		case t == reflect.TypeFor[[]byte](): // nil is NULL
			elem, casts = t, append(casts, "bytea[]")
		default:
			return fmt.Errorf("column %s.%s: no array type for %s", stmt.Table, f.DBName, f.FieldType)
		}
		columns, names = append(columns, f), append(names, f.DBName)
		values = append(values, reflect.MakeSlice(reflect.SliceOf(elem), len(rows), len(rows)))
	}
	ctx := tx.Statement.Context
	for i := range rows {
		row := reflect.ValueOf(&rows[i]).Elem()
		for j, f := range columns {
			values[j].Index(i).Set(f.ReflectValueOf(ctx, row).Convert(values[j].Type().Elem()))
		}
	}
	params, args := make([]string, len(names)), make([]any, len(names))
	for j := range names {
		params[j] = fmt.Sprintf("$%d::%s", j+1, casts[j])
		args[j] = values[j].Interface()
	}
	sql := "INSERT INTO " + stmt.Table + " (" + strings.Join(names, ", ") + ") SELECT * FROM unnest(" + strings.Join(params, ", ") + ")"
	if conflict != nil {
		sql += onConflict(conflict)
	}
	// The pool, not tx.Exec: gorm would expand each slice into a list.
	begin := time.Now()
	_, err := tx.Statement.ConnPool.ExecContext(ctx, sql, args...)
	tx.Logger.Trace(ctx, begin, func() (string, int64) { return sql, int64(len(rows)) }, err)
	return err
}

// onConflict is PostgreSQL's ON CONFLICT of c, which may only name its
// columns and update some from the row inserted.
func onConflict(c *clause.OnConflict) string {
	keys := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		keys[i] = col.Name
	}
	sets := make([]string, len(c.DoUpdates))
	for i, set := range c.DoUpdates {
		sets[i] = set.Column.Name + " = excluded." + set.Column.Name
	}
	return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ")
}
