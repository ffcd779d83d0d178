package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// sizeObjects is how many pods BenchmarkBytesPerObject stores.
const sizeObjects = 20_000

// sizeTables are the tables whose bytes BenchmarkBytesPerObject counts.
var sizeTables = []string{"resources", "events", "attributes"}

// BenchmarkBytesPerObject stores sizeObjects pods as a member's API
// server serves them (managed fields, probes, status conditions) and
// prints the bytes each table takes in the database, data and indexes, per
// object and as a ratio to the objects' compact JSON as served, measured
// in the same run: after the initial sync, after every pod changed once
// (the log then holds every pre-image), and after the log was compacted
// and every pod changed once more.
func BenchmarkBytesPerObject(b *testing.B) {
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)
			ctx := context.Background()
			write := func(round int) {
				rng := rand.New(rand.NewPCG(11, 11))
				start := time.Now()
				for i := 0; i < sizeObjects; i += benchBatch {
					changes := make([]storage.Change, 0, benchBatch)
					for j := i; j < i+benchBatch; j++ {
						changes = append(changes, storage.Upsert(realisticPod(b, rng, j, round)))
					}
					if _, err := s.Apply(ctx, benchCluster(i), podsGVR, changes); err != nil {
						b.Fatal(err)
					}
				}
				rate := sizeObjects / time.Since(start).Seconds()
				b.ReportMetric(rate, fmt.Sprintf("round-%d-objects/s", round))
				b.Logf("%s: round %d wrote %d pods at %.0f/s", be.Name, round, sizeObjects, rate)
			}
			write(0)
			jsonBytes := servedJSONBytes(b, s)
			b.Logf("%s: %d pods, %.0f bytes of compact JSON each as served", be.Name, sizeObjects, float64(jsonBytes)/sizeObjects)
			report := func(phase, metric string) {
				sizes := tableBytes(b, be.Name, s)
				var total int64
				line := ""
				for _, t := range sizeTables {
					total += sizes[t]
					line += fmt.Sprintf("  %s %.0f B (%.2fx)", t, float64(sizes[t])/sizeObjects, float64(sizes[t])/float64(jsonBytes))
				}
				ratio := float64(total) / float64(jsonBytes)
				b.ReportMetric(ratio, metric+"-sql/json")
				b.Logf("%s: %-32s %5.0f B per object, %.2fx its JSON;%s", be.Name, phase, float64(total)/sizeObjects, ratio, line)
			}
			report("after the initial sync", "synced")
			write(1)
			report("after one change of each", "changed")
			// Databases keep the space compaction frees for later rows
			// rather than shrink their files: the steady state is a log
			// compacted as the log grows again.
			cur, _, err := s.Revision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Compact(ctx, cur); err != nil {
				b.Fatal(err)
			}
			write(2)
			report("compacted, then one more change", "steady")
		})
	}
}

// servedJSONBytes adds up the JSON of every stored object as List serves it.
func servedJSONBytes(b *testing.B, s storage.Interface) int64 {
	var total, n int64
	q := storage.ListQuery{GVR: podsGVR, Limit: storage.MaxLimit}
	for {
		res, err := s.List(context.Background(), &q)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range res.Objects {
			total += int64(len(o.Data))
		}
		n += int64(len(res.Objects))
		if res.Continue == "" {
			break
		}
		q.Continue = res.Continue
	}
	if n != sizeObjects {
		b.Fatalf("listed %d objects, want %d", n, sizeObjects)
	}
	return total
}

// tableBytes returns the bytes each of sizeTables takes, data and indexes,
// as the database accounts for them: SQLite's pages, InnoDB's pages after
// ANALYZE TABLE has counted them, PostgreSQL's relation files with their
// TOAST and indexes.
func tableBytes(b *testing.B, backend string, s *sqlstore.Store) map[string]int64 {
	db := sqlstore.GormDB(s)
	var query string
	switch backend {
	case "sqlite":
		return sqliteTableBytes(b, db)
	case "mysql":
		if err := db.Exec("ANALYZE TABLE resources, events, attributes").Error; err != nil {
			b.Fatal(err)
		}
		query = "SELECT table_name AS name, data_length + index_length AS bytes FROM information_schema.tables WHERE table_schema = DATABASE()"
	case "postgres":
		query = "SELECT relname AS name, pg_total_relation_size(oid) AS bytes FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
	}
	var rows []struct {
		Name  string
		Bytes int64
	}
	if err := db.Raw(query).Scan(&rows).Error; err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Name] = r.Bytes
	}
	return out
}

// realisticPod is pod i of a Deployment's ReplicaSet as a member's API
// server serves it, about 5 KB of JSON; round changes its status, as a
// restart of its container does.
func realisticPod(b *testing.B, rng *rand.Rand, i, round int) *unstructured.Unstructured {
	ns := fmt.Sprintf("ns-%d", i%50)
	team := rng.IntN(200)
	app := fmt.Sprintf("team-%d-app-%d", team, i/20)
	hash := fmt.Sprintf("%08x", rng.Uint32())[:7] + "c9"
	name := fmt.Sprintf("%s-%s-%05x", app, hash, rng.IntN(1<<20))
	created := baseTime.Add(time.Duration(i) * time.Second)
	started := created.Add(time.Duration(2+rng.IntN(30)) * time.Second)
	changed := started.Add(time.Duration(round) * time.Hour)
	node := fmt.Sprintf("node-%d", rng.IntN(300))
	podIP := fmt.Sprintf("10.%d.%d.%d", rng.IntN(256), rng.IntN(256), rng.IntN(256))
	hostIP := fmt.Sprintf("192.168.%d.%d", rng.IntN(256), rng.IntN(256))
	image := fmt.Sprintf("registry.example/team-%d/%s:1.%d.%d", team, app, rng.IntN(20), rng.IntN(10))
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	uid := func() string {
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<16), rng.IntN(1<<16), rng.Uint64()&(1<<48-1))
	}
	doc := fmt.Sprintf(`{
 "apiVersion": "v1", "kind": "Pod",
 "metadata": {
  "name": %[1]q, "generateName": %[2]q, "namespace": %[3]q, "uid": %[4]q, "resourceVersion": "%[5]d",
  "creationTimestamp": %[6]q,
  "labels": {"app": %[7]q, "pod-template-hash": %[8]q, "tier": "back", "team": "team-%[9]d"},
  "annotations": {"kubectl.kubernetes.io/restartedAt": %[6]q, "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "%[7]s-%[8]s", "uid": %[10]q, "controller": true, "blockOwnerDeletion": true}],
  "managedFields": [
   {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": %[6]q, "fieldsType": "FieldsV1",
    "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/restartedAt": {}, "f:prometheus.io/port": {}, "f:prometheus.io/scrape": {}},
     "f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:team": {}, "f:tier": {}},
     "f:ownerReferences": {".": {}, "k:{\"uid\":\"%[10]s\"}": {}}},
     "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}},
       "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
      "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}},
       "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
      "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
      "f:readinessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}, "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
      "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
      "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
     "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}},
   {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": %[11]q, "fieldsType": "FieldsV1", "subresource": "status",
    "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
     "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
     "k:{\"type\":\"PodReadyToStartContainers\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
     "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
     "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"%[12]s\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}}
  ]
 },
 "spec": {
  "containers": [{"name": "app", "image": %[13]q, "imagePullPolicy": "IfNotPresent",
   "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
   "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
   "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
   "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
   "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
   "volumeMounts": [{"name": "kube-api-access-%[14]s", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
   "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
  "volumes": [{"name": "kube-api-access-%[14]s", "projected": {"defaultMode": 420, "sources": [
   {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
   {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
   {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
  "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
  "serviceAccountName": "default", "serviceAccount": "default", "nodeName": %[15]q, "securityContext": {},
  "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
  "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
   {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
 },
 "status": {
  "phase": "Running",
  "conditions": [
   {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": %[16]q},
   {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": %[6]q},
   {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": %[11]q},
   {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": %[11]q},
   {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": %[6]q}],
  "hostIP": %[17]q, "hostIPs": [{"ip": %[17]q}], "podIP": %[12]q, "podIPs": [{"ip": %[12]q}], "startTime": %[6]q,
  "containerStatuses": [{"name": "app", "state": {"running": {"startedAt": %[11]q}}, "lastState": {}, "ready": true, "restartCount": %[18]d,
   "image": %[13]q, "imageID": "%[13]s@sha256:%[19]s", "containerID": "containerd://%[20]s", "started": true,
   "volumeMounts": [{"name": "kube-api-access-%[14]s", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true, "recursiveReadOnly": "Disabled"}]}],
  "qosClass": "Burstable"
 }
}`, name, app+"-"+hash+"-", ns, uid(), 1000+i+round*sizeObjects, ts(created), app, hash, team, uid(), ts(changed), podIP, image,
		fmt.Sprintf("%05x", rng.IntN(1<<20)), node, ts(started), hostIP, round, fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()),
		fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()))
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		b.Fatal(err)
	}
	return u
}

// sqliteTableBytes counts the pages each table and its indexes use: the
// pages in use (not on the free list) before and after dropping it, in a
// transaction rolled back. The SQLite build has no dbstat table.
func sqliteTableBytes(b *testing.B, db *gorm.DB) map[string]int64 {
	out := map[string]int64{}
	rollback := errors.New("rollback")
	err := db.Transaction(func(tx *gorm.DB) error {
		used := func() int64 {
			var pages, free, size int64
			for _, p := range []struct {
				pragma string
				v      *int64
			}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
				if err := tx.Raw("PRAGMA " + p.pragma).Scan(p.v).Error; err != nil {
					b.Fatal(err)
				}
			}
			return (pages - free) * size
		}
		before := used()
		for _, t := range sizeTables {
			if err := tx.Exec("DROP TABLE " + t).Error; err != nil {
				b.Fatal(err)
			}
			after := used()
			out[t], before = before-after, after
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		b.Fatal(err)
	}
	return out
}
