package controllers

import (
	"testing"
	"time"
)

// TestMemberChecksFresh: a check is fresh for the interval, and only for
// the Cluster (not one created again under its name), spec, shared
// selection and owner epoch it was made for.
func TestMemberChecksFresh(t *testing.T) {
	const interval = 30 * time.Second
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := checkKey{uid: "u1", generation: 3, sharedVersion: "17", epoch: 2}
	var m memberChecks
	if _, ok := m.fresh("east", key, interval, at); ok {
		t.Fatal("fresh before any check")
	}
	m.record("east", memberCheck{key: key, at: at, version: "v1.37.2", problems: []string{"listing CRDs"}})
	got, ok := m.fresh("east", key, interval, at.Add(interval-time.Nanosecond))
	if !ok || got.version != "v1.37.2" || len(got.problems) != 1 {
		t.Fatalf("within the interval: %+v, %v", got, ok)
	}
	if _, ok := m.fresh("east", key, interval, at.Add(interval)); ok {
		t.Fatal("fresh once the interval passed")
	}
	if _, ok := m.fresh("west", key, interval, at); ok {
		t.Fatal("another cluster's check is fresh")
	}
	for _, changed := range []checkKey{
		{uid: "u2", generation: 3, sharedVersion: "17", epoch: 2},
		{uid: "u1", generation: 4, sharedVersion: "17", epoch: 2},
		{uid: "u1", generation: 3, sharedVersion: "18", epoch: 2},
		{uid: "u1", generation: 3, sharedVersion: "", epoch: 2},
		{uid: "u1", generation: 3, sharedVersion: "17", epoch: 3},
	} {
		if _, ok := m.fresh("east", changed, interval, at); ok {
			t.Fatalf("fresh for %+v, made for %+v", changed, key)
		}
	}
	m.forget("east")
	if _, ok := m.fresh("east", key, interval, at); ok {
		t.Fatal("fresh after forget")
	}
}
