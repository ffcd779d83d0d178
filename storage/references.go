package storage

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReferencesField is the built-in multi-valued field holding the values
// (Reference.Value) of the references an object makes (ReferencesOf).
const ReferencesField = "references"

// MaxReferences bounds the references one object indexes (each is an
// attribute row).
const MaxReferences = 128

// Reference names the object a reference points at. Namespace is "" for a
// cluster-scoped target.
type Reference struct {
	Group, Kind, Namespace, Name string
}

// Value is the reference as stored: "Kind[.group]/name[/namespace]" —
// name before namespace so that "this name in any namespace" is a prefix.
// Kinds have no dots (a CRD's kind is a DNS-1035 label once lowercased), so
// the first dot ends the kind.
func (r Reference) Value() string {
	var b strings.Builder
	b.Grow(len(r.Kind) + len(r.Group) + len(r.Name) + len(r.Namespace) + 3)
	b.WriteString(r.Kind)
	if r.Group != "" {
		b.WriteByte('.')
		b.WriteString(r.Group)
	}
	b.WriteByte('/')
	b.WriteString(r.Name)
	if r.Namespace != "" {
		b.WriteByte('/')
		b.WriteString(r.Namespace)
	}
	return b.String()
}

// ParseReferenceValue inverts Value: it takes only what Value writes of a
// Reference with a kind and a name, so that Value gives v back.
func ParseReferenceValue(v string) (Reference, bool) {
	kindGroup, rest, _ := strings.Cut(v, "/")
	var r Reference
	var dotted, namespaced bool
	r.Kind, r.Group, dotted = strings.Cut(kindGroup, ".")
	r.Name, r.Namespace, namespaced = strings.Cut(rest, "/")
	if r.Kind == "" || r.Name == "" || dotted && r.Group == "" ||
		namespaced && r.Namespace == "" || strings.Contains(r.Namespace, "/") {
		return Reference{}, false
	}
	return r, true
}

// valid reports whether r can be indexed: its Value parses back to r and
// fits in a field value.
func (r Reference) valid() bool {
	v := r.Value()
	return r.Kind != "" && r.Name != "" && !strings.Contains(r.Kind, ".") &&
		!strings.Contains(r.Kind+r.Group+r.Namespace+r.Name, "/") &&
		len(v) <= MaxFieldValueLen && StorableText(v)
}

// MatchesValue reports whether v, the Value of a reference, points at r:
// at r itself, or, when r has no namespace, at its name in any namespace
// (the values with r's Value and a '/' as prefix, of which no Value with a
// namespace is one).
func (r Reference) MatchesValue(v string) bool {
	rest, ok := strings.CutPrefix(v, r.Value())
	return ok && (rest == "" || rest[0] == '/')
}

// AnyNamespaceRange is the byte-ordered range [low, high) of the Values of
// references to r's name in some namespace: those with r's Value and a '/'
// as prefix, which end before the prefix with '0', the byte after '/'.
func (r Reference) AnyNamespaceRange() (low, high string) {
	v := r.Value()
	return v + "/", v + "0"
}

// WithoutNamespace is value, the Value of a reference, less its
// namespace: the Value of its name in any namespace, which a target
// without a namespace matches (MatchesValue).
func WithoutNamespace(value string) string {
	kind := strings.IndexByte(value, '/')
	if kind < 0 {
		return value
	}
	if name := strings.IndexByte(value[kind+1:], '/'); name >= 0 {
		return value[:kind+1+name]
	}
	return value
}

// ReferencesOf returns what obj, an object of resource gr, refers to:
// deduplicated, sorted by Value, at most MaxReferences (each kind its
// share, see fairShare), leaving out any whose Value is not StorableText
// or longer than MaxFieldValueLen, or whose parts are empty or contain
// '/' (or whose kind contains '.', which Value could not tell from the
// group).
//
// The references are those Kubernetes itself defines (owner references, a
// pod's volumes and environment, a binding's role and subjects, …). A part
// of a reference that is absent takes the default Kubernetes gives it; a
// reference with a part of the wrong JSON type is left out.
func ReferencesOf(gr schema.GroupResource, obj map[string]any) []Reference {
	c := references{namespace: nestedString(obj, "metadata", "namespace")}
	c.owners(obj)
	if extract := referenceExtractors[gr]; extract != nil {
		extract(&c, obj)
	}
	return c.sorted()
}

// references collects the references of one object.
type references struct {
	namespace string // the object's own; "" when it is cluster-scoped
	out       []Reference
}

// add adds a reference, but not one without a kind or a name. A target of
// a kind ReferenceKinds knows gets its scope: no namespace when cluster
// scoped, and none at all when namespaced without a namespace.
func (c *references) add(group, kind, namespace, name string) {
	if kind == "" || name == "" {
		return
	}
	if k, ok := ReferenceKindOf(schema.GroupKind{Group: group, Kind: kind}); ok {
		if !k.Namespaced {
			namespace = ""
		} else if namespace == "" {
			return
		}
	}
	c.out = append(c.out, Reference{Group: group, Kind: kind, Namespace: namespace, Name: name})
}

// local adds a reference to an object in the object's own namespace (or a
// cluster-scoped one).
func (c *references) local(group, kind, name string) {
	c.add(group, kind, c.namespace, name)
}

// sorted returns the indexable references, sorted by Value, each once, at
// most MaxReferences.
func (c *references) sorted() []Reference {
	vs := make([]valuedReference, 0, len(c.out))
	for _, r := range c.out {
		if r.valid() {
			vs = append(vs, valuedReference{r.Value(), r})
		}
	}
	if len(vs) == 0 {
		return nil
	}
	slices.SortFunc(vs, compareValued)
	vs = slices.CompactFunc(vs, func(a, b valuedReference) bool { return a.value == b.value })
	if len(vs) > MaxReferences {
		vs = fairShare(vs)
	}
	out := make([]Reference, len(vs))
	for i, v := range vs {
		out[i] = v.ref
	}
	return out
}

// valuedReference is a reference with its Value, computed once.
type valuedReference struct {
	value string
	ref   Reference
}

func compareValued(a, b valuedReference) int { return strings.Compare(a.value, b.value) }

// fairShare keeps MaxReferences of vs, sorted by value: the first of
// each kind, then the second of each, and so on, so that many of one
// kind (a binding's groups) do not leave out every other (its users).
func fairShare(vs []valuedReference) []valuedReference {
	var kinds [][]valuedReference // vs sorted by value has each kind's together
	for i, v := range vs {
		if i == 0 || v.ref.Kind != vs[i-1].ref.Kind || v.ref.Group != vs[i-1].ref.Group {
			kinds = append(kinds, nil)
		}
		kinds[len(kinds)-1] = append(kinds[len(kinds)-1], v)
	}
	out := make([]valuedReference, 0, MaxReferences)
	for round := 0; len(out) < MaxReferences; round++ {
		for _, k := range kinds {
			if round < len(k) && len(out) < MaxReferences {
				out = append(out, k[round])
			}
		}
	}
	slices.SortFunc(out, compareValued)
	return out
}

// nested is the value at path in v, nil when v lacks it or a step is not an
// object.
func nested(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// nestedString is the string at path in v, "" when there is none.
func nestedString(v any, path ...string) string {
	s, _ := nested(v, path...).(string)
	return s
}

// nestedSlice is the array at path in v, nil when there is none.
func nestedSlice(v any, path ...string) []any {
	l, _ := nested(v, path...).([]any)
	return l
}

// optionalString is the string at key in v, def when v has none (or null), and
// false when it has something else.
func optionalString(v any, key, def string) (string, bool) {
	switch s := nested(v, key).(type) {
	case nil:
		return def, true
	case string:
		return s, true
	}
	return "", false
}

// apiGroupOf is the group of an apiVersion: "v1" is the core group "", "apps/v1"
// is "apps".
func apiGroupOf(apiVersion string) (string, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return gv.Group, err == nil
}

// apiRef adds an {apiVersion, kind, name} reference (an owner's, an
// ObjectReference, a CrossVersionObjectReference) to namespace.
func (c *references) apiRef(ref any, namespace string) {
	apiVersion, ok := optionalString(ref, "apiVersion", "")
	if !ok {
		return
	}
	if group, ok := apiGroupOf(apiVersion); ok {
		c.add(group, nestedString(ref, "kind"), namespace, nestedString(ref, "name"))
	}
}

// typedRef adds an {apiGroup, kind, name} reference (TypedLocalObjectReference
// and the like; no apiGroup is the core group) to namespace.
func (c *references) typedRef(ref any, namespace string) {
	if group, ok := optionalString(ref, "apiGroup", ""); ok {
		c.add(group, nestedString(ref, "kind"), namespace, nestedString(ref, "name"))
	}
}

// owners adds the owner references, which every object may have. An owner
// is in the object's namespace unless it is of a cluster-scoped kind (which
// add knows for ReferenceKinds): the garbage collector follows no other.
func (c *references) owners(obj map[string]any) {
	for _, o := range nestedSlice(obj, "metadata", "ownerReferences") {
		c.apiRef(o, c.namespace)
	}
}

// referenceExtractors add the references the objects of a resource make
// besides their owners.
var referenceExtractors = map[schema.GroupResource]func(*references, map[string]any){
	{Resource: "pods"}:                                                                   (*references).pod,
	{Resource: "podtemplates"}:                                                           templateAt("template", "spec"),
	{Resource: "replicationcontrollers"}:                                                 templateAt("spec", "template", "spec"),
	{Group: "apps", Resource: "deployments"}:                                             templateAt("spec", "template", "spec"),
	{Group: "apps", Resource: "replicasets"}:                                             templateAt("spec", "template", "spec"),
	{Group: "apps", Resource: "statefulsets"}:                                            (*references).statefulSet,
	{Group: "apps", Resource: "daemonsets"}:                                              templateAt("spec", "template", "spec"),
	{Group: "batch", Resource: "jobs"}:                                                   templateAt("spec", "template", "spec"),
	{Group: "batch", Resource: "cronjobs"}:                                               templateAt("spec", "jobTemplate", "spec", "template", "spec"),
	{Resource: "serviceaccounts"}:                                                        (*references).serviceAccount,
	{Resource: "endpoints"}:                                                              (*references).endpoints,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:                              (*references).endpointSlice,
	{Group: "networking.k8s.io", Resource: "ingresses"}:                                  (*references).ingress,
	{Group: "gateway.networking.k8s.io", Resource: "gateways"}:                           (*references).gateway,
	{Group: "gateway.networking.k8s.io", Resource: "httproutes"}:                         (*references).route,
	{Group: "gateway.networking.k8s.io", Resource: "grpcroutes"}:                         (*references).route,
	{Group: "gateway.networking.k8s.io", Resource: "tlsroutes"}:                          (*references).route,
	{Group: "gateway.networking.k8s.io", Resource: "tcproutes"}:                          (*references).route,
	{Group: "gateway.networking.k8s.io", Resource: "udproutes"}:                          (*references).route,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}:                         (*references).scaleTarget,
	{Resource: "persistentvolumeclaims"}:                                                 (*references).persistentVolumeClaim,
	{Resource: "persistentvolumes"}:                                                      (*references).persistentVolume,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:                             (*references).volumeAttachment,
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}:                       (*references).binding,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:                (*references).binding,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:   (*references).webhooks,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: (*references).webhooks,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:                           (*references).apiService,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:               (*references).conversionWebhook,
	{Resource: "events"}:                                                                 eventAbout("involvedObject"),
	{Group: "events.k8s.io", Resource: "events"}:                                         eventAbout("regarding"),
}

// templateAt extracts the references of the pod spec at path.
func templateAt(path ...string) func(*references, map[string]any) {
	return func(c *references, o map[string]any) { c.podSpec(nested(o, path...)) }
}

// pod adds what a pod refers to: its spec's references, its node, and the
// claims made for it, whose names only the pod has (an ephemeral volume's
// PVC is "<pod>-<volume>"; a claim from a template is named in the status).
func (c *references) pod(o map[string]any) {
	spec := nested(o, "spec")
	c.podSpec(spec)
	c.add("", "Node", "", nestedString(spec, "nodeName"))
	if pod := nestedString(o, "metadata", "name"); pod != "" {
		for _, v := range nestedSlice(spec, "volumes") {
			if _, ok := nested(v, "ephemeral").(map[string]any); ok && nestedString(v, "name") != "" {
				c.local("", "PersistentVolumeClaim", pod+"-"+nestedString(v, "name"))
			}
		}
	}
	for _, s := range nestedSlice(o, "status", "resourceClaimStatuses") {
		c.local("resource.k8s.io", "ResourceClaim", nestedString(s, "resourceClaimName"))
	}
	c.local("resource.k8s.io", "ResourceClaim", nestedString(o, "status", "extendedResourceClaimStatus", "resourceClaimName"))
}

// podSpec adds what a pod spec (a pod's or a template's) refers to.
func (c *references) podSpec(spec any) {
	for _, v := range nestedSlice(spec, "volumes") {
		c.volume(v)
	}
	for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
		for _, ctr := range nestedSlice(spec, list) {
			c.container(ctr)
		}
	}
	for _, s := range nestedSlice(spec, "imagePullSecrets") {
		c.local("", "Secret", nestedString(s, "name"))
	}
	sa := nestedString(spec, "serviceAccountName")
	if sa == "" {
		sa = nestedString(spec, "serviceAccount") // deprecated, read when the other is unset
	}
	c.local("", "ServiceAccount", sa)
	c.add("scheduling.k8s.io", "PriorityClass", "", nestedString(spec, "priorityClassName"))
	c.add("node.k8s.io", "RuntimeClass", "", nestedString(spec, "runtimeClassName"))
	for _, claim := range nestedSlice(spec, "resourceClaims") {
		c.local("resource.k8s.io", "ResourceClaim", nestedString(claim, "resourceClaimName"))
		c.local("resource.k8s.io", "ResourceClaimTemplate", nestedString(claim, "resourceClaimTemplateName"))
	}
}

// inTreeSecretRefs are the in-tree volume sources of a pod whose secretRef
// is a LocalObjectReference.
var inTreeSecretRefs = []string{"cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos"}

// volume adds what a pod's volume refers to.
func (c *references) volume(v any) {
	c.local("", "ConfigMap", nestedString(v, "configMap", "name"))
	c.local("", "Secret", nestedString(v, "secret", "secretName"))
	c.local("", "PersistentVolumeClaim", nestedString(v, "persistentVolumeClaim", "claimName"))
	c.local("", "Secret", nestedString(v, "csi", "nodePublishSecretRef", "name"))
	c.local("", "Secret", nestedString(v, "azureFile", "secretName"))
	for _, source := range inTreeSecretRefs {
		c.local("", "Secret", nestedString(v, source, "secretRef", "name"))
	}
	for _, s := range nestedSlice(v, "projected", "sources") {
		c.local("", "ConfigMap", nestedString(s, "configMap", "name"))
		c.local("", "Secret", nestedString(s, "secret", "name"))
	}
}

// container adds what a container's environment refers to.
func (c *references) container(ctr any) {
	for _, e := range nestedSlice(ctr, "env") {
		c.local("", "ConfigMap", nestedString(e, "valueFrom", "configMapKeyRef", "name"))
		c.local("", "Secret", nestedString(e, "valueFrom", "secretKeyRef", "name"))
	}
	for _, e := range nestedSlice(ctr, "envFrom") {
		c.local("", "ConfigMap", nestedString(e, "configMapRef", "name"))
		c.local("", "Secret", nestedString(e, "secretRef", "name"))
	}
}

// statefulSet adds its pod template's references and the storage classes
// of its claim templates, which every new replica's PVCs get.
func (c *references) statefulSet(o map[string]any) {
	c.podSpec(nested(o, "spec", "template", "spec"))
	for _, t := range nestedSlice(o, "spec", "volumeClaimTemplates") {
		c.add("storage.k8s.io", "StorageClass", "", nestedString(t, "spec", "storageClassName"))
	}
}

func (c *references) serviceAccount(o map[string]any) {
	for _, list := range []string{"secrets", "imagePullSecrets"} {
		for _, s := range nestedSlice(o, list) {
			c.local("", "Secret", nestedString(s, "name"))
		}
	}
}

// targetRef adds an endpoint's target, in the object's namespace unless it
// names another.
func (c *references) targetRef(ref any) {
	if namespace, ok := optionalString(ref, "namespace", ""); ok {
		c.apiRef(ref, cmp.Or(namespace, c.namespace))
	}
}

func (c *references) endpoints(o map[string]any) {
	for _, s := range nestedSlice(o, "subsets") {
		for _, list := range []string{"addresses", "notReadyAddresses"} {
			for _, a := range nestedSlice(s, list) {
				c.targetRef(nested(a, "targetRef"))
			}
		}
	}
}

func (c *references) endpointSlice(o map[string]any) {
	for _, e := range nestedSlice(o, "endpoints") {
		c.targetRef(nested(e, "targetRef"))
	}
}

func (c *references) ingress(o map[string]any) {
	spec := nested(o, "spec")
	c.ingressBackend(nested(spec, "defaultBackend"))
	for _, rule := range nestedSlice(spec, "rules") {
		for _, p := range nestedSlice(rule, "http", "paths") {
			c.ingressBackend(nested(p, "backend"))
		}
	}
	for _, t := range nestedSlice(spec, "tls") {
		c.local("", "Secret", nestedString(t, "secretName"))
	}
	c.add("networking.k8s.io", "IngressClass", "", nestedString(spec, "ingressClassName"))
}

// ingressBackend adds a backend's Service or resource, both in the
// Ingress's namespace.
func (c *references) ingressBackend(b any) {
	c.local("", "Service", nestedString(b, "service", "name"))
	c.typedRef(nested(b, "resource"), c.namespace)
}

func (c *references) gateway(o map[string]any) {
	spec := nested(o, "spec")
	c.add("gateway.networking.k8s.io", "GatewayClass", "", nestedString(spec, "gatewayClassName"))
	for _, l := range nestedSlice(spec, "listeners") {
		for _, ref := range nestedSlice(l, "tls", "certificateRefs") {
			c.gatewayRef(ref, "", "Secret")
		}
	}
}

// route adds what a Gateway API route (HTTP, GRPC, TLS, TCP, UDP) refers
// to: its parents and its backends.
func (c *references) route(o map[string]any) {
	spec := nested(o, "spec")
	for _, p := range nestedSlice(spec, "parentRefs") {
		c.gatewayRef(p, "gateway.networking.k8s.io", "Gateway")
	}
	for _, r := range nestedSlice(spec, "rules") {
		for _, b := range nestedSlice(r, "backendRefs") {
			c.gatewayRef(b, "", "Service")
		}
	}
}

// gatewayRef adds a Gateway API reference {group, kind, namespace, name}:
// an absent group or kind is the one the field defaults to ("" is the core
// group), an absent namespace the object's own.
func (c *references) gatewayRef(ref any, group, kind string) {
	group, okGroup := optionalString(ref, "group", group)
	kind, okKind := optionalString(ref, "kind", kind)
	namespace, okNamespace := optionalString(ref, "namespace", c.namespace)
	if okGroup && okKind && okNamespace {
		c.add(group, kind, namespace, nestedString(ref, "name"))
	}
}

func (c *references) persistentVolumeClaim(o map[string]any) {
	spec := nested(o, "spec")
	c.add("", "PersistentVolume", "", nestedString(spec, "volumeName"))
	c.add("storage.k8s.io", "StorageClass", "", nestedString(spec, "storageClassName"))
	c.typedRef(nested(spec, "dataSource"), c.namespace)
	ref := nested(spec, "dataSourceRef")
	if namespace, ok := optionalString(ref, "namespace", c.namespace); ok {
		c.typedRef(ref, namespace)
	}
}

// csiSecretRefs are the secret references of a CSI persistent volume.
var csiSecretRefs = []string{
	"controllerPublishSecretRef", "nodeStageSecretRef", "nodePublishSecretRef",
	"controllerExpandSecretRef", "nodeExpandSecretRef",
}

func (c *references) persistentVolume(o map[string]any) {
	spec := nested(o, "spec")
	c.add("storage.k8s.io", "StorageClass", "", nestedString(spec, "storageClassName"))
	c.add("", "PersistentVolumeClaim", nestedString(spec, "claimRef", "namespace"), nestedString(spec, "claimRef", "name"))
	for _, ref := range csiSecretRefs {
		c.add("", "Secret", nestedString(spec, "csi", ref, "namespace"), nestedString(spec, "csi", ref, "name"))
	}
}

func (c *references) volumeAttachment(o map[string]any) {
	c.add("", "PersistentVolume", "", nestedString(o, "spec", "source", "persistentVolumeName"))
	c.add("", "Node", "", nestedString(o, "spec", "nodeName"))
}

// binding adds a RoleBinding's or ClusterRoleBinding's role and subjects.
// Users and groups are cluster-scoped pseudo-kinds of the RBAC group, so
// that what grants a user can be asked.
func (c *references) binding(o map[string]any) {
	if role := nested(o, "roleRef"); nestedString(role, "apiGroup") == "rbac.authorization.k8s.io" {
		if kind := nestedString(role, "kind"); kind == "Role" || kind == "ClusterRole" {
			c.local("rbac.authorization.k8s.io", kind, nestedString(role, "name"))
		}
	}
	for _, s := range nestedSlice(o, "subjects") {
		switch kind := nestedString(s, "kind"); kind {
		case "ServiceAccount":
			// As the RBAC authorizer reads it: no namespace is the binding's.
			if namespace, ok := optionalString(s, "namespace", ""); ok {
				c.add("", kind, cmp.Or(namespace, c.namespace), nestedString(s, "name"))
			}
		case "User", "Group":
			c.add("rbac.authorization.k8s.io", kind, "", nestedString(s, "name"))
		}
	}
}

func (c *references) scaleTarget(o map[string]any) {
	c.apiRef(nested(o, "spec", "scaleTargetRef"), c.namespace)
}

func (c *references) webhooks(o map[string]any) {
	for _, w := range nestedSlice(o, "webhooks") {
		c.service(nested(w, "clientConfig", "service"))
	}
}

func (c *references) apiService(o map[string]any) {
	c.service(nested(o, "spec", "service"))
}

func (c *references) conversionWebhook(o map[string]any) {
	c.service(nested(o, "spec", "conversion", "webhook", "clientConfig", "service"))
}

// service adds a webhook's {namespace, name} Service.
func (c *references) service(ref any) {
	c.add("", "Service", nestedString(ref, "namespace"), nestedString(ref, "name"))
}

// eventAbout extracts what an Event (core or events.k8s.io) is about: the
// object at about, and the related one; each in the namespace it names.
func eventAbout(about string) func(*references, map[string]any) {
	return func(c *references, o map[string]any) {
		for _, key := range []string{about, "related"} {
			ref := nested(o, key)
			if namespace, ok := optionalString(ref, "namespace", ""); ok {
				c.apiRef(ref, namespace)
			}
		}
	}
}

// ReferenceKind is a kind references point at, for resolving what users
// type.
type ReferenceKind struct {
	Group, Kind, Resource string
	Namespaced            bool
	ShortNames            []string
}

// ReferenceKinds are the built-in kinds references point at (every target
// kind ReferencesOf can produce other than owners'/targetRefs' arbitrary
// kinds), and the built-in kinds that own others or back an HPA. User and
// Group are pseudo-kinds (RBAC subjects); their resources are the ones
// impersonation names.
var ReferenceKinds = []ReferenceKind{
	{Kind: "ConfigMap", Resource: "configmaps", Namespaced: true, ShortNames: []string{"cm"}},
	{Kind: "Namespace", Resource: "namespaces", ShortNames: []string{"ns"}},
	{Kind: "Node", Resource: "nodes", ShortNames: []string{"no"}},
	{Kind: "PersistentVolume", Resource: "persistentvolumes", ShortNames: []string{"pv"}},
	{Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespaced: true, ShortNames: []string{"pvc"}},
	{Kind: "Pod", Resource: "pods", Namespaced: true, ShortNames: []string{"po"}},
	{Kind: "ReplicationController", Resource: "replicationcontrollers", Namespaced: true, ShortNames: []string{"rc"}},
	{Kind: "Secret", Resource: "secrets", Namespaced: true},
	{Kind: "Service", Resource: "services", Namespaced: true, ShortNames: []string{"svc"}},
	{Kind: "ServiceAccount", Resource: "serviceaccounts", Namespaced: true, ShortNames: []string{"sa"}},
	{Group: "apps", Kind: "DaemonSet", Resource: "daemonsets", Namespaced: true, ShortNames: []string{"ds"}},
	{Group: "apps", Kind: "Deployment", Resource: "deployments", Namespaced: true, ShortNames: []string{"deploy"}},
	{Group: "apps", Kind: "ReplicaSet", Resource: "replicasets", Namespaced: true, ShortNames: []string{"rs"}},
	{Group: "apps", Kind: "StatefulSet", Resource: "statefulsets", Namespaced: true, ShortNames: []string{"sts"}},
	{Group: "batch", Kind: "CronJob", Resource: "cronjobs", Namespaced: true, ShortNames: []string{"cj"}},
	{Group: "batch", Kind: "Job", Resource: "jobs", Namespaced: true},
	{Group: "gateway.networking.k8s.io", Kind: "Gateway", Resource: "gateways", Namespaced: true, ShortNames: []string{"gtw"}},
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Resource: "gatewayclasses", ShortNames: []string{"gc"}},
	{Group: "networking.k8s.io", Kind: "IngressClass", Resource: "ingressclasses"},
	{Group: "node.k8s.io", Kind: "RuntimeClass", Resource: "runtimeclasses"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Kind: "Group", Resource: "groups"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role", Resource: "roles", Namespaced: true},
	{Group: "rbac.authorization.k8s.io", Kind: "User", Resource: "users"},
	{Group: "resource.k8s.io", Kind: "ResourceClaim", Resource: "resourceclaims", Namespaced: true},
	{Group: "resource.k8s.io", Kind: "ResourceClaimTemplate", Resource: "resourceclaimtemplates", Namespaced: true},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass", Resource: "priorityclasses", ShortNames: []string{"pc"}},
	{Group: "storage.k8s.io", Kind: "StorageClass", Resource: "storageclasses", ShortNames: []string{"sc"}},
}

var referenceKinds = func() map[schema.GroupKind]ReferenceKind {
	out := make(map[schema.GroupKind]ReferenceKind, len(ReferenceKinds))
	for _, k := range ReferenceKinds {
		out[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = k
	}
	return out
}()

// ReferenceKindOf finds a kind by GroupKind.
func ReferenceKindOf(gk schema.GroupKind) (ReferenceKind, bool) {
	k, ok := referenceKinds[gk]
	return k, ok
}
