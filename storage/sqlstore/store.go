package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/storage"
)

// Options select and reach the database.
type Options struct {
	// Driver names a dialect: sqlite, mysql or postgres (dialects).
	Driver string
	// DSN is the driver's data source name; for sqlite, a file path.
	DSN string
	// MaxOpenConns bounds the connection pool (not for sqlite, which uses one).
	MaxOpenConns int
	// ReadDSN reaches a streaming replica of DSN's database to read from,
	// and ReadWait bounds how long a read waits for it (replica.go).
	ReadDSN  string
	ReadWait time.Duration
}

// DefaultSQLiteFile is where the zero-setup default keeps its data.
const DefaultSQLiteFile = "panorama.db"

// AddFlags binds the standard storage flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Driver, "storage", sqliteDialect.name, "Storage backend: "+dialectNames()+".")
	fs.StringVar(&o.DSN, "storage-dsn", "", "Data source name of the backend; "+dsnForms())
	fs.IntVar(&o.MaxOpenConns, "storage-max-open-conns", 20, "Maximum open connections to the backend.")
}

// Validate reports flags in error before anything is opened.
func (o *Options) Validate() error {
	d, ok := dialects[o.Driver]
	if !ok {
		return fmt.Errorf("--storage: unknown backend %q (want %s)", o.Driver, dialectNames())
	}
	if d.defaultDSN == "" && o.DSN == "" {
		return fmt.Errorf("--storage-dsn is required for %s", o.Driver)
	}
	if o.MaxOpenConns <= 0 {
		return fmt.Errorf("--storage-max-open-conns must be positive, not %d", o.MaxOpenConns)
	}
	return o.validateRead()
}

// Store is the SQL storage.
type Store struct {
	db      *gorm.DB
	dialect *dialect
	// logger is the one of the context the Store was opened with, for
	// what it does in the background.
	logger klog.Logger

	// queue feeds the Store's one writer (see group.go).
	queue *queue
	// fields are the declared fields' versions (fields.go).
	fields fieldsCache
	// dict caches the attribute dictionary's ids (dictionary.go).
	dict dictionary
	// rewrites is the count of rewrites of logged Secrets (forget.go).
	rewrites rewriteCount

	mu      sync.Mutex
	changed chan struct{}
	// dead counts the rows replaced or deleted since the tables were last
	// maintained (their statistics refreshed, or PostgreSQL's vacuumed),
	// unanalyzed the rows written since their statistics were refreshed
	// (at analyzedAt); vacuumAfter and analyzeNext are how many of each
	// make each worth it (scheduleMaintenance).
	dead, unanalyzed         atomic.Int64
	analyzeNext, vacuumAfter atomic.Int64
	analyzedAt, opened       atomic.Int64 // Unix nanoseconds
	maintaining              atomic.Bool
	// standby: the database is a hot standby, read only (replica.go).
	standby bool
}

// analyzeAfter is how many written rows make the statistics worth
// refreshing where the store cannot count its objects (MariaDB, whose
// ANALYZE reads a few pages of each index), and beyond which a refresh
// that is due no longer waits for earlyAnalyzeEvery.
const analyzeAfter = 20000

// Where the store can count its objects (PostgreSQL), the statistics are
// refreshed once half as many rows were written as the last refresh
// counted objects, after no fewer than analyzeAfterMin, and, while fewer
// than analyzeAfter were, no sooner than earlyAnalyzeEvery after the last
// (a small store that churns would otherwise sample its log every
// thousand rows). The planner scales what it sampled to a table's current
// size, so what calls for a new sample is a change in the share of what
// a table holds, not in its size: PostgreSQL's refresh (VACUUM (ANALYZE))
// samples a fixed number of rows of each table and reads every page
// written since the last, and refreshed every analyzeAfter rows, an
// initial sync spends more of its time maintaining the larger it is
// (BenchmarkInitialSync). Growing by half each time, the refreshes of a
// sync grow with the logarithm of its objects.
//
// PostgreSQL plans statements on tables it has not sampled by default
// selectivities (an equality on a column selects a fixed small share of
// the rows): a lookup of a few names among many objects read all of them,
// and a first sync into a new database spent much of its time in such
// lookups
// (autovacuum analyzes a table once a tenth of it changed, looks once a
// minute, and may be off).
//
// Where the objects change more than they grow, half of them is many
// writes: the statistics are refreshed too once analyzeAfter rows were
// written and refreshEvery passed since the last refresh or since the
// store opened (a controller manager that restarts counts anew), so that
// what churn changes (a rollout's new label on a hundred thousand pods)
// and what the inserts left unvacuumed are caught up with.
const (
	analyzeShare      = 2
	analyzeAfterMin   = 1000
	earlyAnalyzeEvery = 30 * time.Second
	refreshEvery      = 10 * time.Minute
)

// PostgreSQL reuses the space of the rows that writes replace or delete
// only once they are vacuumed, so a table holds, besides its live rows,
// those replaced since the last vacuum: vacuumed only with the statistics,
// every analyzeAfter rows, a store whose objects all changed held every
// replaced row beside its live one. So it is vacuumed once a tenth as many rows as there
// are objects were replaced or deleted (autovacuum waits for a fifth,
// looks once a minute, and may be off), after no fewer than
// vacuumAfterMin rows and no more than analyzeAfter. Rows only added
// leave nothing to vacuum, so only replaced and deleted rows count: an
// initial sync would otherwise vacuum again and again for nothing.
const (
	vacuumShare    = 10
	vacuumAfterMin = 1000
)

var _ storage.Interface = (*Store)(nil)

// Open connects, migrates the schema and returns a ready Store.
func Open(ctx context.Context, o Options) (*Store, error) {
	s, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.closeDB()
		return nil, fmt.Errorf("migrating %s schema: %w", o.Driver, err)
	}
	if err := s.scheduleMaintenance(); err != nil {
		_ = s.closeDB()
		return nil, err
	}
	s.queue = newQueue()
	go s.writeLoop()
	return s, nil
}

// connect opens the database of o, without migrating it or starting the
// writer.
func connect(ctx context.Context, o Options) (*Store, error) {
	d, ok := dialects[o.Driver]
	if !ok {
		return nil, fmt.Errorf("unknown storage backend %q (want %s)", o.Driver, dialectNames())
	}
	dsn := cmp.Or(o.DSN, d.defaultDSN)
	if dsn == "" {
		return nil, fmt.Errorf("--storage-dsn is required for %s", o.Driver)
	}
	dialector, err := d.open(dsn)
	if err != nil {
		return nil, err
	}
	db, err := gorm.Open(dialector, &gorm.Config{Logger: newLogger(os.Stderr), SkipDefaultTransaction: true})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", o.Driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if d.oneConnection {
		sqlDB.SetMaxOpenConns(1)
	} else if o.MaxOpenConns > 0 {
		sqlDB.SetMaxOpenConns(o.MaxOpenConns)
		sqlDB.SetMaxIdleConns(o.MaxOpenConns)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connecting to %s: %w", o.Driver, err)
	}
	if d.connected != nil {
		if d, err = d.connected(ctx, db); err != nil {
			_ = sqlDB.Close()
			return nil, err
		}
	}
	s := &Store{db: db, dialect: d, changed: make(chan struct{}), logger: klog.FromContext(ctx)}
	s.opened.Store(time.Now().UnixNano())
	return s, nil
}

// newLogger logs slow and failed statements without their parameters, which
// are user and member input: secrets' contents, tenants' queries.
func newLogger(w io.Writer) logger.Interface {
	return logger.New(log.New(w, "", log.LstdFlags), logger.Config{
		SlowThreshold: 10 * time.Second, LogLevel: logger.Warn, IgnoreRecordNotFoundError: true, ParameterizedQueries: true,
	})
}

// Changed implements storage.Interface.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// wrote records n written rows, dead of which replaced or deleted rows,
// and maintains the tables in the background when enough were written or
// replaced since the last time.
func (s *Store) wrote(n, dead int64) {
	if s.dialect.analyze == "" {
		return
	}
	s.unanalyzed.Add(n)
	s.dead.Add(dead)
	if !s.maintenanceDue() || !s.maintaining.CompareAndSwap(false, true) {
		return
	}
	go func() {
		// Writes made while the tables were maintained may have made
		// maintenance due again; on a store gone quiet, no later write
		// would start it.
		for {
			err := s.maintain()
			s.maintaining.Store(false)
			if err != nil {
				s.logger.Error(err, "Maintaining the tables failed; the next write tries again")
				return
			}
			if !s.maintenanceDue() || !s.maintaining.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// maintenanceDue reports whether enough rows were replaced for a vacuum,
// or written for a refresh of the statistics.
func (s *Store) maintenanceDue() bool {
	return s.dead.Load() >= s.vacuumAfter.Load() || s.analyzeDue()
}

// maintain refreshes the statistics when enough rows were written since
// they were (analyzeNext), else vacuums, which costs a fraction of that
// (the statistics sample every table). What it counted is counted again
// if it fails.
func (s *Store) maintain() (err error) {
	dead := s.dead.Swap(0)
	defer func() {
		if err != nil {
			s.dead.Add(dead)
		}
	}()
	if s.dialect.vacuum == "" || s.analyzeDue() {
		written := s.unanalyzed.Swap(0)
		if err = s.refreshStatistics(); err != nil {
			s.unanalyzed.Add(written)
		}
		return err
	}
	return s.db.Exec(s.dialect.vacuum).Error
}

// refreshStatistics has the planner count the tables again: how a page
// seeks depends on it (see seek). The objects it counted set when to
// vacuum and analyze next (a vacuum's count covers only the pages it read).
func (s *Store) refreshStatistics() error {
	if s.dialect.analyze == "" {
		return nil
	}
	if err := s.db.Exec(s.dialect.analyze).Error; err != nil {
		return err
	}
	s.analyzedAt.Store(time.Now().UnixNano())
	return s.scheduleMaintenance()
}

// analyzeDue reports whether the statistics are due for a refresh.
func (s *Store) analyzeDue() bool {
	n, last := s.unanalyzed.Load(), s.analyzedAt.Load()
	if n < s.analyzeNext.Load() {
		return n >= analyzeAfter && time.Since(time.Unix(0, max(last, s.opened.Load()))) >= refreshEvery
	}
	return n >= analyzeAfter || time.Since(time.Unix(0, last)) >= earlyAnalyzeEvery
}

// scheduleMaintenance sets how many replaced and written rows make a
// vacuum and an analyze due, from the objects the statistics count where
// the store can read them: a store opened on a large database does not
// analyze early.
func (s *Store) scheduleMaintenance() error {
	vacuumAfter, analyzeNext := int64(analyzeAfter), int64(analyzeAfter)
	if s.dialect.estimateRows != "" {
		var objects int64
		if err := s.db.Raw(s.dialect.estimateRows).Scan(&objects).Error; err != nil {
			return fmt.Errorf("counting objects: %w", err)
		}
		vacuumAfter = min(max(objects/vacuumShare, vacuumAfterMin), analyzeAfter)
		analyzeNext = max(objects/analyzeShare, analyzeAfterMin)
	}
	s.vacuumAfter.Store(vacuumAfter)
	s.analyzeNext.Store(analyzeNext)
	return nil
}

func (s *Store) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Close implements storage.Interface. Writes already queued are written
// first; later ones fail.
func (s *Store) Close() error {
	if s.queue != nil { // a standby's reader has no writer
		s.queue.close()
	}
	return s.closeDB()
}

func (s *Store) closeDB() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}
