package storage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// decode reads an object as a member serves it: YAML through JSON, so
// that numbers are float64 as encoding/json decodes them.
func decode(t *testing.T, y string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(y), &obj); err != nil {
		t.Fatalf("decode: %v\n%s", err, y)
	}
	return obj
}

func refValues(refs []Reference) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Value()
	}
	return out
}

// checkReferences asserts that refs are exactly want, in order, and that
// each is the Reference its Value parses as (so Group, Kind, Namespace and
// Name are each asserted, not only their concatenation).
func checkReferences(t *testing.T, name string, refs []Reference, want []string) {
	t.Helper()
	if got := refValues(refs); !slices.Equal(got, want) {
		t.Errorf("%s: got\n\t%s\nwant\n\t%s", name, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	for _, r := range refs {
		if parsed, ok := ParseReferenceValue(r.Value()); !ok || parsed != r {
			t.Errorf("%s: %#v has the value %q, which parses as %#v (%v)", name, r, r.Value(), parsed, ok)
		}
	}
}

var (
	podsResource = schema.GroupResource{Resource: "pods"}
	gatewayAPI   = "gateway.networking.k8s.io"
)

// kubeletPod is a pod of a Deployment as the scheduler and kubelet leave
// it: admission's projected token volume, containers with env and envFrom,
// an ephemeral volume and a claim from a template, whose names only the pod
// has.
const kubeletPod = `
apiVersion: v1
kind: Pod
metadata:
  name: web-7d9f8c-x2k4p
  namespace: shop
  uid: 0b6a3c2e-1f0e-4c55-9d51-0c1f3b1f6f9a
  labels: {app: web, pod-template-hash: 7d9f8c}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9f8c, uid: 4d1c, controller: true, blockOwnerDeletion: true}
spec:
  serviceAccountName: web
  serviceAccount: web
  nodeName: node-a
  priorityClassName: shop-critical
  runtimeClassName: gvisor
  schedulerName: default-scheduler
  terminationGracePeriodSeconds: 30
  imagePullSecrets: [{name: regcred}]
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: one-gpu}
  - {name: shared, resourceClaimName: shared-fpga}
  volumes:
  - name: kube-api-access-7xk2q
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {expirationSeconds: 3607, path: token}
      - configMap:
          name: kube-root-ca.crt
          items: [{key: ca.crt, path: ca.crt}]
      - downwardAPI:
          items: [{path: namespace, fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}]
      - secret: {name: web-extra-certs}
  - {name: config, configMap: {name: web-config, defaultMode: 420}}
  - {name: tls, secret: {secretName: web-tls, defaultMode: 420}}
  - {name: data, persistentVolumeClaim: {claimName: web-data}}
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec: {accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 1Gi}}}
  - name: vault
    csi: {driver: secrets-store.csi.k8s.io, readOnly: true, nodePublishSecretRef: {name: vault-creds}}
  - {name: cache, emptyDir: {}}
  initContainers:
  - name: migrate
    image: registry.example.com/shop/migrate:1.4
    envFrom: [{secretRef: {name: db-admin}}]
  containers:
  - name: app
    image: registry.example.com/shop/web:1.4
    ports: [{containerPort: 8080, protocol: TCP}]
    env:
    - {name: LOG_LEVEL, value: info}
    - name: DB_PASSWORD
      valueFrom: {secretKeyRef: {name: db-pass, key: password}}
    - name: FEATURE_FLAGS
      valueFrom: {configMapKeyRef: {name: web-flags, key: flags, optional: true}}
    - name: POD_IP
      valueFrom: {fieldRef: {apiVersion: v1, fieldPath: status.podIP}}
    envFrom:
    - configMapRef: {name: web-env}
    - {prefix: SMTP_, secretRef: {name: smtp}}
    volumeMounts: [{name: kube-api-access-7xk2q, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}]
  - name: proxy
    image: envoyproxy/envoy:v1.31
    env:
    - name: DB_PASSWORD
      valueFrom: {secretKeyRef: {name: db-pass, key: password}}
status:
  phase: Running
  hostIP: 10.0.0.4
  podIP: 10.244.1.17
  conditions: [{type: Ready, status: "True", lastTransitionTime: "2026-12-01T10:00:00Z"}]
  containerStatuses:
  - {name: app, ready: true, restartCount: 0, image: registry.example.com/shop/web:1.4, imageID: "sha256:1a2b", state: {running: {startedAt: "2026-12-01T10:00:00Z"}}}
  resourceClaimStatuses:
  - {name: gpu, resourceClaimName: web-7d9f8c-x2k4p-gpu-8vz7h}
  - {name: shared}
  extendedResourceClaimStatus:
    resourceClaimName: web-7d9f8c-x2k4p-extended-resources-k2m9d
    requestMappings: [{containerName: app, resourceName: example.com/gpu, requestName: container-0-request-0}]
`

// podTemplateSpec is the template of a Deployment: what a pod of it
// refers to, less what only a pod has.
const podTemplateSpec = `
      metadata: {labels: {app: web}}
      spec:
        serviceAccount: legacy-builder
        priorityClassName: batch-low
        imagePullSecrets: [{name: regcred}]
        volumes:
        - {name: config, configMap: {name: web-config}}
        - name: scratch
          ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}
        - {name: ceph, cephfs: {monitors: ["10.0.0.1:6789"], secretRef: {name: ceph-key}}}
        - {name: share, azureFile: {secretName: azure-share, shareName: docs}}
        - {name: claims, persistentVolumeClaim: {claimName: reports}}
        containers:
        - name: app
          image: registry.example.com/shop/report:2
          envFrom: [{secretRef: {name: report-creds}}]
`

// TestReferencesOf: the references Kubernetes defines, of objects as
// members serve them, sorted by value, each once.
func TestReferencesOf(t *testing.T) {
	workloadRefs := []string{
		"ConfigMap/web-config/shop",
		"PersistentVolumeClaim/reports/shop",
		"PriorityClass.scheduling.k8s.io/batch-low",
		"Secret/azure-share/shop",
		"Secret/ceph-key/shop",
		"Secret/regcred/shop",
		"Secret/report-creds/shop",
		"ServiceAccount/legacy-builder/shop",
	}
	for _, c := range []struct {
		name string
		gr   schema.GroupResource
		obj  string
		want []string
	}{
		{"pod", podsResource, kubeletPod, []string{
			"ConfigMap/kube-root-ca.crt/shop",
			"ConfigMap/web-config/shop",
			"ConfigMap/web-env/shop",
			"ConfigMap/web-flags/shop",
			"Node/node-a",
			"PersistentVolumeClaim/web-7d9f8c-x2k4p-scratch/shop",
			"PersistentVolumeClaim/web-data/shop",
			"PriorityClass.scheduling.k8s.io/shop-critical",
			"ReplicaSet.apps/web-7d9f8c/shop",
			"ResourceClaim.resource.k8s.io/shared-fpga/shop",
			"ResourceClaim.resource.k8s.io/web-7d9f8c-x2k4p-extended-resources-k2m9d/shop",
			"ResourceClaim.resource.k8s.io/web-7d9f8c-x2k4p-gpu-8vz7h/shop",
			"ResourceClaimTemplate.resource.k8s.io/one-gpu/shop",
			"RuntimeClass.node.k8s.io/gvisor",
			"Secret/db-admin/shop",
			"Secret/db-pass/shop",
			"Secret/regcred/shop",
			"Secret/smtp/shop",
			"Secret/vault-creds/shop",
			"Secret/web-extra-certs/shop",
			"Secret/web-tls/shop",
			"ServiceAccount/web/shop",
		}},
		{"deployment", schema.GroupResource{Group: "apps", Resource: "deployments"}, `
metadata: {name: report, namespace: shop}
spec:
  replicas: 2
  template:` + podTemplateSpec, workloadRefs},
		{"replication controller", schema.GroupResource{Resource: "replicationcontrollers"}, `
metadata: {name: report, namespace: shop}
spec:
  template:` + podTemplateSpec, workloadRefs},
		{"job of a cron job", schema.GroupResource{Group: "batch", Resource: "jobs"}, `
metadata:
  name: report-29410560
  namespace: shop
  ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: report, uid: 9c1e, controller: true}]
spec:
  backoffLimit: 6
  template:` + podTemplateSpec, slices.Insert(slices.Clone(workloadRefs), 1, "CronJob.batch/report/shop")},
		{"cron job", schema.GroupResource{Group: "batch", Resource: "cronjobs"}, `
metadata: {name: report, namespace: shop}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:` + strings.ReplaceAll(podTemplateSpec, "\n", "\n    "), workloadRefs},
		{"pod template", schema.GroupResource{Resource: "podtemplates"}, `
metadata: {name: report, namespace: shop}
template:` + strings.ReplaceAll(podTemplateSpec, "\n    ", "\n"), workloadRefs},
		{"a template's nodeName and ephemeral volumes name nothing yet", schema.GroupResource{Group: "apps", Resource: "daemonsets"}, `
metadata: {name: agent, namespace: kube-system}
spec:
  template:
    spec:
      nodeName: node-a
      serviceAccountName: agent
      volumes: [{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}]
`, []string{"ServiceAccount/agent/kube-system"}},
		{"stateful set", schema.GroupResource{Group: "apps", Resource: "statefulsets"}, `
metadata: {name: db, namespace: shop}
spec:
  template:
    spec:
      serviceAccountName: db
      containers: [{name: pg, image: postgres:17, envFrom: [{secretRef: {name: db-pass}}]}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {storageClassName: fast-ssd, accessModes: [ReadWriteOnce]}
  - metadata: {name: wal}
    spec: {accessModes: [ReadWriteOnce]}
`, []string{"Secret/db-pass/shop", "ServiceAccount/db/shop", "StorageClass.storage.k8s.io/fast-ssd"}},
		{"service account", schema.GroupResource{Resource: "serviceaccounts"}, `
metadata: {name: builder, namespace: ci}
secrets: [{name: builder-token}, {name: builder-token}]
imagePullSecrets: [{name: ghcr}]
`, []string{"Secret/builder-token/ci", "Secret/ghcr/ci"}},
		{"endpoints", schema.GroupResource{Resource: "endpoints"}, `
metadata: {name: web, namespace: shop}
subsets:
- addresses:
  - {ip: 10.244.1.17, nodeName: node-a, targetRef: {kind: Pod, name: web-7d9f8c-x2k4p, namespace: shop, uid: 0b6a}}
  - {ip: 10.0.0.9, targetRef: {kind: Pod, name: bare}}
  - {ip: 10.0.0.10}
  notReadyAddresses:
  - {ip: 10.244.2.3, targetRef: {kind: Pod, name: web-7d9f8c-q9w8e, namespace: shop}}
  ports: [{port: 8080, protocol: TCP}]
`, []string{"Pod/bare/shop", "Pod/web-7d9f8c-q9w8e/shop", "Pod/web-7d9f8c-x2k4p/shop"}},
		{"endpoint slice", schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, `
metadata:
  name: web-abc12
  namespace: shop
  labels: {kubernetes.io/service-name: web}
  ownerReferences: [{apiVersion: v1, kind: Service, name: web, uid: 77aa, controller: true}]
addressType: IPv4
endpoints:
- {addresses: [10.244.1.17], nodeName: node-a, targetRef: {kind: Pod, name: web-7d9f8c-x2k4p, namespace: shop}}
- {addresses: [10.0.5.5], targetRef: {apiVersion: example.com/v1, kind: Machine, name: vm-5, namespace: infra}}
`, []string{"Machine.example.com/vm-5/infra", "Pod/web-7d9f8c-x2k4p/shop", "Service/web/shop"}},
		{"ingress", schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, `
metadata: {name: shop, namespace: shop}
spec:
  ingressClassName: nginx
  defaultBackend: {service: {name: default-http, port: {number: 80}}}
  tls: [{hosts: [shop.example.com], secretName: shop-tls}, {hosts: [other.example.com]}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
      - {path: /static, pathType: Prefix, backend: {resource: {apiGroup: k8s.example.com, kind: StorageBucket, name: static}}}
      - {path: /icons, pathType: Prefix, backend: {resource: {kind: ConfigMap, name: icons}}}
`, []string{"ConfigMap/icons/shop", "IngressClass.networking.k8s.io/nginx", "Secret/shop-tls/shop",
			"Service/default-http/shop", "Service/web/shop", "StorageBucket.k8s.example.com/static/shop"}},
		{"gateway", schema.GroupResource{Group: gatewayAPI, Resource: "gateways"}, `
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: istio
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - name: https
    port: 443
    protocol: HTTPS
    tls:
      mode: Terminate
      certificateRefs:
      - {name: edge-cert}
      - {group: "", kind: Secret, name: shared-cert, namespace: certs}
`, []string{"GatewayClass.gateway.networking.k8s.io/istio", "Secret/edge-cert/infra", "Secret/shared-cert/certs"}},
		{"http route", schema.GroupResource{Group: gatewayAPI, Resource: "httproutes"}, `
metadata: {name: shop, namespace: shop}
spec:
  parentRefs:
  - {name: edge, namespace: infra, sectionName: https}
  - {group: "", kind: Service, name: web, port: 8080}
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs:
    - {name: web, port: 8080, weight: 90}
    - {group: "", kind: Service, name: web-canary, port: 8080, weight: 10}
    - {group: multicluster.x-k8s.io, kind: ServiceImport, name: web, namespace: shared}
`, []string{"Gateway.gateway.networking.k8s.io/edge/infra", "Service/web-canary/shop", "Service/web/shop",
			"ServiceImport.multicluster.x-k8s.io/web/shared"}},
		{"tcp route", schema.GroupResource{Group: gatewayAPI, Resource: "tcproutes"}, `
metadata: {name: pg, namespace: db}
spec:
  parentRefs: [{name: edge, namespace: infra, sectionName: pg}]
  rules: [{backendRefs: [{name: pg, port: 5432}]}]
`, []string{"Gateway.gateway.networking.k8s.io/edge/infra", "Service/pg/db"}},
		{"horizontal pod autoscaler", schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, `
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
`, []string{"Deployment.apps/web/shop"}},
		{"persistent volume claim", schema.GroupResource{Resource: "persistentvolumeclaims"}, `
metadata: {name: restored, namespace: shop}
spec:
  storageClassName: fast-ssd
  volumeName: pvc-5f0c
  dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: nightly}
  dataSourceRef: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: nightly, namespace: backups}
`, []string{"PersistentVolume/pvc-5f0c", "StorageClass.storage.k8s.io/fast-ssd",
			"VolumeSnapshot.snapshot.storage.k8s.io/nightly/backups", "VolumeSnapshot.snapshot.storage.k8s.io/nightly/shop"}},
		{"a claim of no class", schema.GroupResource{Resource: "persistentvolumeclaims"}, `
metadata: {name: clone, namespace: shop}
spec:
  storageClassName: ""
  dataSource: {kind: PersistentVolumeClaim, name: web-data}
  dataSourceRef: {kind: PersistentVolumeClaim, name: web-data}
`, []string{"PersistentVolumeClaim/web-data/shop"}},
		{"persistent volume", schema.GroupResource{Resource: "persistentvolumes"}, `
metadata: {name: pvc-5f0c}
spec:
  storageClassName: fast-ssd
  claimRef: {apiVersion: v1, kind: PersistentVolumeClaim, name: restored, namespace: shop, uid: 5f0c}
  csi:
    driver: ebs.csi.aws.com
    volumeHandle: vol-0abc
    nodeStageSecretRef: {name: ebs-creds, namespace: kube-system}
    controllerExpandSecretRef: {name: ebs-admin, namespace: kube-system}
    nodePublishSecretRef: {name: no-namespace}
`, []string{"PersistentVolumeClaim/restored/shop", "Secret/ebs-admin/kube-system", "Secret/ebs-creds/kube-system",
			"StorageClass.storage.k8s.io/fast-ssd"}},
		{"volume attachment", schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, `
metadata: {name: csi-4f1e}
spec: {attacher: ebs.csi.aws.com, nodeName: node-a, source: {persistentVolumeName: pvc-5f0c}}
`, []string{"Node/node-a", "PersistentVolume/pvc-5f0c"}},
		{"role binding", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, `
metadata: {name: deployers, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {kind: ServiceAccount, name: deployer}
- {kind: ServiceAccount, name: argocd-application-controller, namespace: argocd}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice@example.com}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:serviceaccounts:ci"}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "https://issuer.example.com#bob"}
`, []string{"ClusterRole.rbac.authorization.k8s.io/edit", "Group.rbac.authorization.k8s.io/system:serviceaccounts:ci",
			"ServiceAccount/argocd-application-controller/argocd", "ServiceAccount/deployer/shop",
			"User.rbac.authorization.k8s.io/alice@example.com"}},
		{"role binding to a role", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, `
metadata: {name: readers, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
`, []string{"Role.rbac.authorization.k8s.io/reader/shop"}},
		{"cluster role binding", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, `
metadata: {name: admins}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:masters"}
- {kind: ServiceAccount, name: no-namespace}
- {kind: ServiceAccount, name: flux, namespace: flux-system}
`, []string{"ClusterRole.rbac.authorization.k8s.io/cluster-admin", "Group.rbac.authorization.k8s.io/system:masters",
			"ServiceAccount/flux/flux-system"}},
		{"webhooks", schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, `
metadata: {name: policy}
webhooks:
- name: validate.kyverno.svc
  clientConfig: {service: {name: kyverno-svc, namespace: kyverno, path: /validate, port: 443}, caBundle: LS0t}
- name: external.example.com
  clientConfig: {url: "https://hooks.example.com/validate"}
`, []string{"Service/kyverno-svc/kyverno"}},
		{"api service", schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, `
metadata: {name: v1beta1.metrics.k8s.io}
spec: {group: metrics.k8s.io, version: v1beta1, service: {name: metrics-server, namespace: kube-system, port: 443}}
`, []string{"Service/metrics-server/kube-system"}},
		{"custom resource definition", schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, `
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  conversion:
    strategy: Webhook
    webhook: {clientConfig: {service: {name: cert-manager-webhook, namespace: cert-manager, path: /convert}}}
`, []string{"Service/cert-manager-webhook/cert-manager"}},
		{"event", schema.GroupResource{Resource: "events"}, `
metadata: {name: web-7d9f8c-x2k4p.17a2, namespace: shop}
involvedObject: {apiVersion: v1, kind: Pod, name: web-7d9f8c-x2k4p, namespace: shop, fieldPath: "spec.containers{app}"}
reason: BackOff
count: 3
`, []string{"Pod/web-7d9f8c-x2k4p/shop"}},
		{"event of a node", schema.GroupResource{Resource: "events"}, `
metadata: {name: node-a.17a3, namespace: default}
involvedObject: {kind: Node, name: node-a, uid: node-a}
reason: NodeNotReady
`, []string{"Node/node-a"}},
		{"events.k8s.io event", schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, `
metadata: {name: web.17a4, namespace: shop}
regarding: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}
related: {apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9f8c, namespace: shop}
reason: ScalingReplicaSet
`, []string{"Deployment.apps/web/shop", "ReplicaSet.apps/web-7d9f8c/shop"}},
		{"owners of a namespaced object: cluster-scoped kinds have no namespace", schema.GroupResource{Resource: "configmaps"}, `
metadata:
  name: cfg
  namespace: shop
  ownerReferences:
  - {apiVersion: v1, kind: Node, name: node-a, uid: "1"}
  - {apiVersion: v1, kind: Namespace, name: shop, uid: "2"}
  - {apiVersion: example.com/v1, kind: Widget, name: w, uid: "3"}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: edit, uid: "4"}
data: {a: b}
`, []string{"ClusterRole.rbac.authorization.k8s.io/edit", "Namespace/shop", "Node/node-a", "Widget.example.com/w/shop"}},
		{"owners of a cluster-scoped object: no namespaced kind", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, `
metadata:
  name: widgets-view
  ownerReferences:
  - {apiVersion: example.com/v1, kind: WidgetOperator, name: op, uid: "1"}
  - {apiVersion: apps/v1, kind: Deployment, name: op, uid: "2"}
`, []string{"WidgetOperator.example.com/op"}},
		{"a resource with no references of its own", schema.GroupResource{Resource: "secrets"}, `
metadata: {name: db-pass, namespace: shop}
data: {password: aHVudGVyMg==}
`, nil},
	} {
		refs := ReferencesOf(c.gr, decode(t, c.obj))
		checkReferences(t, c.name, refs, c.want)
	}
}

// TestReferenceKindsCoverTargets: every kind the built-in references
// name (rather than copy from the object, as owners and targetRefs do) is
// one of ReferenceKinds, with the scope its references have.
func TestReferenceKindsCoverTargets(t *testing.T) {
	seen := map[schema.GroupKind]bool{}
	for _, k := range ReferenceKinds {
		gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}
		if seen[gk] {
			t.Errorf("%s listed twice", gk)
		}
		seen[gk] = true
		if got, ok := ReferenceKindOf(gk); !ok || got.Resource != k.Resource || got.Namespaced != k.Namespaced {
			t.Errorf("ReferenceKindOf(%s) = %+v, %v", gk, got, ok)
		}
	}
	if k, ok := ReferenceKindOf(schema.GroupKind{Group: "example.com", Kind: "Secret"}); ok {
		t.Errorf("a Secret of another group is known: %+v", k)
	}
	refs := ReferencesOf(podsResource, decode(t, kubeletPod))
	for _, gr := range []schema.GroupResource{
		{Resource: "persistentvolumeclaims"}, {Resource: "persistentvolumes"},
		{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
		{Group: "networking.k8s.io", Resource: "ingresses"}, {Group: gatewayAPI, Resource: "gateways"},
		{Group: gatewayAPI, Resource: "httproutes"},
	} {
		refs = append(refs, ReferencesOf(gr, decode(t, `
metadata: {name: x, namespace: shop}
spec:
  nodeName: n
  volumeName: v
  storageClassName: s
  claimRef: {name: c, namespace: shop}
  ingressClassName: i
  gatewayClassName: g
  parentRefs: [{name: p}]
  rules: [{backendRefs: [{name: b}]}]
  listeners: [{tls: {certificateRefs: [{name: t}]}}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: [{kind: ServiceAccount, name: sa}, {kind: User, name: u}, {kind: Group, name: g}]
`))...)
	}
	for _, r := range refs {
		k, ok := ReferenceKindOf(schema.GroupKind{Group: r.Group, Kind: r.Kind})
		if !ok {
			t.Errorf("%s: kind not in ReferenceKinds", r.Value())
		}
		if ok && k.Namespaced != (r.Namespace != "") {
			t.Errorf("%s: namespaced %v, but the reference has namespace %q", r.Value(), k.Namespaced, r.Namespace)
		}
	}
}

// TestReferencesOfHostile: objects no schema checked yield no panic and
// nothing that is not a reference their fields make; wrong JSON types are
// fields the object lacks.
func TestReferencesOfHostile(t *testing.T) {
	long := strings.Repeat("n", MaxFieldValueLen-len("Secret//shop"))
	for _, c := range []struct {
		name string
		gr   schema.GroupResource
		obj  map[string]any
		want []string
	}{
		{"nil", podsResource, nil, nil},
		{"null metadata and spec", podsResource, map[string]any{"metadata": nil, "spec": nil}, nil},
		{"a namespace of the wrong type", podsResource, map[string]any{
			"metadata": map[string]any{"name": "p", "namespace": 7.0},
			"spec":     map[string]any{"nodeName": "node-a", "serviceAccountName": "default"},
		}, []string{"Node/node-a"}},
		{"wrong types everywhere", podsResource, map[string]any{
			"metadata": map[string]any{"name": 5.0, "namespace": "shop", "ownerReferences": map[string]any{"kind": "Node", "name": "n"}},
			"spec": map[string]any{
				"nodeName":           []any{"node-a"},
				"serviceAccountName": int64(3),
				"volumes": []any{nil, "secret", 1.5, []any{}, map[string]any{"name": "v", "secret": "db-pass"},
					map[string]any{"configMap": map[string]any{"name": false}}, map[string]any{"projected": map[string]any{"sources": "x"}}},
				"containers":       map[string]any{"env": []any{}},
				"initContainers":   []any{map[string]any{"env": "DB=x", "envFrom": []any{map[string]any{"secretRef": "db"}}}},
				"imagePullSecrets": []any{"regcred"},
				"resourceClaims":   []any{map[string]any{"resourceClaimName": []any{"c"}}},
			},
		}, nil},
		{"wrong types beside right ones", schema.GroupResource{Group: gatewayAPI, Resource: "httproutes"}, map[string]any{
			"metadata": map[string]any{"name": "r", "namespace": "shop", "ownerReferences": []any{
				map[string]any{"apiVersion": "a/b/c", "kind": "Widget", "name": "w"},
				map[string]any{"apiVersion": 1.0, "kind": "Widget", "name": "w"},
				map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "name": "ok"},
			}},
			"spec": map[string]any{
				"parentRefs": []any{
					map[string]any{"group": 5.0, "name": "g1"},
					map[string]any{"namespace": []any{"infra"}, "name": "g2"},
					map[string]any{"kind": nil, "group": nil, "name": "g3"},
				},
				"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"kind": true, "name": "svc"}, map[string]any{"name": "web"}}}},
			},
		}, []string{"Gateway.gateway.networking.k8s.io/g3/shop", "Service/web/shop", "Widget.example.com/ok/shop"}},
		{"a binding's role of another kind or group", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, map[string]any{
			"metadata": map[string]any{"name": "b", "namespace": "shop"},
			"roleRef":  map[string]any{"apiGroup": "example.com", "kind": "ClusterRole", "name": "edit"},
			"subjects": []any{map[string]any{"kind": "Robot", "name": "r2"}, map[string]any{"kind": "ServiceAccount", "name": "sa", "namespace": 3.0}},
		}, nil},
		{"slashes, dots in kinds, non-UTF-8, NUL, overlong", podsResource, map[string]any{
			"metadata": map[string]any{"name": "p", "namespace": "shop", "ownerReferences": []any{
				map[string]any{"apiVersion": "v1", "kind": "Foo/Bar", "name": "x"},
				map[string]any{"apiVersion": "v1", "kind": "Foo.Bar", "name": "x"},
				map[string]any{"apiVersion": "v1", "kind": "Foo", "name": "x/y"},
			}},
			"spec": map[string]any{
				"volumes": []any{
					map[string]any{"name": "a", "secret": map[string]any{"secretName": "../etc"}},
					map[string]any{"name": "b", "secret": map[string]any{"secretName": "bad\xffutf8"}},
					map[string]any{"name": "c", "secret": map[string]any{"secretName": "nul\x00"}},
					map[string]any{"name": "d", "secret": map[string]any{"secretName": long + "x"}},
					map[string]any{"name": "e", "secret": map[string]any{"secretName": long}},
					map[string]any{"name": "f/g", "ephemeral": map[string]any{}},
				},
			},
		}, []string{"Secret/" + long + "/shop"}},
		{"a namespace with a slash", podsResource, map[string]any{
			"metadata": map[string]any{"name": "p", "namespace": "a/b"},
			"spec":     map[string]any{"nodeName": "node-a", "serviceAccountName": "default"},
		}, []string{"Node/node-a"}},
		{"a Gateway API group with a slash", schema.GroupResource{Group: gatewayAPI, Resource: "gateways"}, map[string]any{
			"metadata": map[string]any{"name": "g", "namespace": "infra"},
			"spec": map[string]any{"listeners": []any{map[string]any{"tls": map[string]any{"certificateRefs": []any{
				map[string]any{"group": "a/b", "kind": "Cert", "name": "c"}}}}}},
		}, nil},
	} {
		checkReferences(t, c.name, ReferencesOf(c.gr, c.obj), c.want)
	}
}

// TestReferencesBounded: an object that refers to more than MaxReferences
// targets indexes MaxReferences, each once: of one kind, the first by
// value.
func TestReferencesBounded(t *testing.T) {
	var volumes []any
	for i := range 10000 {
		// Descending, and each twice: neither the order nor the repeats
		// of the object survive.
		name := fmt.Sprintf("s%05d", 9999-i/2)
		volumes = append(volumes, map[string]any{"name": fmt.Sprint("v", i), "secret": map[string]any{"secretName": name}})
	}
	obj := map[string]any{
		"metadata": map[string]any{"name": "p", "namespace": "shop"},
		"spec":     map[string]any{"volumes": volumes, "nodeName": "node-a"},
	}
	var want []string
	want = append(want, "Node/node-a")
	for i := range MaxReferences - 1 {
		want = append(want, fmt.Sprintf("Secret/s%05d/shop", 5000+i))
	}
	checkReferences(t, "10k volumes", ReferencesOf(podsResource, obj), want)
}

// TestReferencesShareTheBound: past MaxReferences, many references of
// one kind (a binding's groups) leave room for every other kind's (its
// user and account, its role).
func TestReferencesShareTheBound(t *testing.T) {
	subjects := []any{
		map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
		map[string]any{"kind": "ServiceAccount", "namespace": "ci", "name": "deployer"},
	}
	for i := range 2 * MaxReferences {
		subjects = append(subjects, map[string]any{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": fmt.Sprintf("g%03d", i)})
	}
	obj := map[string]any{
		"metadata": map[string]any{"name": "admins"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
		"subjects": subjects,
	}
	want := []string{"ClusterRole.rbac.authorization.k8s.io/admin"}
	for i := range MaxReferences - 3 {
		want = append(want, fmt.Sprintf("Group.rbac.authorization.k8s.io/g%03d", i))
	}
	want = append(want, "ServiceAccount/deployer/ci", "User.rbac.authorization.k8s.io/alice")
	checkReferences(t, "a binding of many groups", ReferencesOf(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, obj), want)
}

// TestReferenceValue: values write the kind alone for the core group and
// the name before the namespace; ParseReferenceValue reads them back,
// dots in groups and names included, and refuses what Value never writes.
func TestReferenceValue(t *testing.T) {
	for _, c := range []struct {
		ref  Reference
		want string
	}{
		{Reference{Kind: "Secret", Namespace: "shop", Name: "db-pass.v2"}, "Secret/db-pass.v2/shop"},
		{Reference{Kind: "Node", Name: "ip-10-0-0-4.ec2.internal"}, "Node/ip-10-0-0-4.ec2.internal"},
		{Reference{Group: "apps", Kind: "ReplicaSet", Namespace: "shop", Name: "web-7d9f8c"}, "ReplicaSet.apps/web-7d9f8c/shop"},
		{Reference{Group: "snapshot.storage.k8s.io", Kind: "VolumeSnapshot", Namespace: "b", Name: "n.1"}, "VolumeSnapshot.snapshot.storage.k8s.io/n.1/b"},
		{Reference{Group: "rbac.authorization.k8s.io", Kind: "User", Name: "alice@example.com"}, "User.rbac.authorization.k8s.io/alice@example.com"},
		{Reference{Group: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:masters"}, "Group.rbac.authorization.k8s.io/system:masters"},
	} {
		if got := c.ref.Value(); got != c.want {
			t.Errorf("%#v: value %q, want %q", c.ref, got, c.want)
		}
		if got, ok := ParseReferenceValue(c.want); !ok || got != c.ref {
			t.Errorf("%q parses as %#v (%v), want %#v", c.want, got, ok, c.ref)
		}
		if !c.ref.valid() {
			t.Errorf("%#v: not valid", c.ref)
		}
		anyNamespace := c.ref
		anyNamespace.Namespace = ""
		if got := WithoutNamespace(c.want); got != anyNamespace.Value() || !anyNamespace.MatchesValue(c.want) {
			t.Errorf("%q without its namespace is %q, want %q", c.want, got, anyNamespace.Value())
		}
	}
	for _, bad := range []string{"", "Secret", "Secret/", "/db", ".apps/x", "Deployment./x", "Secret/db/", "Secret//shop", "Secret/db/shop/x"} {
		if r, ok := ParseReferenceValue(bad); ok {
			t.Errorf("%q parses as %#v", bad, r)
		}
	}
	for _, r := range []Reference{{Name: "x"}, {Kind: "Secret"}, {Kind: "Secret", Name: "a/b"}, {Kind: "Foo.Bar", Name: "x"},
		{Group: "a/b", Kind: "Foo", Name: "x"}, {Kind: "Secret", Name: "x", Namespace: "a/b"}, {Kind: "Secret", Name: "\xff"}} {
		if r.valid() {
			t.Errorf("%#v is valid", r)
		}
	}
}

// TestReferenceMatchesValue: a target with a namespace matches its own
// value alone; one without matches its name in every namespace, or
// cluster-scoped, and no longer name; AnyNamespaceRange holds exactly the
// namespaced ones, in byte order.
func TestReferenceMatchesValue(t *testing.T) {
	values := []string{
		"Secret/db", "Secret/db-pass", "Secret/db-pass/shop", "Secret/db.v2/shop", "Secret/db/a", "Secret/db/shop",
		"Secret/db/zz~", "Secret/db0/shop", "Secret/dbx", "Secret.example.com/db/shop", "ConfigMap/db/shop",
	}
	slices.Sort(values)
	for _, c := range []struct {
		ref  Reference
		want []string
	}{
		{Reference{Kind: "Secret", Name: "db"}, []string{"Secret/db", "Secret/db/a", "Secret/db/shop", "Secret/db/zz~"}},
		{Reference{Kind: "Secret", Name: "db", Namespace: "shop"}, []string{"Secret/db/shop"}},
		{Reference{Group: "example.com", Kind: "Secret", Name: "db"}, []string{"Secret.example.com/db/shop"}},
	} {
		var got, inRange []string
		low, high := c.ref.AnyNamespaceRange()
		for _, v := range values {
			if c.ref.MatchesValue(v) {
				got = append(got, v)
			}
			if low <= v && v < high {
				inRange = append(inRange, v)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s matches %q, want %q", c.ref.Value(), got, c.want)
		}
		if c.ref.Namespace == "" {
			if want := slices.DeleteFunc(slices.Clone(c.want), func(v string) bool { return v == c.ref.Value() }); !slices.Equal(inRange, want) {
				t.Errorf("%s: [%q, %q) holds %q, want %q", c.ref.Value(), low, high, inRange, want)
			}
		}
	}
}
