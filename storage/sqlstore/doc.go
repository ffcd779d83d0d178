// Package sqlstore implements storage.Interface over SQL through gorm, for
// MySQL/MariaDB, PostgreSQL and SQLite.
//
// Writers serialize on one counter row (panorama_meta.revision), locked for
// the length of each write transaction. Transactions therefore commit in
// revision order, and a reader that tails the log by "revision > last seen"
// never misses a revision that commits late.
//
// Within a process that lock is taken once per group, not per caller
// (group.go): a Store has one writer, which writes the batches of every
// caller waiting meanwhile in one transaction and one counter update, each
// batch at revisions of its own, their rows in shared multi-row statements
// (pending.go), and answers each caller with its own result. A batch that
// fails is written alone, after the group has been written without it; a
// caller that gives up is dropped, or rolls its group back and the rest
// are written again without it. Processes sharing the database still
// serialize on the row, so groups commit in revision order across
// processes too.
//
// Where things are:
//
//   - store.go: Options, Open, the Store and its table maintenance.
//   - dialect.go: what differs between the databases, asked by every other
//     file; dialect_mysql.go, dialect_postgres.go and dialect_sqlite.go:
//     each database's (open, error classification, schema changes,
//     notification). Adding a database is a file and a line in
//     knownDialects (docs/architecture.md, "Add a database").
//   - schema.go: tables and migrations; rows.go, blob.go, json.go: how
//     objects are stored and read back.
//   - write.go, group.go, pending.go, lookup.go, arrays.go, validate.go:
//     writes, in groups on the revision counter; conflict.go: retrying a
//     group the database refused for a conflict; fence.go: owner epochs.
//   - read.go, list.go, probe.go, count.go, summary.go: gets, lists and
//     pages, how they test attributes, counts.
//   - log.go, notify.go, history.go, forget.go: the change log, how readers
//     in other processes learn of writes, the history past compaction,
//     and forgetting what a Cluster no longer wants.
//   - fields.go: declared indexed fields; replica.go: reads from a
//     PostgreSQL streaming replica; metrics.go: storage's metrics.
package sqlstore
