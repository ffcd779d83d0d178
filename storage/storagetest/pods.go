package storagetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podsPerReplicaSet is how many of RealisticPod's pods one ReplicaSet has.
const podsPerReplicaSet = 20

// RealisticPod is pod i of a Deployment's ReplicaSet as a member's API
// server serves it, about 5 KB of JSON; round changes its status, as a
// restart of its container does. The pods of a ReplicaSet (i divided by
// podsPerReplicaSet) share what they share in a member: the namespace,
// the labels, the image and the owner; each has a name, a node and an
// address of its own, drawn from rng.
func RealisticPod(rng *rand.Rand, i, round int) *unstructured.Unstructured {
	rs := i / podsPerReplicaSet
	set := rand.New(rand.NewPCG(uint64(rs), 0))
	ns := fmt.Sprintf("ns-%d", rs%50)
	team := set.IntN(200)
	app := fmt.Sprintf("team-%d-app-%d", team, rs)
	hash := fmt.Sprintf("%08x", set.Uint32())[:7] + "c9"
	image := fmt.Sprintf("registry.example/team-%d/%s:1.%d.%d", team, app, set.IntN(20), set.IntN(10))
	uid := func(rng *rand.Rand) string {
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<16), rng.IntN(1<<16), rng.Uint64()&(1<<48-1))
	}
	owner := uid(set)
	name := fmt.Sprintf("%s-%s-%05x", app, hash, rng.IntN(1<<20))
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	started := created.Add(time.Duration(2+rng.IntN(30)) * time.Second)
	changed := started.Add(time.Duration(round) * time.Hour)
	node := fmt.Sprintf("node-%d", rng.IntN(300))
	podIP := fmt.Sprintf("10.%d.%d.%d", rng.IntN(256), rng.IntN(256), rng.IntN(256))
	hostIP := fmt.Sprintf("192.168.%d.%d", rng.IntN(256), rng.IntN(256))
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
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
}`, name, app+"-"+hash+"-", ns, uid(rng), 1000+i+round*1_000_000, ts(created), app, hash, team, owner, ts(changed), podIP, image,
		fmt.Sprintf("%05x", rng.IntN(1<<20)), node, ts(started), hostIP, round, fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()),
		fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()))
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(err) // the template is constant
	}
	return u
}
