package sqlstore

import (
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// TestOnConflictRendersUpdates renders the updates PostgreSQL's array
// upserts take, the row inserted's columns and expressions alone, and
// refuses what it cannot write without parameters of its own.
func TestOnConflictRendersUpdates(t *testing.T) {
	got, err := onConflict(&clause.OnConflict{
		Columns: []clause.Column{{Name: "id"}},
		DoUpdates: append(clause.AssignmentColumns([]string{"object"}),
			clause.Assignment{Column: clause.Column{Name: "n"}, Value: gorm.Expr("count_summary.n + excluded.n")}),
	})
	if want := " ON CONFLICT (id) DO UPDATE SET object = excluded.object, n = count_summary.n + excluded.n"; err != nil || got != want {
		t.Errorf("onConflict = %q, %v; want %q", got, err, want)
	}
	for name, value := range map[string]any{
		"an expression with parameters": gorm.Expr("n + ?", 1),
		"a parameter in its text":       gorm.Expr("n + ?"),
		"a named parameter in its text": gorm.Expr("n + @n"),
		"a value":                       int64(1),
		"a column of no table":          clause.Column{Name: "n"},
		"a column of the stored row":    clause.Column{Table: "count_summary", Name: "n"},
	} {
		_, err := onConflict(&clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.Set{{Column: clause.Column{Name: "n"}, Value: value}},
		})
		if err == nil || !strings.Contains(err.Error(), "update of n") {
			t.Errorf("%s: onConflict error %v, want one naming the column", name, err)
		}
	}
	id := []clause.Column{{Name: "id"}}
	for name, c := range map[string]clause.OnConflict{
		"nothing updated": {Columns: id},
		"do nothing":      {Columns: id, DoNothing: true},
		"update all":      {Columns: id, UpdateAll: true},
		"a constraint":    {OnConstraint: "count_summary_pkey", DoUpdates: clause.AssignmentColumns([]string{"n"})},
		"a condition":     {Columns: id, DoUpdates: clause.AssignmentColumns([]string{"n"}), Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "n > 0"}}}},
	} {
		if got, err := onConflict(&c); err == nil {
			t.Errorf("%s: onConflict = %q, want an error", name, got)
		}
	}
}
