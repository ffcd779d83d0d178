// Package mcpserver is an MCP server (Model Context Protocol, with the
// official Go SDK) over Panorama's views, for AI agents: tools to list the
// clusters, search, count, get, read an object's history and describe it,
// and the cluster list as a resource.
//
// It is a client of the views through the host's API with the user's own
// kubeconfig credentials, never of the database: the host authenticates
// every request and Panorama authorizes it as kubectl's, so an agent reads
// exactly what its user may. Answers are compact by default (kubectl get's
// columns, the fields asked for, pages, counts before lists), since an
// agent pays for every token it reads.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/internal/viewclient"
)

// ClustersURI is the resource of the cluster list.
const ClustersURI = "panorama://clusters"

// Options are what the server needs beside the host's config.
type Options struct {
	// Clusters are the names of the clusters to offer when the user may
	// not list the host's Clusters (as `panorama kubeconfig --clusters`).
	Clusters []string
}

// New is the MCP server over the views of the host that cfg reaches, with
// cfg's credentials.
func New(host *rest.Config, opts Options) (*mcp.Server, error) {
	v, err := viewclient.New(host)
	if err != nil {
		return nil, err
	}
	t := &tools{views: v, clusterNames: opts.Clusters}
	s := mcp.NewServer(&mcp.Implementation{Name: "panorama", Title: "Panorama", Version: moduleVersion()}, &mcp.ServerOptions{
		Instructions: "Panorama serves the objects of many Kubernetes clusters as one. Start with `clusters`; " +
			"`count` before `search` when a list may be long; `search` answers kubectl get's columns unless `fields` names JSON paths; " +
			"`get`, `describe` and `history` read one object of one cluster.",
	})
	// A panic in a handler (a bug, or a library's, met by some input) fails
	// that call, not the server and every session it holds.
	s.AddReceivingMiddleware(recovering, bounded)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "clusters", Annotations: readOnly,
		Description: "The member clusters you may read: name, Ready, Kubernetes version, number of synced resources."}, t.clusters)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Annotations: readOnly,
		Description: "List objects across clusters with every search parameter of Panorama. Answers the total first, then one compact row per object " +
			"(cluster, namespace, name and kubectl get's columns), or the JSON paths named in `fields`; page with `limit` and `continue`."}, t.search)
	mcp.AddTool(s, &mcp.Tool{Name: "count", Annotations: readOnly,
		Description: "Count objects grouped by cluster, namespace, label:<key> or field:<indexed field>, under the same filters as search, largest groups first."}, t.count)
	mcp.AddTool(s, &mcp.Tool{Name: "get", Annotations: readOnly,
		Description: "One object of one cluster, all of it (without managedFields) or only `fields`; `asOf` reads it as it was at a revision or time."}, t.get)
	mcp.AddTool(s, &mcp.Tool{Name: "history", Annotations: readOnly,
		Description: "The versions of one object (the last 50, or `limit`; a week is kept): revision, time, type and the paths each changed; `from` and `to` revisions give the diff between two versions as a JSON merge patch."}, t.history)
	mcp.AddTool(s, &mcp.Tool{Name: "describe", Annotations: readOnly,
		Description: "A short describe of one object: kubectl get's columns, labels, status conditions, its owner chain and its recent Events."}, t.describe)
	s.AddResource(&mcp.Resource{URI: ClustersURI, Name: "clusters", MIMEType: "application/json",
		Description: "The member clusters you may read, as the clusters tool answers."}, t.clustersResource)
	return s, nil
}

// tools are the handlers of the server's tools.
type tools struct {
	views        *viewclient.Client
	clusterNames []string
}

func (t *tools) clustersResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	out, err := t.listClusters(ctx)
	if err != nil {
		return nil, toolError(err)
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ClustersURI, MIMEType: "application/json", Text: string(body)}}}, nil
}

// toolError is err as an agent reads it: a Kubernetes Status by its code,
// reason and message ("403 Forbidden: ..."), which the SDK turns into a
// tool error, not a failure of the protocol.
func toolError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return fmt.Errorf("%d %s: %s", s.Code, http.StatusText(int(s.Code)), s.Message)
	}
	return err
}

// recovering turns a handler's panic into the error of its call.
func recovering(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (result mcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				result, err = nil, fmt.Errorf("%s failed: %v", method, r)
			}
		}()
		return next(ctx, method, req)
	}
}

// maxAnswerBytes bounds a tool's answer, in JSON: an agent pays for every
// token it reads, and one object (a CRD, a ConfigMap near 1 MiB) or a
// week of an object's versions with their patches would fill its context.
const maxAnswerBytes = 256 << 10

// bounded turns a tool's answer over maxAnswerBytes into a tool error that
// says how to ask for less, so that the agent can.
func bounded(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		result, err := next(ctx, method, req)
		answer, ok := result.(*mcp.CallToolResult)
		if err != nil || !ok || answer.IsError {
			return result, err
		}
		body, err := json.Marshal(answer)
		if err != nil {
			return nil, err
		}
		if len(body) <= maxAnswerBytes {
			return result, nil
		}
		tooLarge := &mcp.CallToolResult{}
		tooLarge.SetError(fmt.Errorf("the answer is %d KiB, over the %d KiB an answer may hold: ask for less "+
			"(fields, a smaller limit, no patches)", len(body)>>10, maxAnswerBytes>>10))
		return tooLarge, nil
	}
}

func ptr[T any](v T) *T { return &v }

// moduleVersion is Panorama's version as the Go toolchain recorded it
// ("(devel)" for a build from a work tree), which MCP clients show.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return ""
}
