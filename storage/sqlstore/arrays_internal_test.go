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
		"a value":                       int64(1),
	} {
		_, err := onConflict(&clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.Set{{Column: clause.Column{Name: "n"}, Value: value}},
		})
		if err == nil || !strings.Contains(err.Error(), "update of n") {
			t.Errorf("%s: onConflict error %v, want one naming the column", name, err)
		}
	}
}
