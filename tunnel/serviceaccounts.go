package tunnel

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// ServiceAccounts accepts the tokens, for Audience, of the ServiceAccounts
// of its namespace that name the Cluster in their annotation
// clusterv1alpha1.AnnotationAgentCluster: each opens that one Cluster's
// tunnel and no other.
//
// Whoever reaches the endpoint may send it tokens, each of which the host
// would be asked about. So a token that cannot be one the host issued
// for Audience to a ServiceAccount of the namespace is refused unread by
// the host (screen); the host is asked about the rest at a bounded rate
// per bucket of Clusters, so that a flood of tokens naming one Cluster's
// agent delays that Cluster's and few others'; and a token accepted lately
// is accepted again without asking, so that an agent that reconnects
// does so whatever else reaches the endpoint.
type ServiceAccounts struct {
	client    kubernetes.Interface
	namespace string
	accepted  *cache.LRUExpireCache
	reviews   [reviewBuckets]flowcontrol.RateLimiter
}

const (
	// reviewBuckets, each reviewsPerSecond at most after a burst of
	// reviewBurst: a hundred agents reconnecting at once after a hub
	// restart pass, and the host answers at most 32 TokenReviews a
	// second, whatever reaches the endpoint.
	reviewBuckets    = 64
	reviewsPerSecond = 0.5
	reviewBurst      = 5
	// acceptedFor is how long an accepted token opens its tunnel without
	// the host being asked again: a ServiceAccount deleted or bound to
	// another Cluster stops opening it that much later at most.
	acceptedFor    = 10 * time.Minute
	acceptedTokens = 4096
)

// NewServiceAccounts returns the authenticator of the agents whose
// ServiceAccounts are in namespace of the host client reaches.
func NewServiceAccounts(client kubernetes.Interface, namespace string) *ServiceAccounts {
	a := &ServiceAccounts{client: client, namespace: namespace, accepted: cache.NewLRUExpireCache(acceptedTokens)}
	for i := range a.reviews {
		a.reviews[i] = flowcontrol.NewTokenBucketRateLimiter(reviewsPerSecond, reviewBurst)
	}
	return a
}

// signatureAlgorithms are those a kube-apiserver signs tokens with.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512}

// Authenticate asks the host who token is (a TokenReview), then reads
// that ServiceAccount: the one the token was issued to (its UID), not
// another created since under its name.
func (a *ServiceAccounts) Authenticate(ctx context.Context, token, cluster string) (string, error) {
	key := sha256.Sum256([]byte(cluster + "\x00" + token))
	if who, ok := a.accepted.Get(key); ok {
		return who.(string), nil
	}
	expiry, err := a.screen(token)
	if err != nil {
		return "", err
	}
	bucket := fnv.New32a()
	bucket.Write([]byte(cluster))
	if !a.reviews[bucket.Sum32()%reviewBuckets].TryAccept() {
		return "", apierrors.NewTooManyRequests("too many tunnels of this Cluster are being authenticated: connect again", 1)
	}
	review, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("reviewing a token: %w", err)
	}
	// An authenticator that ignores audiences answers none: such a token
	// may be for anything.
	if !review.Status.Authenticated || !slices.Contains(review.Status.Audiences, Audience) {
		return "", unauthorized
	}
	user := review.Status.User
	refused := apierrors.NewForbidden(ClustersResource, cluster, fmt.Errorf("%s may not open this Cluster's tunnel: only a ServiceAccount of namespace %q annotated %s=%s may", user.Username, a.namespace, clusterv1alpha1.AnnotationAgentCluster, cluster))
	namespace, name, err := serviceaccount.SplitUsername(user.Username)
	if err != nil || namespace != a.namespace {
		return "", refused
	}
	sa, err := a.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", refused
	case err != nil:
		return "", fmt.Errorf("reading ServiceAccount %s/%s: %w", namespace, name, err)
	case string(sa.UID) != user.UID || sa.Annotations[clusterv1alpha1.AnnotationAgentCluster] != cluster:
		return "", refused
	}
	if ttl := min(acceptedFor, time.Until(expiry)); ttl > 0 {
		a.accepted.Add(key, user.Username, ttl)
	}
	return user.Username, nil
}

var unauthorized = apierrors.NewUnauthorized("the token is not one the host issued for " + Audience + " alone")

// screen refuses, without asking the host, a token that cannot be one it
// issued for Audience alone to a ServiceAccount of the namespace: not a
// signed JWT, for other audiences too, expired or without an expiry (the
// host's bound tokens all have one), or of another subject. Its signature
// is the host's to check. It returns the token's expiry.
func (a *ServiceAccounts) screen(token string) (time.Time, error) {
	parsed, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return time.Time{}, unauthorized
	}
	var claims jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&claims); err != nil {
		return time.Time{}, unauthorized
	}
	namespace, _, err := serviceaccount.SplitUsername(claims.Subject)
	switch {
	case len(claims.Audience) != 1 || claims.Audience[0] != Audience,
		claims.Expiry == nil || !claims.Expiry.Time().After(time.Now()),
		err != nil || namespace != a.namespace:
		return time.Time{}, unauthorized
	}
	return claims.Expiry.Time(), nil
}
