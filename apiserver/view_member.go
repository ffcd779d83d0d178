package apiserver

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// memberView shows the objects of one cluster, or of every cluster for
// "", as their members have them: it translates nothing.
type memberView string

func (v memberView) cluster() string { return string(v) }

func (memberView) query(*storage.ListQuery, bool) error { return nil }

func (memberView) page(*storage.ListResult) error { return nil }

func (memberView) event(*watchcache.Event) (bool, error) { return true, nil }

func (memberView) count(context.Context, *storage.CountQuery, bool) (func(*storage.CountResult), error) {
	return func(*storage.CountResult) {}, nil
}

func (v memberView) object(info *apirequest.RequestInfo) (string, *apirequest.RequestInfo) {
	return string(v), info
}

func (v memberView) reviewed(a *authorizationv1.ResourceAttributes) (string, *authorizationv1.ResourceAttributes, bool) {
	return string(v), a, true
}

func (v memberView) rulesScope(namespace string) (string, string) { return string(v), namespace }
