package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// mysqlDialect is MySQL's and MariaDB's, comparing text by bytes with
// collation, which must be a NO PAD one: under a PAD SPACE collation such
// as utf8mb4_bin, "a" = "a ", so a selector would match values it does
// not name and the names "a" and "a " would be one key. MariaDB calls it
// utf8mb4_nopad_bin, MySQL 8 utf8mb4_0900_bin; which the server has is
// known once connected (mysqlNoPadDialect).
func mysqlDialect(collation string) *dialect {
	varchar := func(n int) string {
		return fmt.Sprintf("VARCHAR(%d) CHARACTER SET utf8mb4 COLLATE %s", n, collation)
	}
	return &dialect{
		name:      "mysql",
		dsnForm:   "user:pass@tcp(host:3306)/db",
		open:      openMySQL,
		connected: mysqlNoPadDialect,
		conflict:  mysqlConflict,
		refused:   mysqlRefused,
		types: map[string]string{
			"bigint": "BIGINT", "int": "INT", "blob": "LONGBLOB", "char1": "CHAR(1)",
			"s16": varchar(16), "s64": varchar(64), "s128": varchar(128),
			"s253": varchar(253), "s317": varchar(317), "s512": varchar(512),
			"text": "TEXT CHARACTER SET utf8mb4 COLLATE " + collation,
		},
		tableOptions:  " ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=utf8mb4 COLLATE=" + collation,
		inlineIndexes: true,
		prefixIndexes: true,
		dropIndex:     func(table, index string) string { return "DROP INDEX " + index + " ON " + table },
		rekeyAttributes: []string{
			"ALTER TABLE " + legacyAttributesTable + " ADD COLUMN seq INT NOT NULL DEFAULT 0, DROP PRIMARY KEY, ADD " + attributesKey,
		},
		renameColumn: func(table, from, to, typ string) string {
			return "ALTER TABLE " + table + " CHANGE " + from + " " + to + " " + typ + " NOT NULL"
		},
		// One statement, one rebuild of the table.
		keyByObject: func(*dialect) []string {
			return []string{"ALTER TABLE " + resourcesTable + " MODIFY object_id BIGINT NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (object_id), " +
				"ADD UNIQUE KEY " + resourcesRevisionIndex + " (revision)"}
		},
		migrations: map[int64][]string{
			// Version 1 had MySQL compare text under utf8mb4_bin, which pads:
			// "a" and "a " were equal. Converting to a NO PAD collation fails
			// if a table holds both; none can, since its unique key refused
			// the second.
			2: mysqlConvert(collation, resourcesTable, legacyAttributesTable, eventsTable, metaTable),
		},
		lockSchema:         "SELECT GET_LOCK('panorama_schema', 300)",
		unlockSchema:       "SELECT RELEASE_LOCK('panorama_schema')",
		forUpdate:          " FOR UPDATE",
		contains:           func(c string) string { return "LOCATE(?, " + c + ") > 0" },
		readTx:             &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		writeTx:            &sql.TxOptions{Isolation: sql.LevelReadCommitted},
		insertRows:         500,
		lookupKeys:         keyChunk,
		lookupLists:        keyChunk,
		parenthesizedUnion: true,
		addExcluded:        "n + VALUES(n)",
		keepPeriod:         "IF(n > 0, %[1]s, VALUES(%[1]s))",
		forgetPeriod:       "IF(VALUES(n) > 0, NULL, %[1]s)",
		analyze:            "ANALYZE TABLE resources, " + attributesTable + ", " + attributeValuesTable + ", " + keywordsTable + ", events, " + summaryTable,
		clusterRanges:      true,
		forceWalk:          true,
		probeEstimate:      "SELECT COALESCE(MAX(table_rows), 0) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '" + resourcesTable + "'",
		// MySQL cannot push: a reader reads the revision counter, one
		// primary-key row, every probe interval.
		probeRevision: true,
		keywordMatch: resourcesTable + ".object_id IN (SELECT object_id FROM " + keywordsTable +
			" WHERE MATCH (words) AGAINST (? IN BOOLEAN MODE))",
		keywordQuery: func(keywords []storage.Keyword) string { return "+" + keywordTerms(keywords, "*", " +") },
		keywordFind:  "LOCATE(?, CONCAT(' ', words, ' ')) > 0",
	}
}

// mysqlCollations are the NO PAD binary collations, preferred first.
var mysqlCollations = []string{"utf8mb4_nopad_bin", "utf8mb4_0900_bin"}

// mysqlConvert converts tables' text to collation.
func mysqlConvert(collation string, tables ...string) []string {
	out := make([]string, len(tables))
	for i, t := range tables {
		out[i] = "ALTER TABLE " + t + " CONVERT TO CHARACTER SET utf8mb4 COLLATE " + collation
	}
	return out
}

// openMySQL has the driver send each statement with its parameters as one
// query, escaped by the driver, rather than prepare it, execute it and
// close it. Galera may abort a transaction while its client is between
// statements (a brute force abort, conflict.go), and reports it to the
// next command the client sends; when that command is the close of a
// prepared statement, which has no answer, the report is lost, the
// transaction is already rolled back, and the statements after it run
// each in a transaction of its own: a group would commit half its rows.
// Every query is answered. (It also saves two round trips a statement.)
func openMySQL(dsn string) (gorm.Dialector, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("--storage-dsn: %w", err)
	}
	cfg.InterpolateParams = true
	return mysql.Open(cfg.FormatDSN()), nil
}

// mysqlNoPadDialect returns the MySQL dialect with the first NO PAD binary
// collation the server has.
func mysqlNoPadDialect(ctx context.Context, db *gorm.DB) (*dialect, error) {
	var have []string
	if err := db.WithContext(ctx).Raw("SELECT collation_name FROM information_schema.collations WHERE collation_name IN ?", mysqlCollations).
		Scan(&have).Error; err != nil {
		return nil, fmt.Errorf("reading mysql collations: %w", err)
	}
	for _, c := range mysqlCollations {
		if slices.Contains(have, c) {
			return mysqlDialect(c), nil
		}
	}
	return nil, fmt.Errorf("mysql has none of the collations %v: MariaDB 10.2+ or MySQL 8 is required", mysqlCollations)
}

// mysqlRefused: incorrect string value (1366); packet too large (1153,
// and 1301, or 1105 when a parameter sent apart is), row too large
// (1118), or a packet larger than the driver sends.
func mysqlRefused(err error) string {
	var my *mysqldriver.MySQLError
	switch {
	case errors.Is(err, mysqldriver.ErrPktTooLarge):
		return refusedSize
	case !errors.As(err, &my):
		return ""
	case my.Number == 1366:
		return refusedText
	case my.Number == 1153, my.Number == 1301, my.Number == 1118,
		my.Number == 1105 && strings.Contains(my.Message, "max_allowed_packet"): // MariaDB's, of a long parameter
		return refusedSize
	}
	return ""
}

// mysqlConflict: ER_LOCK_DEADLOCK, which Galera's certification failures
// are too.
func mysqlConflict(err error) bool {
	var my *mysqldriver.MySQLError
	return errors.As(err, &my) && my.Number == 1213
}
