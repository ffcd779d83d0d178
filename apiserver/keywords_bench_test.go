package apiserver

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage/sqlstore"
)

// The keyword half of BenchmarkRelations: the annotations members' pods
// carry that people search for (a change ticket, a commit, a hostname, an
// incident), the keyword queries over them, and what their text index
// costs each database.

// incidentEvery is how many pods of relatedPod's have one under an
// incident: each its own ticket.
const incidentEvery = 1000

// deployers roll ReplicaSets out: a pipeline nine times in ten, otherwise
// one of the people.
var deployers = []string{"jane.doe", "raj.kumar", "li.chen", "ana.garcia"}

// rollout is what a ReplicaSet's pods carry of the change that rolled it
// out (their pod template's annotations).
type rollout struct {
	ticket, deployer, commit string
}

// rolloutOf is the rollout of app's ReplicaSet: a change ticket among 100
// (each of about 1% of the pods), rolled out by argocd or a person, of a
// commit of its own.
func rolloutOf(app string) rollout {
	h := fnv.New64a()
	_, _ = h.Write([]byte(app))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0))
	r := rollout{ticket: fmt.Sprintf("CHG%07d", 40_000+rng.IntN(100)), deployer: "argocd",
		commit: fmt.Sprintf("%016x%016x%08x", rng.Uint64(), rng.Uint64(), rng.Uint32())}
	if rng.IntN(10) == 0 {
		r.deployer = deployers[rng.IntN(len(deployers))]
	}
	return r
}

// incidentOf is the ticket of the incident the i-th pod is under, or "".
func incidentOf(i int) string {
	if i%incidentEvery != 0 {
		return ""
	}
	return fmt.Sprintf("INC%07d", 12_000+i/incidentEvery)
}

// annotateRelatedPod gives u, the i-th pod, of app's ReplicaSet, running
// image, the annotations a workload's pods carry beyond RealisticPod's:
// its rollout's change cause and commit, its hostname and, when it is
// under one, its incident.
func annotateRelatedPod(u *unstructured.Unstructured, i int, app, image string) {
	r := rolloutOf(app)
	annotations := u.GetAnnotations()
	annotations["kubernetes.io/change-cause"] = fmt.Sprintf("%s: %s rolled out %s", r.ticket, r.deployer, image)
	annotations["deploy.example.com/git-commit"] = r.commit
	annotations["external-dns.alpha.kubernetes.io/hostname"] = app + ".prod.example.com"
	if inc := incidentOf(i); inc != "" {
		annotations["incident.example.com/ticket"] = inc + ": crash loop after a node drain, see the postmortem"
	}
	u.SetAnnotations(annotations)
}

// keywordQueries are the keyword queries (q=) of the fleet's pods, each a
// term as people type them: the incident of the pod in the middle of the
// fleet (one pod), the change ticket of the most pods (about 1%), argocd
// (nine pods in ten), every incident's (inc*), that ticket's pods argocd
// rolled out (two words), and the pods of team (the baseline's) argocd
// rolled out (a keyword and a label).
func (f *relationsFleet) keywordQueries(team string) []relationQuery {
	rare := f.pods[len(f.pods)/2/incidentEvery*incidentEvery].incident
	ticket := mostCommon(f.pods, func(p fleetPod) string { return p.ticket })
	pods := f.selecting
	q := func(terms string) string { return "/api/v1/pods?q=" + url.QueryEscape(terms) }
	return []relationQuery{
		{"pods q=" + rare + " (rare)", "q-rare", q(rare),
			pods(func(p fleetPod) bool { return p.incident == rare })},
		{"pods q=" + ticket + " (1%)", "q-1pct", q(ticket),
			pods(func(p fleetPod) bool { return p.ticket == ticket })},
		{"pods q=argocd (common)", "q-common", q("argocd"),
			pods(func(p fleetPod) bool { return p.deployer == "argocd" })},
		{"pods q=inc* (prefix)", "q-prefix", q("inc*"),
			pods(func(p fleetPod) bool { return p.incident != "" })},
		{"pods q=" + ticket + ",argocd (two words)", "q-two-words", q(ticket + ",argocd"),
			pods(func(p fleetPod) bool { return p.ticket == ticket && p.deployer == "argocd" })},
		{"pods q=argocd labelSelector team=" + team, "q-label", q("argocd") + "&labelSelector=" + url.QueryEscape("team="+team),
			pods(func(p fleetPod) bool { return p.team == team && p.deployer == "argocd" })},
	}
}

// reportKeywordBytes prints what keyword search costs the database: the
// keyword documents (object_keywords) and their text index, per pod and
// as a ratio to the pods' JSON. The documents are written once each, so
// they are measured as the database holds them, save that MySQL's full-text
// index keeps recent documents in memory until the table is rebuilt. It
// drops the keyword tables on SQLite.
func reportKeywordBytes(b *testing.B, backend string, opts sqlstore.Options, f *relationsFleet) {
	exec, scan, closeDB := rawDB(b, opts)
	defer closeDB()
	rows := scan("SELECT COUNT(*) FROM object_keywords")
	words := scan("SELECT SUM(LENGTH(words) - LENGTH(REPLACE(words, ' ', '')) + 1) FROM object_keywords")
	docBytes := scan("SELECT SUM(LENGTH(words)) FROM object_keywords")
	total := keywordBytes(b, opts.Driver, exec, scan)
	n := float64(len(f.pods))
	perPod := float64(total) / n
	ratio := float64(total) / float64(f.jsonBytes)
	b.ReportMetric(perPod, "keyword-B/pod")
	b.ReportMetric(ratio, "keyword-bytes/json")
	b.Logf("%s: keywords: %d documents (pods, services, config maps), %.1f words and %.0f B each: %.0f B per pod with the text index, %.3fx the pods' JSON (%.0f B each)",
		backend, rows, float64(words)/float64(rows), float64(docBytes)/float64(rows), perPod, ratio, float64(f.jsonBytes)/n)
}

// keywordBytes returns the bytes the keyword documents and their text
// index take: on SQLite, the database's pages, packed, with them less
// without them (the FTS5 index's shadow tables are SQLite's own); on
// MySQL, the files of the table and of its full-text index's auxiliary
// tables, which information_schema.tables does not list, once rebuilt;
// on PostgreSQL, the table's relation, TOAST and indexes, once vacuumed
// (which moves the GIN index's pending entries into it).
func keywordBytes(b *testing.B, driver string, exec func(string), scan func(string) int64) int64 {
	switch driver {
	case "sqlite":
		before := rebuiltBytes(b, driver, nil, exec, scan)
		exec("DROP TABLE object_keywords_words")
		exec("DROP TABLE object_keywords")
		return before - rebuiltBytes(b, driver, nil, exec, scan)
	case "mysql":
		exec("OPTIMIZE TABLE object_keywords")
		return scan(`SELECT SUM(allocated_size) FROM information_schema.innodb_sys_tablespaces
			WHERE name = CONCAT(DATABASE(), '/object_keywords') OR name LIKE CONCAT(DATABASE(), '/FTS\_',
			LPAD(LOWER(HEX((SELECT table_id FROM information_schema.innodb_sys_tables WHERE name = CONCAT(DATABASE(), '/object_keywords')))), 16, '0'), '\_%')`)
	case "postgres":
		exec("VACUUM object_keywords")
		return scan("SELECT pg_total_relation_size('object_keywords')")
	}
	b.Fatalf("no keyword bytes for %s", driver)
	return 0
}
