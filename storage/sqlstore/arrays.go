package sqlstore

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// PostgreSQL takes many rows' values as one array parameter a column. A
// multi-row VALUES of 500 rows has thousands of parameters, and
// PostgreSQL plans it anew at each execution (customPlans): binding took
// a third of the time of the initial sync's inserts (BenchmarkInitialSync,
// statement log), and the count summary's upserts most of the write
// stage of new objects (BenchmarkUpdateChurn). An array is decoded in one
// call, and the statement's plan is the same whatever the number of rows.

// pgArray binds a slice as one array parameter, cast to its type: gorm
// binds a slice as a list of parameters. pgx encodes the slice itself.
type pgArray struct {
	values any
	cast   string
}

func (a pgArray) Build(b clause.Builder) {
	stmt, ok := b.(*gorm.Statement)
	if !ok {
		b.AddError(fmt.Errorf("an array parameter needs a gorm statement, not %T", b))
		return
	}
	stmt.Vars = append(stmt.Vars, a.values)
	stmt.DB.Dialector.BindVarTo(stmt, stmt, a.values)
	stmt.WriteString("::" + a.cast)
}

// arrayCast is the array type of PostgreSQL that a slice of t's is bound
// as, with the element type the slice holds: pointers stay, nil being NULL.
func arrayCast(t reflect.Type) (elem reflect.Type, cast string, ok bool) {
	switch {
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return reflect.TypeFor[int64](), "bigint[]", true
	case t == reflect.TypeFor[*int64]():
		return t, "bigint[]", true
	case t.Kind() == reflect.String:
		return reflect.TypeFor[string](), "text[]", true
	case t == reflect.TypeFor[*string]():
		return t, "text[]", true
	case t == reflect.TypeFor[[]byte](): // nil is NULL
		return t, "bytea[]", true
	}
	return nil, "", false
}

// insertArrays inserts rows as one array parameter a column, unnested by
// the statement: INSERT ... SELECT * FROM unnest($1::bigint[], ...), and
// on conflict updates the stored row where conflict says. Columns tx
// selects or omits are chosen as gorm's own inserts choose them; those
// left out take their defaults.
func insertArrays[T any](tx *gorm.DB, rows []T, conflict *clause.OnConflict) error {
	stmt := &gorm.Statement{DB: tx, Selects: tx.Statement.Selects, Omits: tx.Statement.Omits}
	if err := stmt.Parse(&rows[0]); err != nil {
		return err
	}
	chosen, restricted := stmt.SelectAndOmitColumns(true, false)
	var columns []*schema.Field
	var names []string
	var arrays []reflect.Value
	var params []any
	for _, f := range stmt.Schema.Fields {
		if v, ok := chosen[f.DBName]; f.DBName == "" || (ok && !v) || (!ok && restricted) {
			continue
		}
		elem, cast, ok := arrayCast(f.FieldType)
		if !ok {
			return fmt.Errorf("column %s.%s: no array type for %s", stmt.Table, f.DBName, f.FieldType)
		}
		array := reflect.MakeSlice(reflect.SliceOf(elem), len(rows), len(rows))
		columns, names, arrays = append(columns, f), append(names, f.DBName), append(arrays, array)
		params = append(params, pgArray{values: array.Interface(), cast: cast})
	}
	ctx := tx.Statement.Context
	for i := range rows {
		row := reflect.ValueOf(&rows[i]).Elem()
		for j, f := range columns {
			arrays[j].Index(i).Set(f.ReflectValueOf(ctx, row).Convert(arrays[j].Type().Elem()))
		}
	}
	sql := "INSERT INTO " + stmt.Table + " (" + strings.Join(names, ", ") + ") SELECT * FROM unnest(" +
		strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ")"
	if conflict != nil {
		set, err := onConflict(conflict)
		if err != nil {
			return fmt.Errorf("table %s: %w", stmt.Table, err)
		}
		sql += set
	}
	return tx.Exec(sql, params...).Error
}

// onConflict is PostgreSQL's ON CONFLICT of c, which names its columns
// and updates some, each to a column of the row inserted (excluded) or an
// expression without parameters: an expression's text is parsed for
// gorm's parameters and named parameters again, so it may hold neither
// ? nor @.
func onConflict(c *clause.OnConflict) (string, error) {
	if c.DoNothing || c.UpdateAll || c.OnConstraint != "" || len(c.Where.Exprs) > 0 || len(c.TargetWhere.Exprs) > 0 || len(c.DoUpdates) == 0 {
		return "", fmt.Errorf("only columns and updates of an ON CONFLICT are written, not %+v", *c)
	}
	keys := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		keys[i] = col.Name
	}
	sets := make([]string, len(c.DoUpdates))
	for i, set := range c.DoUpdates {
		switch v := set.Value.(type) {
		case clause.Column:
			if v.Table != "excluded" || v.Raw {
				return "", fmt.Errorf("update of %s: %+v is no column of the row inserted", set.Column.Name, v)
			}
			sets[i] = set.Column.Name + " = " + v.Table + "." + v.Name
		case clause.Expr:
			if len(v.Vars) > 0 || strings.ContainsAny(v.SQL, "?@") {
				return "", fmt.Errorf("update of %s: an expression with parameters", set.Column.Name)
			}
			sets[i] = set.Column.Name + " = " + v.SQL
		default:
			return "", fmt.Errorf("update of %s: no SQL for %T", set.Column.Name, set.Value)
		}
	}
	return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", "), nil
}
