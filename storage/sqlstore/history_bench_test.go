package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkHistoryBytes measures what history costs a change of a typical
// Deployment (rollout status updates, then a new image), on SQLite: the
// bytes of its history row's patch against the object's JSON, and the
// time of a compaction that keeps history against one that does not, of
// the same log.
func BenchmarkHistoryBytes(b *testing.B) {
	const deployments, updates = 200, 6
	ctx := context.Background()
	deployment := func(i, generation int) *unstructured.Unstructured {
		image := "registry.example/shop/web:1.0"
		if generation == updates {
			image = "registry.example/shop/web:1.1"
		}
		u := object("Deployment", "shop", fmt.Sprintf("web-%d", i), fmt.Sprint(1000+generation))
		u.SetLabels(map[string]string{"app": "web", "tier": "front", "app.kubernetes.io/part-of": "shop"})
		u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "3", "team": "payments"})
		u.SetGeneration(int64(1 + generation/updates))
		container := map[string]any{
			"name": "web", "image": image, "imagePullPolicy": "IfNotPresent",
			"ports":     []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP", "name": "http"}},
			"env":       []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}, map[string]any{"name": "REGION", "value": "eu-west-1"}},
			"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
			"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": int64(8080), "scheme": "HTTP"},
				"periodSeconds": int64(10), "timeoutSeconds": int64(1), "successThreshold": int64(1), "failureThreshold": int64(3)},
			"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
		}
		u.Object["spec"] = map[string]any{
			"replicas": int64(3), "revisionHistoryLimit": int64(10), "progressDeadlineSeconds": int64(600),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "front"}},
				"spec": map[string]any{"containers": []any{container}, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
					"schedulerName": "default-scheduler", "terminationGracePeriodSeconds": int64(30), "securityContext": map[string]any{}},
			},
		}
		at := baseTime.Add(time.Duration(generation) * time.Minute).Format(time.RFC3339)
		ready := int64(generation % 4)
		u.Object["status"] = map[string]any{
			"observedGeneration": int64(1 + generation/updates), "replicas": int64(3), "updatedReplicas": ready,
			"readyReplicas": ready, "availableReplicas": ready,
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
					"message": "Deployment has minimum availability.", "lastUpdateTime": at, "lastTransitionTime": at},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
					"message": fmt.Sprintf(`ReplicaSet "web-%d-5d9c7b" has successfully progressed.`, i), "lastUpdateTime": at, "lastTransitionTime": at},
			},
		}
		return u
	}
	// fill writes every change and returns the bytes of the objects the
	// updates stored.
	fill := func(s storage.Interface) (objectBytes int) {
		for g := 0; g <= updates; g++ {
			changes := make([]storage.Change, deployments)
			for i := range changes {
				changes[i] = storage.Upsert(deployment(i, g))
			}
			if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, deploymentsGVR, changes); err != nil {
				b.Fatal(err)
			}
			if g == 0 {
				continue
			}
			res, err := s.List(ctx, &storage.ListQuery{GVR: deploymentsGVR})
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range res.Objects {
				objectBytes += len(o.Data)
			}
		}
		return objectBytes
	}
	var plain, kept time.Duration
	var objectBytes, patchBytes int64
	for range b.N {
		for _, keep := range []bool{false, true} {
			b.StopTimer()
			s := storagetest.Backends()[0].Open(b)
			objectBytes = int64(fill(s))
			current, _, err := s.Revision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if err := s.Compact(ctx, current, keep); err != nil {
				b.Fatal(err)
			}
			if keep {
				kept += time.Since(start)
				b.StopTimer()
				err = sqlstore.GormDB(s).Raw("SELECT COALESCE(SUM(LENGTH(patch)), 0) FROM history WHERE type = 'MODIFIED'").Scan(&patchBytes).Error
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			} else {
				plain += time.Since(start)
			}
		}
	}
	changes := float64(deployments * updates)
	b.ReportMetric(float64(objectBytes)/changes, "object-B/change")
	b.ReportMetric(float64(patchBytes)/changes, "patch-B/change")
	b.ReportMetric(float64(patchBytes)/float64(objectBytes), "patch/object")
	b.ReportMetric(float64(kept)/float64(plain), "compact-kept/plain")
}
