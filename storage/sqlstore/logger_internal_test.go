package sqlstore

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libtnb/sqlite"
	"gorm.io/gorm"
)

func TestFailedStatementLogsNoValues(t *testing.T) {
	var logged bytes.Buffer
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "x.db")), &gorm.Config{Logger: newLogger(&logged)})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-secret-value"
	_ = db.Exec("SELECT * FROM no_such_table WHERE name = ?", secret).Error
	if !strings.Contains(logged.String(), "no_such_table") || strings.Contains(logged.String(), secret) {
		t.Fatalf("log must name the statement but not its values: %q", logged.String())
	}
}
