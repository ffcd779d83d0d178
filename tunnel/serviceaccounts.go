package tunnel

import (
	"context"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// ServiceAccounts accepts the tokens, for Audience, of the ServiceAccounts
// of Namespace that name the Cluster in their annotation
// clusterv1alpha1.AnnotationAgentCluster: each opens that one Cluster's
// tunnel and no other.
type ServiceAccounts struct {
	Client    kubernetes.Interface
	Namespace string
}

// Authenticate asks the host who token is (a TokenReview), then reads
// that ServiceAccount: the one the token was issued to (its UID), not
// another created since under its name.
func (a ServiceAccounts) Authenticate(ctx context.Context, token, cluster string) (string, error) {
	review, err := a.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("reviewing a token: %w", err)
	}
	// An authenticator that ignores audiences answers none: such a token
	// may be for anything.
	if !review.Status.Authenticated || !slices.Contains(review.Status.Audiences, Audience) {
		return "", apierrors.NewUnauthorized("the token is not one the host issued for " + Audience)
	}
	user := review.Status.User
	refused := apierrors.NewForbidden(ClustersResource, cluster, fmt.Errorf("%s may not open this Cluster's tunnel: only a ServiceAccount of namespace %q annotated %s=%s may", user.Username, a.Namespace, clusterv1alpha1.AnnotationAgentCluster, cluster))
	namespace, name, err := serviceaccount.SplitUsername(user.Username)
	if err != nil || namespace != a.Namespace {
		return "", refused
	}
	sa, err := a.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", refused
	case err != nil:
		return "", fmt.Errorf("reading ServiceAccount %s/%s: %w", namespace, name, err)
	case string(sa.UID) != user.UID || sa.Annotations[clusterv1alpha1.AnnotationAgentCluster] != cluster:
		return "", refused
	}
	return user.Username, nil
}
