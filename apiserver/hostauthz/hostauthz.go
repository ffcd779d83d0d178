// Package hostauthz authorizes requests as the host cluster's
// kube-apiserver would, in the order --authorization-mode names: by the
// host's RBAC, evaluated in process by kube-apiserver's own RBAC
// authorizer over informer caches of the host's Roles, ClusterRoles and
// their bindings ("RBAC"), or by asking the host, a SubjectAccessReview
// through the delegated authorizer ("Webhook").
//
// It exists because asking is slow for Panorama's reads: a tenant's read
// across clusters can need one question per cluster, and the delegated
// authorizer's client is shared by every request of the server. RBAC
// evaluated here answers as the host's does (the same code on the same
// objects), at the cost of watching the four RBAC kinds. Hosts with other
// authorizers (webhooks, ABAC) list Webhook after RBAC, so that what RBAC
// does not allow is still asked.
package hostauthz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/utils/clock"
)

// The modes, named as kube-apiserver's --authorization-mode names them.
const (
	// ModeRBAC evaluates the host's RBAC objects in process. Its allow is
	// final; it never denies, so a later mode decides what it does not
	// allow.
	ModeRBAC = "RBAC"
	// ModeWebhook asks the host by SubjectAccessReview, through the
	// delegated authorizer and its decision cache.
	ModeWebhook = "Webhook"
)

var modes = []string{ModeRBAC, ModeWebhook}

// Options choose the modes.
type Options struct {
	// Modes are asked in order; the first that allows (or denies)
	// decides, and a request no mode allows is refused.
	Modes []string
	// RBACStaleAfter is how long RBAC decides from caches that have not
	// heard from the host (freshness).
	RBACStaleAfter time.Duration

	// clock times RBACStaleAfter; nil is the real one.
	clock clock.PassiveClock
}

// NewOptions returns the default: RBAC alone, right for hosts that
// authorize by RBAC alone (kubeadm's and most distributions' hosts, whose
// Node authorizer grants nothing of Panorama's group). Two minutes are
// twice the period of a kube-apiserver's watch bookmarks, and past a
// host's restart and client-go's backoff between retries (half a minute
// at most).
func NewOptions() Options { return Options{Modes: []string{ModeRBAC}, RBACStaleAfter: 2 * time.Minute} }

// AddFlags binds --authorization-mode.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Modes, "authorization-mode", o.Modes, fmt.Sprintf(
		"Ordered list of the ways requests are authorized, of %s: %s evaluates the host's RBAC objects in process "+
			"(needs list and watch of roles, clusterroles, rolebindings and clusterrolebindings on the host); "+
			"%s asks the host by SubjectAccessReview (--authorization-kubeconfig). "+
			"Use %s,%s when the host has authorizers besides RBAC that only allow, and %s alone when one may deny what RBAC allows: an allow of %s is final.",
		strings.Join(modes, ", "), ModeRBAC, ModeWebhook, ModeRBAC, ModeWebhook, ModeWebhook, ModeRBAC))
	fs.DurationVar(&o.RBACStaleAfter, "authorization-rbac-stale-after", o.RBACStaleAfter,
		"How long "+ModeRBAC+" goes on deciding from its caches once one of them has heard nothing from the host "+
			"(no list returned, no watch event nor bookmark, which kube-apiserver sends about every minute); "+
			"past it, "+ModeRBAC+" allows nothing (a later mode decides) and readiness fails until the host is heard again.")
}

// Validate reports modes unknown, repeated or missing, and a staleness
// bound that is not positive.
func (o *Options) Validate() []error {
	var errs []error
	if len(o.Modes) == 0 {
		errs = append(errs, fmt.Errorf("--authorization-mode: at least one of %s", strings.Join(modes, ", ")))
	}
	if o.RBACStaleAfter <= 0 {
		errs = append(errs, fmt.Errorf("--authorization-rbac-stale-after: %v, want a positive duration", o.RBACStaleAfter))
	}
	for i, m := range o.Modes {
		switch {
		case !slices.Contains(modes, m):
			errs = append(errs, fmt.Errorf("--authorization-mode: unknown mode %q, want one of %s", m, strings.Join(modes, ", ")))
		case slices.Contains(o.Modes[:i], m):
			errs = append(errs, fmt.Errorf("--authorization-mode: mode %q listed twice", m))
		}
	}
	return errs
}

// New composes the modes as kube-apiserver does: the privileged groups
// and always-allowed paths of delegation first, so that no mode lacks
// them (the delegated authorizer repeats them, answering alike), then
// each mode, after validating o. RBAC reads
// the host's RBAC objects from host's informers, which the caller starts;
// webhook is the delegated authorizer. The readiness checks pass once
// those informers have synced, and while they hear from the host; until
// then, and otherwise, RBAC allows nothing.
func (o Options) New(host informers.SharedInformerFactory, webhook authorizer.Authorizer, delegation *genericoptions.DelegatingAuthorizationOptions) (authorizer.Authorizer, []healthz.HealthChecker, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	authorizers := []union.NamedAuthorizer{{
		AuthorizerName: "privileged-groups", Authorizer: authorizerfactory.NewPrivilegedGroups(delegation.AlwaysAllowGroups...),
	}}
	paths, err := path.NewAuthorizer(delegation.AlwaysAllowPaths)
	if err != nil {
		return nil, nil, err
	}
	authorizers = append(authorizers, union.NamedAuthorizer{AuthorizerName: "always-allow-paths", Authorizer: paths})
	var ready []healthz.HealthChecker
	for _, m := range o.Modes {
		switch m {
		case ModeRBAC:
			r, err := NewRBAC(host, o.RBACStaleAfter, o.clock)
			if err != nil {
				return nil, nil, err
			}
			ready = append(ready, healthz.NamedCheck("host-rbac", r.Synced))
			authorizers = append(authorizers, union.NamedAuthorizer{AuthorizerName: "host-rbac", Authorizer: r})
		case ModeWebhook:
			authorizers = append(authorizers, union.NamedAuthorizer{AuthorizerName: "host-webhook", Authorizer: webhook})
		}
	}
	composed, err := union.New(authorizers...)
	return composed, ready, err
}

// RBAC is kube-apiserver's RBAC authorizer over informer caches of the
// host's RBAC objects. Aggregated ClusterRoles need nothing of it: the
// host's controller manager writes their rules into them.
type RBAC struct {
	rbac      *rbac.RBACAuthorizer
	synced    []cache.InformerSynced
	freshness *freshness
}

// errNotSynced is the answer of RBAC before its caches are filled: a
// partial cache could only allow less than the host, so it allows nothing.
var errNotSynced = errors.New("the host's RBAC objects are not listed yet")

// NewRBAC registers informers of the four RBAC kinds with host, which
// must be started after, and returns the authorizer reading them. Once a
// kind's cache has not heard from the host for staleAfter, timed by c
// (nil: the real clock), it allows nothing until it hears again
// (freshness).
func NewRBAC(host informers.SharedInformerFactory, staleAfter time.Duration, c clock.PassiveClock) (*RBAC, error) {
	if c == nil {
		c = clock.RealClock{}
	}
	f := newFreshness(staleAfter, c)
	inf, err := f.rbacInformers(host)
	if err != nil {
		return nil, err
	}
	return &RBAC{
		rbac: rbac.New(
			&rbac.RoleGetter{Lister: rbaclisters.NewRoleLister(inf.roles.GetIndexer())},
			&rbac.RoleBindingLister{Lister: rbaclisters.NewRoleBindingLister(inf.roleBindings.GetIndexer())},
			&rbac.ClusterRoleGetter{Lister: rbaclisters.NewClusterRoleLister(inf.clusterRoles.GetIndexer())},
			&rbac.ClusterRoleBindingLister{Lister: rbaclisters.NewClusterRoleBindingLister(inf.clusterRoleBindings.GetIndexer())},
		),
		synced:    inf.synced(),
		freshness: f,
	}, nil
}

// Synced fails until every cache has synced, and while one is stale: a
// readiness check.
func (r *RBAC) Synced(*http.Request) error {
	for _, synced := range r.synced {
		if !synced() {
			return errNotSynced
		}
	}
	return r.freshness.stale()
}

// Authorize allows what the host's RBAC allows, and has no opinion on
// anything else, nor before the caches have synced or while one is stale.
func (r *RBAC) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if err := r.Synced(nil); err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	return r.rbac.Authorize(ctx, a)
}

// ConditionsAwareAuthorize is Authorize: RBAC has no conditions.
func (r *RBAC) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, a))
}

// EvaluateConditions fails closed, as RBAC's own.
func (r *RBAC) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return r.rbac.EvaluateConditions(ctx, d, data)
}
