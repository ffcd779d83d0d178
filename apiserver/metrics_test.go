package apiserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/component-base/metrics/legacyregistry"
)

// TestRequestMetrics checks that gets and lists are timed by verb and
// code, and that a watch is counted while it is open and no longer after.
func TestRequestMetrics(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	answered := func(verb, code string) uint64 {
		var m dto.Metric
		if err := requestDuration.WithLabelValues(verb, "", "pods", code).(prometheus.Metric).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	lists, misses := answered("list", "200"), answered("get", "404")
	pods := dynamic.NewForConfigOrDie(cfg).Resource(podsGVR)
	if _, err := pods.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Namespace("ns").Get(context.Background(), "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("got a pod that does not exist")
	}
	if got := answered("list", "200") - lists; got != 1 {
		t.Errorf("lists answered 200 counted %d times, want 1", got)
	}
	if got := answered("get", "404") - misses; got != 1 {
		t.Errorf("gets answered 404 counted %d times, want 1", got)
	}

	open := func() float64 { return testutil.ToFloat64(watches.WithLabelValues("", "pods")) }
	before := open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan() // the pod, so the watch is being served
	if got := open() - before; got != 1 {
		t.Errorf("%v watches open, want 1", got)
	}
	w.Stop()
	cancel()
	for deadline := time.Now().Add(10 * time.Second); open() != before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v watches open after the only one ended", open()-before)
		}
	}

	// The names from before the subsystem still report the same series.
	for old, current := range map[string]string{
		"panorama_request_duration_seconds": "panorama_apiserver_request_duration_seconds",
		"panorama_watches":                  "panorama_apiserver_watches",
	} {
		was, errOld := testutil.GatherAndCount(legacyregistry.DefaultGatherer, old)
		is, errCurrent := testutil.GatherAndCount(legacyregistry.DefaultGatherer, current)
		if err := errors.Join(errOld, errCurrent); err != nil || was != is || is == 0 {
			t.Errorf("%s has %d series, %s %d (%v); want as many, and some", old, was, current, is, err)
		}
	}
}
