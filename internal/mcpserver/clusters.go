package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// ClustersInput takes nothing: the clusters are those the user may read.
type ClustersInput struct{}

// Cluster is one member cluster as the clusters tool lists it.
type Cluster struct {
	Name string `json:"name"`
	// Ready, Message and SyncedResources come from the host's Cluster
	// object, when the user may list those.
	Ready           *bool  `json:"ready,omitempty"`
	Message         string `json:"message,omitempty"`
	Version         string `json:"version,omitempty"`
	SyncedResources *int   `json:"syncedResources,omitempty"`
}

// ClustersOutput lists the clusters, their number first.
type ClustersOutput struct {
	Count    int       `json:"count"`
	Clusters []Cluster `json:"clusters"`
	// Warnings name the clusters whose view could not be asked, left out.
	Warnings []string `json:"warnings,omitempty"`
}

func (t *tools) clusters(ctx context.Context, _ *mcp.CallToolRequest, _ ClustersInput) (*mcp.CallToolResult, ClustersOutput, error) {
	out, err := t.listClusters(ctx)
	return nil, out, toolError(err)
}

// probeConcurrency bounds the discovery requests in flight while the
// clusters a user may see are told apart.
const probeConcurrency = 8

// listClusters are the host's Clusters (or the names the server was given,
// for users who may not list those) that the user may see: those whose
// view answers them discovery, which Panorama grants to who may get the
// cluster and answers 404 to anyone else, as for a cluster that does not
// exist.
func (t *tools) listClusters(ctx context.Context) (ClustersOutput, error) {
	var list clusterv1alpha1.ClusterList
	_, err := t.views.GetJSON(ctx, viewclient.ClustersPath, nil, &list)
	var candidates []Cluster
	switch {
	case err == nil:
		for _, c := range list.Items {
			candidates = append(candidates, fromClusterObject(&c))
		}
	case apierrors.IsForbidden(err) && len(t.clusterNames) > 0:
		for _, name := range t.clusterNames {
			candidates = append(candidates, Cluster{Name: name})
		}
	case apierrors.IsForbidden(err):
		return ClustersOutput{}, fmt.Errorf("%w (without the right to list the host's Clusters, start `panorama mcp` with --clusters naming them)", toolError(err))
	default:
		return ClustersOutput{}, err
	}

	visible := make([]bool, len(candidates))
	failed := make([]error, len(candidates))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(probeConcurrency)
	for i := range candidates {
		g.Go(func() error {
			c := &candidates[i]
			_, _, err := t.views.Get(gctx, searchv1alpha1.ViewPath(c.Name)+"/api", nil, false)
			switch {
			case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
				return nil
			case err != nil:
				// One cluster's view failing leaves the others' answer.
				failed[i] = err
				return nil
			}
			visible[i] = true
			if c.Version == "" {
				var v struct {
					GitVersion string `json:"gitVersion"`
				}
				if _, err := t.views.GetJSON(gctx, searchv1alpha1.ViewPath(c.Name)+"/version", nil, &v); err == nil {
					c.Version = v.GitVersion
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return ClustersOutput{}, err
	}
	out := ClustersOutput{Clusters: []Cluster{}}
	for i, c := range candidates {
		switch {
		case visible[i]:
			out.Clusters = append(out.Clusters, c)
		case failed[i] != nil:
			out.Warnings = append(out.Warnings, fmt.Sprintf("cluster %s left out: %v", c.Name, toolError(failed[i])))
		}
	}
	slices.SortFunc(out.Clusters, func(a, b Cluster) int { return cmp.Compare(a.Name, b.Name) })
	out.Count = len(out.Clusters)
	return out, nil
}

func fromClusterObject(c *clusterv1alpha1.Cluster) Cluster {
	out := Cluster{Name: c.Name, Version: c.Status.Version, Ready: ptr(false), SyncedResources: ptr(len(c.Status.SyncResources))}
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady); cond != nil {
		*out.Ready = cond.Status == "True"
		if !*out.Ready {
			out.Message = cond.Message
		}
	}
	return out
}
