package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Where CreatePods puts its pods: podNamespaces namespaces, and
// ReplicaSets of podsPerReplicaSet pods each, as Deployments leave them.
const (
	podNamespaces     = 10
	podsPerReplicaSet = 100
)

// CreatePods creates n pods as a member serves them, eight at a time:
// bulk content for benchmarks. Each is owned by a ReplicaSet, created
// first, labelled as a Deployment's pods are, runs two or three containers
// (images, env, ports, resources, probes) and is running, as a kubelet
// would report it through the status subresource: a member's pods are most
// of what it holds, and far from the small ConfigMaps of CreateConfigMaps.
func CreatePods(t testing.TB, kube kubernetes.Interface, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range podNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podNamespace(i)}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	owners := make([]*appsv1.ReplicaSet, (n+podsPerReplicaSet-1)/podsPerReplicaSet)
	CreateAll(t, len(owners), func(i int) error {
		rs, err := kube.AppsV1().ReplicaSets(podNamespace(i)).Create(ctx, replicaSet(i), metav1.CreateOptions{})
		owners[i] = rs
		return err
	})
	CreateAll(t, n, func(i int) error {
		owner := owners[i/podsPerReplicaSet]
		created, err := kube.CoreV1().Pods(owner.Namespace).Create(ctx, pod(owner, i), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = runningStatus(created, i)
		_, err = kube.CoreV1().Pods(owner.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
}

func podNamespace(replicaSet int) string { return fmt.Sprintf("team-%d", replicaSet%podNamespaces) }

// digest is a hex digest of s, n characters long: the hashes, IDs and
// digests a member's objects carry, the same in every run.
func digest(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// replicaSet is the ReplicaSet of a Deployment's pod template, i-th of
// CreatePods.
func replicaSet(i int) *appsv1.ReplicaSet {
	app := fmt.Sprintf("app-%d", i)
	labels := map[string]string{"app": app, "pod-template-hash": digest(app, 10)}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-" + labels["pod-template-hash"], Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](podsPerReplicaSet),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image(app)}}},
			},
		},
	}
}

func image(app string) string { return "registry.example/" + app + ":1." + digest(app, 1) }

// pod is pod i of CreatePods, one of owner's.
func pod(owner *appsv1.ReplicaSet, i int) *corev1.Pod {
	labels := map[string]string{
		"app": owner.Labels["app"], "pod-template-hash": owner.Labels["pod-template-hash"],
		"team": owner.Namespace, "tier": []string{"front", "back", "data"}[i%3],
	}
	volume := "kube-api-access-" + digest(fmt.Sprint("volume", i), 5)
	mounts := []corev1.VolumeMount{{Name: volume, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	containers := []corev1.Container{
		{
			Name: "app", Image: image(owner.Labels["app"]), ImagePullPolicy: corev1.PullIfNotPresent,
			Env: []corev1.EnvVar{
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			LivenessProbe:  httpProbe("/healthz", 10),
			ReadinessProbe: httpProbe("/ready", 5),
			VolumeMounts:   mounts,
		},
		{
			Name: "proxy", Image: "registry.example/mesh/proxy:1.31.2", Args: []string{"proxy", "sidecar", "--log-level=warning"},
			Ports: []corev1.ContainerPort{{Name: "mesh", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40Mi")},
			},
			ReadinessProbe: httpProbe("/healthz/ready", 15),
			VolumeMounts:   mounts,
		},
	}
	if i%2 == 0 {
		containers = append(containers, corev1.Container{
			Name: "log-shipper", Image: "registry.example/observability/shipper:3.2.0",
			Env:          []corev1.EnvVar{{Name: "SHIP_TO", Value: "logs.example:24224"}},
			VolumeMounts: mounts,
		})
	}
	for c := range containers {
		containers[c].TerminationMessagePath = corev1.TerminationMessagePathDefault
		containers[c].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         fmt.Sprintf("%s-%05x", owner.Name, i),
			GenerateName: owner.Name + "-",
			Labels:       labels,
			Annotations:  map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name, UID: owner.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers:         containers,
			NodeName:           fmt.Sprintf("node-%d", i%300), // runningStatus's hostIP
			ServiceAccountName: "default",
			Volumes: []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptr.To[int32](0o644),
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				},
			}}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
	}
}

func httpProbe(path string, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: period, SuccessThreshold: 1, FailureThreshold: 3,
	}
}

// runningStatus is the status a kubelet reports of pod, i-th of CreatePods,
// once its containers run; the API server's own fields (qosClass) stay.
func runningStatus(pod *corev1.Pod, i int) corev1.PodStatus {
	started := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	ready := metav1.NewTime(started.Add(8 * time.Second))
	status := pod.Status
	status.Phase, status.StartTime = corev1.PodRunning, &started
	node := i % 300 // as pod's spec.nodeName
	status.HostIP = fmt.Sprintf("192.168.%d.%d", node/250, node%250+1)
	status.PodIP = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	status.HostIPs, status.PodIPs = []corev1.HostIP{{IP: status.HostIP}}, []corev1.PodIP{{IP: status.PodIP}}
	for _, c := range []struct {
		typ corev1.PodConditionType
		at  metav1.Time
	}{{"PodReadyToStartContainers", started}, {corev1.PodInitialized, started}, {corev1.PodReady, ready}, {corev1.ContainersReady, ready}, {corev1.PodScheduled, started}} {
		status.Conditions = append(status.Conditions, corev1.PodCondition{Type: c.typ, Status: corev1.ConditionTrue, LastTransitionTime: c.at})
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + digest(c.Image, 64),
			ContainerID: "containerd://" + digest(fmt.Sprint(pod.Name, c.Name), 64),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:       true, Started: ptr.To(true), RestartCount: int32(i % 4),
		})
	}
	return status
}
